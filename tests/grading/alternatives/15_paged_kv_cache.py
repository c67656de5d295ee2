# Alternative answers to exercise 15: the free blocks kept in a heap (lowest number first), a
# ceiling division by divmod, and copy on write written as its own method.
# %% q1_blocks_needed
def blocks_needed(tokens, block_size):
    full, rest = divmod(tokens, block_size)
    return full + (1 if rest else 0)
# %% q2_paged
import heapq

class PagedKVCache:
    def __init__(self, num_blocks, block_size):
        self.num_blocks, self.block_size = num_blocks, block_size
        self.tables, self.lengths = {}, {}
        self.refcount = [0] * num_blocks
        self._free = list(range(num_blocks))        # a heap of free block ids

    def _take(self):
        block = heapq.heappop(self._free)
        self.refcount[block] = 1
        return block

    def _release(self, block):
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            heapq.heappush(self._free, block)

    def free_count(self):
        return len(self._free)

    def admit(self, rid, tokens):
        need = blocks_needed(tokens, self.block_size)
        if need > len(self._free):
            return False
        self.tables[rid] = [self._take() for _ in range(need)]
        self.lengths[rid] = tokens
        return True

    def append(self, rid):
        if self.lengths[rid] % self.block_size == 0 and \
                self.lengths[rid] // self.block_size == len(self.tables[rid]):
            if not self._free:
                return False
            self.tables[rid].append(self._take())
        self.lengths[rid] += 1
        return True

    def free(self, rid):
        for block in self.tables[rid]:
            self._release(block)
        del self.tables[rid], self.lengths[rid]
# %% q3_prefix
class PrefixKVCache(PagedKVCache):
    def fork(self, parent, child):
        shared = self.tables[parent]
        self.tables[child] = shared[:]
        self.lengths[child] = self.lengths[parent]
        for block in shared:
            self.refcount[block] += 1

    def _copy_last(self, rid):
        if not self._free:
            return False
        old = self.tables[rid][-1]
        self.tables[rid][-1] = self._take()
        self._release(old)
        return True

    def append(self, rid):
        last = self.tables[rid][-1] if self.tables[rid] else None
        partly = self.lengths[rid] % self.block_size != 0
        if partly and last is not None and self.refcount[last] > 1:
            if not self._copy_last(rid):
                return False
            self.lengths[rid] += 1
            return True
        return super().append(rid)
