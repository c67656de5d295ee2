# Alternative answers to exercise 02 (as its solution stands in this branch): rounding by divmod,
# the cached blocks kept in a heap of (size, id), and the executor's counts with a Counter.
# %% q1_round_up
ROUND = 512

def round_up(nbytes):
    units, rest = divmod(nbytes, ROUND)
    return max(1, units + (1 if rest else 0)) * ROUND
# %% q2_pool
import heapq

class BestFitPool:
    def __init__(self):
        self.sizes = {}
        self.cached = set()
        self.in_use = set()
        self.reserved = 0
        self.peak_reserved = 0
        self.new_blocks = 0
        self.from_pool = 0
        self._heap = []                           # (size, id) of the cached blocks

    def allocate(self, nbytes):
        size = round_up(nbytes)
        passed, bid = [], None
        while self._heap:
            s, i = heapq.heappop(self._heap)
            if s >= size:
                bid = i
                break
            passed.append((s, i))
        for item in passed:
            heapq.heappush(self._heap, item)
        if bid is None:
            bid = len(self.sizes)
            self.sizes[bid] = size
            self.reserved += size
            self.new_blocks += 1
        else:
            self.cached.discard(bid)
            self.from_pool += 1
        self.in_use.add(bid)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return bid

    def free(self, block_id):
        if block_id not in self.in_use:
            raise ValueError(f"block {block_id} is not in use")
        self.in_use.discard(block_id)
        self.cached.add(block_id)
        heapq.heappush(self._heap, (self.sizes[block_id], block_id))
# %% q3_run_with_pool
from collections import Counter

def run_with_pool(outputs, feed):
    order = ml.topo_order(outputs)
    left = Counter(x for n in order for x in set(n.inputs))
    pool, values, held = BestFitPool(), {}, {}
    outs = set(outputs)
    for n in order:
        if not n.op.computes:
            values[n] = feed[n] if n.op is ml.PLACEHOLDER else n.value
            continue
        held[n] = pool.allocate(n.nbytes)
        values[n] = np.empty(n.shape, n.dtype)
        n.op.compute(n, [values[x] for x in n.inputs], values[n])
        for x in set(n.inputs):
            left[x] -= 1
            if not left[x] and x in held and x not in outs:
                pool.free(held.pop(x))
    return [values[o] for o in outputs], pool
