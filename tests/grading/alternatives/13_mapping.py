# Alternative answers to exercise 13: subtree work summed down a breadth-first order read
# backwards, shares handed out with an explicit stack, the makespan summed node by node, and the
# decision and the ends found by sorting.
# %% q1_subtree_work
def subtree_work(tree, w):
    order, k = [tree.root], 0
    while k < len(order):
        order.extend(tree.children[order[k]])
        k += 1
    W = {v: float(w[v]) for v in order}
    for v in reversed(order):
        W[v] += sum(W[c] for c in tree.children[v])
    return [W[v] for v in range(tree.n)]
# %% q2_proportional_shares
def proportional_shares(tree, w, P):
    W = subtree_work(tree, w)
    p = [0.0] * tree.n
    p[tree.root] = float(P)
    stack = [tree.root]
    while stack:
        v = stack.pop()
        kids = tree.children[v]
        tot = sum(W[c] for c in kids)
        for c in kids:
            p[c] = p[v] * W[c] / tot if tot > 0 else p[v] / len(kids)
            stack.append(c)
    return p
# %% q3_all_to_all_makespan
def all_to_all_makespan(w, P, alpha=1.0):
    speed = P ** alpha
    return sum(x / speed for x in w)
# %% q4_memory_aware
def memory_aware_decision(opt, f, widths, B):
    share = [B * wd / sum(widths) for wd in widths]
    if all(o <= s for o, s in zip(opt, share)):
        return "parallel", None
    order = sorted(range(len(opt)), key=lambda i: (-(opt[i] - f[i]), i))
    before = [sum(f[j] for j in order[:k]) for k in range(len(order))]
    if all(before[k] + opt[i] <= B for k, i in enumerate(order)):
        return "serialized", order
    return "sequential", None
# %% q5_tradeoff_ends
def tradeoff_ends(points):
    by_memory = sorted(points, key=lambda q: (q[1], q[0]))
    by_time = sorted(points)
    return tuple(by_memory[0]), tuple(by_time[0])
