# Alternative answers to exercise 05: the saved values found from the readers' side, a box kept
# sorted by (size, tag) with bisect, the bytes split by a first pass over the tags.
# %% q1_saved
def saved_for_backward(outputs, loss):
    forward = ml.topo_order(loss)
    fwd = {id(n) for n in forward}
    backward = [n for n in ml.topo_order(outputs) if id(n) not in fwd]
    read = {id(x) for n in backward for x in n.inputs}
    return [n.name for n in forward if n.op.computes and id(n) in read]
# %% q2_plan
import bisect

def plan_training(outputs, order, inplace=True, share=True):
    outs = {id(o) for o in outputs}
    ref = {}
    for n in order:
        for x in {id(x) for x in n.inputs}:
            ref[x] = ref.get(x, 0) + 1
    storage, sbytes, box = {}, {}, []          # box: sorted (size, tag)
    for n in order:
        if not n.op.computes:
            continue
        tag = None
        if inplace:
            for i in n.op.inplace(n):
                x = n.inputs[i]
                if x in storage and ref[id(x)] == 1 and id(x) not in outs and x.nbytes == n.nbytes:
                    tag = storage[x]
                    break
        if tag is None and share:
            k = bisect.bisect_left(box, (n.nbytes, -1))
            if k < len(box):
                tag = box.pop(k)[1]
        if tag is None:
            tag = len(sbytes)
            sbytes[tag] = n.nbytes
        storage[n] = tag
        for x in {id(x): x for x in n.inputs}.values():
            ref[id(x)] -= 1
            if ref[id(x)] == 0 and x in storage and id(x) not in outs and storage[x] != tag:
                bisect.insort(box, (sbytes[storage[x]], storage[x]))
    return storage, sbytes
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
