# Alternative answers to exercise 11: held from each task's outgoing edges, ready tasks from a
# count of the predecessors not done, and the search over processed sets kept as bit masks.
# %% q1_held
def held(graph, done):
    return sum(graph.size[(u, v)] for u in done for v in graph.succ[u] if v not in done)
# %% q2_ready
def ready(graph, done):
    out = []
    for t in graph.tasks:
        if t in done:
            continue
        if sum(1 for u in graph.pred[t] if u not in done) == 0:
            out.append(t)
    return out
# %% q3_min_peak
def min_peak(graph):
    tasks = list(graph.tasks)
    bit = {t: 1 << i for i, t in enumerate(tasks)}
    full = (1 << len(tasks)) - 1
    best = {0: (0.0, [])}
    for _ in tasks:
        nxt = {}
        for mask in sorted(best):
            pk, order = best[mask]
            done = {t for t in tasks if mask & bit[t]}
            base = held(graph, done)
            for t in ready(graph, done):
                need = max(pk, base + sum(graph.size[(t, v)] for v in graph.succ[t]) + graph.memory[t])
                m2 = mask | bit[t]
                if m2 not in nxt or need < nxt[m2][0]:
                    nxt[m2] = (need, order + [t])
        best = nxt
    return best[full]
