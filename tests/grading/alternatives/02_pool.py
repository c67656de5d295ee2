# Alternative answers to exercise 02: rounding by divmod,
# the cached blocks kept in a heap of (size, id), the executor's counts with a Counter, and a segment
# pool whose segments lie far apart, its blocks in a dict by address, merged by looking neighbours up.
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
# %% q4_segments
SEGMENT = 4096

class SegmentPool:
    def __init__(self):
        self.reserved = self.peak_reserved = self.allocated = self.peak_allocated = 0
        self.block = {}         # address -> [size, in_use, segment start]
        self.seg = {}           # start -> size
        self.next = 10**9

    def allocate(self, n):
        size = round_up(n)
        free = sorted((b[0], a) for a, b in self.block.items() if not b[1] and b[0] >= size)
        if free:
            addr = free[0][1]
        else:
            addr, s = self.next, max(SEGMENT, size)
            self.next += s + 12345 * 512
            self.seg[addr] = s
            self.block[addr] = [s, False, addr]
            self.reserved += s
        b = self.block[addr]
        if b[0] > size:
            self.block[addr + size] = [b[0] - size, False, b[2]]
            b[0] = size
        b[1] = True
        self.allocated += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return addr

    def free(self, addr):
        b = self.block.get(addr)
        if b is None or not b[1]:
            raise ValueError("not in use")
        b[1] = False
        self.allocated -= b[0]
        nxt = self.block.get(addr + b[0])
        if nxt is not None and not nxt[1] and nxt[2] == b[2]:
            b[0] += self.block.pop(addr + b[0])[0]
        prev = [a for a, c in self.block.items() if a + c[0] == addr and c[2] == b[2]]
        if prev and not self.block[prev[0]][1]:
            self.block[prev[0]][0] += self.block.pop(addr)[0]

    def empty_cache(self):
        gone = {s: n for s, n in self.seg.items() if self.block[s] == [n, False, s]}
        for s, n in gone.items():
            del self.block[s], self.seg[s]
            self.reserved -= n
        return sum(gone.values())

    def segments(self):
        return [(s, [(a, b[0], b[1]) for a, b in sorted(self.block.items()) if b[2] == s])
                for s in sorted(self.seg)]
