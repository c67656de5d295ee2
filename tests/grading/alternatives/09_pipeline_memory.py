# Alternative answers to exercise 09: each layer assigned to its stage by a scan of the cuts, and
# the bubble computed stage by stage (every micro-batch of a stage, then the next stage).
# %% q1_memory
def gpipe_memory(params, acts, inputs, S, M, batch, remat=False):
    L = len(params)
    cuts = [round(k * L / S) for k in range(S + 1)]
    weights, act, first = [0] * S, [0.0] * S, [None] * S
    for i in range(L):
        k = max(s for s in range(S) if cuts[s] <= i)
        weights[k] += 16 * params[i]
        act[k] += acts[i] * batch / M
        if first[k] is None:
            first[k] = i
    out = []
    for k in range(S):
        if remat:
            out.append(weights[k] + M * inputs[first[k]] * batch / M + act[k])
        else:
            out.append(weights[k] + M * act[k])
    return out
# %% q2_bubble
def pipeline_bubble(fwd, bwd, M):
    S = len(fwd)
    F = {}
    for s in range(S):
        for m in range(M):
            F[s, m] = max(F.get((s, m - 1), 0.0), F.get((s - 1, m), 0.0)) + fwd[s]
    B = {}
    for s in reversed(range(S)):
        for m in range(M):
            ready = B[s, m - 1] if m else F[s, M - 1]
            B[s, m] = max(ready, B.get((s + 1, m), 0.0)) + bwd[s]
    T = B[0, M - 1]
    return 1.0 - M * (sum(fwd) + sum(bwd)) / (S * T)
