# Alternative answers to exercise 06: the values filtered by op kind, the k-th values by slicing,
# K rounded by adding a half (sqrt(N) is never a half-integer, so it is round's K).
# %% q1_forward
def forward_values(outputs):
    loss = outputs[0]
    return [n for n in ml.topo_order([loss])
            if n is not loss and n.op is not ml.PLACEHOLDER and n.op is not ml.CONSTANT]
# %% q2_every_kth
def every_kth(outputs, k):
    return set(forward_values(outputs)[k - 1::k])
# %% q3_sqrt
def sqrt_segments(outputs):
    n = len(forward_values(outputs))
    return every_kth(outputs, max(1, int(math.sqrt(n) + 0.5)))
