# Alternative answers to exercise 08: the same dynamic program memoised in a dict, the advance
# tried from the farthest j down, and the schedule following the LAST best case on ties (<=).
# %% q1_min_time
def min_time(sizes, costs, budget):
    l = len(costs)
    y = lambda i: sizes[i] if i <= l else 0
    memo = {}

    def part(s, e, k, m):
        key = (s, e, k, m)
        if key in memo:
            return memo[key]
        if m < sizes[s] + y(e + 1):
            best = math.inf
        elif s == e or k == e + 1:
            best = 0.0
        else:
            best = costs[s] + part(s + 1, e, k, m) if k > s else math.inf
            for j in range(e, s, -1):
                if sizes[s] + max(sizes[s + 1:j + 1]) + y(e + 1) > m:
                    continue
                adv = sum(costs[s:j])
                for k2 in range(max(j, k), e + 1):
                    best = min(best, adv + part(j, e, k2, m - sizes[s]) + part(s, k2 - 1, k, m))
        memo[key] = best
        return best

    return part(0, l, 0, budget)
# %% q2_schedule
def hetero_schedule(sizes, costs, budget):
    l = len(costs)
    y = lambda i: sizes[i] if i <= l else 0
    memo = {}

    def part(s, e, k, m):
        key = (s, e, k, m)
        if key in memo:
            return memo[key]
        if m < sizes[s] + y(e + 1):
            res = (math.inf, None)
        elif s == e or k == e + 1:
            res = (0.0, None)
        else:
            res = (costs[s] + part(s + 1, e, k, m)[0], ("overwrite",)) if k > s else (math.inf, None)
            for j in range(s + 1, e + 1):
                if sizes[s] + max(sizes[s + 1:j + 1]) + y(e + 1) > m:
                    break
                adv = sum(costs[s:j])
                for k2 in range(max(j, k), e + 1):
                    t = adv + part(j, e, k2, m - sizes[s])[0] + part(s, k2 - 1, k, m)[0]
                    if t <= res[0] and t < math.inf:
                        res = (t, ("advance", j, k2))
        memo[key] = res
        return res

    if part(0, l, 0, budget)[0] == math.inf:
        raise ml.BudgetError("no schedule of this chain fits the budget")
    out = []

    def emit(s, e, k, m):
        if k == e + 1:
            out.append(ck.Free(f"x{s}"))
        elif s == e:
            out.append(ck.Backward(s))
        else:
            case = part(s, e, k, m)[1]
            if case[0] == "overwrite":
                out.append(ck.Forward(s))
                emit(s + 1, e, k, m)
            else:
                _, j, k2 = case
                out.append(ck.Forward(s, keep=True))
                out.extend(ck.Forward(q) for q in range(s + 1, j))
                emit(j, e, k2, m - sizes[s])
                emit(s, k2 - 1, k, m)

    emit(0, l, 0, budget)
    return out
