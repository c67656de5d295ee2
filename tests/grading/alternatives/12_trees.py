# Alternative answers to exercise 12: the subtree peaks in the reverse of a breadth-first order
# (not tree.bottom_up), Liu's order with ties the other way round, and the post-order as the
# reverse of a pre-order that visits the children last to first.
# %% q1_postorder_peak
def _top_down(tree):
    order, k = [tree.root], 0
    while k < len(order):
        order.extend(tree.children[order[k]])
        k += 1
    return order

def postorder_peak(tree, children):
    P = {}
    for v in reversed(_top_down(tree)):
        before, peak = 0.0, 0.0
        for c in children[v]:
            peak = max(peak, before + P[c])
            before += tree.f[c]
        P[v] = max(peak, before + tree.m[v] + tree.f[v])
    return P[tree.root]
# %% q2_liu_children
def liu_children(tree):
    P, out = {}, [None] * tree.n
    for v in reversed(_top_down(tree)):
        kids = sorted(reversed(tree.children[v]), key=lambda c: tree.f[c] - P[c])
        out[v] = list(kids)
        before, peak = 0.0, 0.0
        for c in kids:
            peak = max(peak, before + P[c])
            before += tree.f[c]
        P[v] = max(peak, before + tree.m[v] + tree.f[v])
    return out
# %% q3_postorder_sequence
def postorder_sequence(tree, children):
    out, stack = [], [tree.root]
    while stack:
        v = stack.pop()
        out.append(v)
        stack.extend(children[v])
    return out[::-1]
