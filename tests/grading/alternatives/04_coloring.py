# Alternative answers to exercise 04: ties broken the other way (>=: the last best input and the
# last best end win), so on p.23's graph the first path is A[5], A[6], A[7], A[8]; a colouring
# loop that walks the path back to front; implicit dependencies with ancestor sets keyed by id.
# %% q1_longest_path
def longest_path(order, reward):
    best, prev = {}, {}
    end = None
    for n in order:
        p = None
        for x in n.inputs:
            if p is None or best[id(x)] >= best[id(p)]:
                p = x
        best[id(n)] = (best[id(p)] if p is not None else 0) + reward[n]
        prev[id(n)] = p
        if end is None or best[id(n)] >= best[id(end)]:
            end = n
    if end is None:
        return 0, []
    path = [end]
    while prev[id(path[-1])] is not None:
        path.append(prev[id(path[-1])])
    return best[id(end)], path[::-1]
# %% q2_color_nodes
def color_nodes(order, colors):
    reward = {n: int(n.op.computes) for n in order}
    color = {n: colors - 1 for n in order if n.op.computes}
    for c in range(colors - 1):
        total, path = longest_path(order, reward)
        if not total:
            break
        for n in reversed(path):
            if reward[n] == 1:
                color[n] = c
                reward[n] = 0
    return color
# %% q3_implicit
def implicit_dependencies(plan):
    order = list(plan.order)
    anc = {}
    for n in order:
        anc[id(n)] = set()
        for x in n.inputs:
            anc[id(n)] |= anc[id(x)] | {id(x)}
    holder, edges = {}, set()
    for v in order:
        if v not in plan.storage:
            continue
        u = holder.get(plan.storage[v])
        holder[plan.storage[v]] = v
        if u is None:
            continue
        cand = {id(u): u}
        for r in order:
            if any(x is u for x in r.inputs):
                cand[id(r)] = r
        keep = [a for a in cand.values() if a is not v and id(a) not in anc[id(v)]]
        for a in keep:
            if all(id(a) not in anc[id(b)] for b in keep if b is not a):
                edges.add((a, v))
    return edges
