# Alternative answers to exercise 05: the saved values found from the readers' side, a greedy
# order (the ready node that adds the fewest bytes), the bytes split by a first pass over the tags.
# %% q1_saved
def saved_for_backward(outputs, loss):
    forward = ml.topo_order(loss)
    fwd = {id(n) for n in forward}
    backward = [n for n in ml.topo_order(outputs) if id(n) not in fwd]
    read = {id(x) for n in backward for x in n.inputs}
    return [n.name for n in forward if n.op.computes and id(n) in read]
# %% q2_order
def training_order(outputs):
    # greedy: run next, among the ready nodes, the one that adds the fewest bytes (its output less
    # the inputs it is the last to read); ties: the earliest found
    nodes, seen, stack = [], set(), list(outputs)
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            nodes.append(n)
            stack.extend(n.inputs)
    readers = {id(n): set() for n in nodes}
    for n in nodes:
        for x in n.inputs:
            readers[id(x)].add(id(n))
    outs = {id(o) for o in outputs}
    done, order = set(), []
    while len(order) < len(nodes):
        ready = [n for n in nodes if id(n) not in done and all(id(x) in done for x in n.inputs)]

        def cost(n):
            freed = sum(x.nbytes for x in {id(x): x for x in n.inputs}.values()
                        if x.op.computes and id(x) not in outs and readers[id(x)] - done <= {id(n)})
            return (n.nbytes if n.op.computes else 0) - freed

        best = min(ready, key=cost)
        done.add(id(best))
        order.append(best)
    return order
# %% q3_explain
def explain_bytes(plan, loss):
    fwd = {id(n) for n in ml.topo_order(loss)}
    opener, shares = {}, {}
    for n in plan.order:
        if n in plan.storage:
            t = plan.storage[n]
            opener.setdefault(t, n)
            shares[t] = shares.get(t, []) + [n.name]
    by_pass = {"forward": 0, "backward": 0}
    for t, n in opener.items():
        by_pass["forward" if id(n) in fwd else "backward"] += plan.storage_bytes[t]
    return shares, by_pass
