# Alternative answers to exercise 03: counts with collections.Counter, a box kept as a dict of
# free tags by size with the LAST equal-size tag taken on a tie, live bytes by a sweep of events.
# %% q1_refcounts
from collections import Counter

def reference_counts(order):
    return dict(Counter(x for n in order for x in dict.fromkeys(n.inputs)))
# %% q2_plan_tags
def plan_tags(outputs, order, inplace=True, share=True):
    outs = {id(o) for o in outputs}
    ref = {id(x): c for x, c in reference_counts(order).items()}
    storage, sbytes, actions, free = {}, {}, [], {}      # free: tag -> its size
    for n in order:
        if not n.op.computes:
            continue
        tag = None
        if inplace:
            for i in n.op.inplace(n):
                x = n.inputs[i]
                if x in storage and ref[id(x)] == 1 and id(x) not in outs and x.nbytes == n.nbytes:
                    tag, act = storage[x], "inplace"
                    break
        if tag is None and share:
            fits = sorted((size, -t) for t, size in free.items() if size >= n.nbytes)
            if fits:
                best = fits[0][0]
                tag = max(t for t, size in free.items() if size == best)   # ties: the newest tag
                del free[tag]
                act = "reuse"
        if tag is None:
            tag, act = len(sbytes), "new"
            sbytes[tag] = n.nbytes
        storage[n] = tag
        actions.append((n, act))
        for x in {id(x): x for x in n.inputs}.values():
            ref[id(x)] -= 1
            if ref[id(x)] == 0 and x in storage and id(x) not in outs and storage[x] != tag:
                free[storage[x]] = sbytes[storage[x]]
    return storage, sbytes, actions
# %% q3_live_bytes
def live_bytes(outputs, order):
    pos = {id(n): i for i, n in enumerate(order)}
    end = {}
    for i, n in enumerate(order):
        if n.op.computes:
            end.setdefault(id(n), i)
        for x in n.inputs:
            if x.op.computes:
                end[id(x)] = i
    for o in outputs:
        end[id(o)] = len(order)
    delta = [0] * (len(order) + 2)
    for n in order:
        if n.op.computes:
            delta[pos[id(n)]] += n.nbytes
            delta[end[id(n)] + 1] -= n.nbytes
    best = now = 0
    for d in delta:
        now += d
        best = max(best, now)
    return best
