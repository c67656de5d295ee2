"""BlockCacheAllocator: serve() runs a block cache that appends one token at a time (exercise 15's
PagedKVCache) exactly as it runs PagedAllocator, which holds the same number of blocks at every step."""
from __future__ import annotations

import pytest

from memlab.errors import BudgetError, MemlabError
from memlab.memory.kvcache import BlockCacheAllocator, PagedAllocator, request_stream, serve


class _LowestFree:
    """A block cache written from the rules alone: lowest free block first, one token at a time."""

    def __init__(self, num_blocks, block_size):
        self.num_blocks, self.block_size = num_blocks, block_size
        self.tables, self.lengths, self.used = {}, {}, [False] * num_blocks

    def free_count(self):
        return self.used.count(False)

    def _take(self):
        b = self.used.index(False)
        self.used[b] = True
        return b

    def admit(self, rid, tokens):
        need = -(-tokens // self.block_size)
        if need > self.free_count():
            return False
        self.tables[rid], self.lengths[rid] = [self._take() for _ in range(need)], tokens
        return True

    def append(self, rid):
        if self.lengths[rid] == len(self.tables[rid]) * self.block_size:
            if not self.free_count():
                return False
            self.tables[rid].append(self._take())
        self.lengths[rid] += 1
        return True

    def free(self, rid):
        for b in self.tables.pop(rid):
            self.used[b] = False
        del self.lengths[rid]


@pytest.mark.parametrize("blocks, bs", [(12, 4), (40, 3), (300, 1)])
def test_serving_a_block_cache_equals_paged_allocator(blocks, bs):
    stream = request_stream(30, seed=5, prompt=(2, 20), output=(1, 30), per_step=0.5)
    theirs = serve(stream, PagedAllocator(blocks, bs, token_bytes=3))
    cache = _LowestFree(blocks, bs)
    ours = serve(stream, BlockCacheAllocator(cache, token_bytes=3))
    for key in ("steps", "tokens", "max_running", "preemptions", "redone", "held", "used", "running"):
        assert ours[key] == theirs[key], key
    assert blocks == 300 or ours["preemptions"] > 0            # the tight budgets preempt
    assert cache.free_count() == blocks and not cache.tables


def test_grow_stops_at_the_first_refusal():
    cache = _LowestFree(2, 2)
    al = BlockCacheAllocator(cache)
    assert al.admit(0, 3) and al.held() == (4, 0)
    assert not al.grow(0, 6)                       # token 4 fits block 1, token 5 needs a third block
    assert al.lengths[0] == 4 == cache.lengths[0]
    al.release(0)
    assert al.held() == (0, 0) and not al.lengths


def test_a_cache_without_the_methods_is_refused():
    with pytest.raises(BudgetError, match="lacks append, free, free_count"):
        BlockCacheAllocator(PagedAllocator(4, 2))
    with pytest.raises(MemlabError, match="token_bytes"):
        BlockCacheAllocator(_LowestFree(4, 2), token_bytes=0)
