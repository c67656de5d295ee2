# Alternative answers to exercise 10: lifetimes from a backward scan, the kept values by a set
# comprehension, and free tags kept in FIFO queues (the oldest free tag of a key first).
# %% q1_lifetimes
def lifetimes(order, outputs):
    out = {id(o) for o in outputs}
    last = {}
    for i in range(len(order) - 1, -1, -1):
        for x in order[i].inputs:
            last.setdefault(id(x), i)
    return {n: (i, len(order) if id(n) in out else last.get(id(n), i))
            for i, n in enumerate(order) if n.op.computes}
# %% q2_backward
def kept_for_backward(loss, order):
    fwd = {id(n) for n in ml.topo_order(loss)}
    return {x for n in order if id(n) not in fwd for x in n.inputs
            if id(x) in fwd and decoder_replica(x)}
# %% q3_plan
from collections import deque

def horizontal_plan(outputs, order):
    life = lifetimes(order, outputs)
    outs = {id(o) for o in outputs}
    storage, storage_bytes, free = {}, {}, {}

    def key(n):
        return n.scope.backward, n.scope.role, n.nbytes

    for i, n in enumerate(order):
        if not n.op.computes:
            continue
        queue = free.get(key(n)) if decoder_replica(n) else None
        if queue:
            storage[n] = queue.popleft()
        else:
            storage[n] = len(storage_bytes)
            storage_bytes[storage[n]] = n.nbytes
        done = {}
        for x in n.inputs:
            if x in life and life[x][1] == i and decoder_replica(x) and id(x) not in outs:
                done[id(x)] = x
        for x in done.values():
            free.setdefault(key(x), deque()).append(storage[x])
    return TagPlan(list(outputs), list(order), storage, storage_bytes)
