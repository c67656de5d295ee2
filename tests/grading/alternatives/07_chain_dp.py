# Alternative answers to exercise 07: the recursion filled bottom-up in tables (no lru_cache), and
# a schedule that takes the LARGEST best advance j on ties, emitted with an explicit stack.
# %% q1_min_forwards
def min_forwards(l, M):
    INF = math.inf
    adj = [[INF] * (M + 1) for _ in range(l + 1)]      # adj[n][m]: with the adjoint held
    top = [[INF] * (M + 1) for _ in range(l + 1)]      # top[n][m]: nothing but x held
    for m in range(M + 1):
        adj[0][m] = 0 if m >= 2 else INF
        top[0][m] = 0 if m >= 1 else INF
    for n in range(1, l + 1):
        for m in range(M + 1):
            if m >= 3:
                adj[n][m] = min(j + adj[n - j][m - 1] + adj[j - 1][m] for j in range(1, n + 1))
            if m >= 2:
                top[n][m] = min(j + top[n - j][m - 1] + adj[j - 1][m] for j in range(1, n + 1))
    return top[l][M] if M >= 0 else INF
# %% q2_schedule
def optimal_schedule(l, M):
    memo = {}

    def cost(n, m, adjoint):
        key = (n, m, adjoint)
        if key not in memo:
            if n == 0:
                memo[key] = 0 if m >= 1 + adjoint else math.inf
            elif m < 2 + adjoint:
                memo[key] = math.inf
            else:
                memo[key] = min(j + cost(n - j, m - 1, adjoint) + cost(j - 1, m, True)
                                for j in range(1, n + 1))
        return memo[key]

    if l > 0:                                   # fill the table bottom-up: no deep recursion
        for n in range(l + 1):
            for m in range(M + 1):
                cost(n, m, True)
    if cost(l, M, False) == math.inf:
        raise ml.BudgetError(f"{M} slots cannot reverse {l} steps")
    actions, todo = [], [(0, l, M, False)]
    while todo:
        s, n, m, adjoint = todo.pop()
        if n == 0:
            actions.append(ck.Backward(s))
            continue
        best = cost(n, m, adjoint)
        j = max(j for j in range(1, n + 1)
                if j + cost(n - j, m - 1, adjoint) + cost(j - 1, m, True) == best)
        actions.append(ck.Forward(s, keep=True))
        actions += [ck.Forward(q) for q in range(s + 1, s + j)]
        todo.append((s, j - 1, m, True))            # the left part runs after the right one
        todo.append((s + j, n - j, m - 1, adjoint))
    return actions
