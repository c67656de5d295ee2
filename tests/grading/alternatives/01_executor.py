# Alternative answers to exercise 01: Kahn's algorithm (in-degrees) instead of a depth-first
# search, operands in the other order, the sigmoid's derivative written as s - s*s.
# %% q1_topo_sort
def topo_sort(outputs):
    seen, stack = {}, list(outputs)
    while stack:                                   # every node the outputs need
        n = stack.pop()
        if id(n) not in seen:
            seen[id(n)] = n
            stack.extend(n.inputs)
    waiting = {i: len({id(x) for x in n.inputs}) for i, n in seen.items()}
    readers = {i: [] for i in seen}
    for i, n in seen.items():
        for x in {id(x): x for x in n.inputs}.values():
            readers[id(x)].append(n)
    ready = [n for i, n in seen.items() if waiting[i] == 0]
    order = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for r in readers[id(n)]:
            waiting[id(r)] -= 1
            if waiting[id(r)] == 0:
                ready.append(r)
    return order
# %% q2_run_naive
def run_naive(outputs, feed):
    values, temp = {}, 0
    for node in topo_sort(outputs):
        if node.op is ml.PLACEHOLDER:
            values[id(node)] = feed[node]
        elif node.op is ml.CONSTANT:
            values[id(node)] = node.value
        else:
            buf = np.empty(node.shape, node.dtype)
            temp += buf.nbytes
            node.op.compute(node, [values[id(x)] for x in node.inputs], buf)
            values[id(node)] = buf
    return [values[id(o)] for o in outputs], temp
# %% q3_mul_gradient
def mul_gradient(node, grad):
    a, b = node.inputs
    return [b * grad, a * grad]
# %% q4_sigmoid_gradient
def sigmoid_gradient(node, grad):
    return [(node - node * node) * grad]
