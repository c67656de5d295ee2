"""The KV cache of LLM serving under a fixed memory budget: three allocators (Kwon et al. 2023,
"Efficient Memory Management for Large Language Model Serving with PagedAttention", vLLM).

A request keeps the keys and values of every token it has seen, ``token_bytes`` each, and grows by
one token per decoding step until it has produced its output, whose length is not known in
advance. Three ways to hold that memory:

* :class:`ContiguousAllocator` reserves the maximum length of a request up front, contiguous
  (the systems before vLLM): the unused tail of each reservation is wasted;
* :class:`PoolAllocator` is lesson 02's best-fit caching pool (:class:`~memlab.memory.pool.
  MemoryPool`): a request's cache is one block, moved to a block twice as big when full; freed
  blocks stay cached, and blocks of the wrong size are fragmentation;
* :class:`PagedAllocator` cuts memory into blocks of ``block_size`` tokens and gives each request
  a **block table** (the pages of an operating system): only the last block of a request is
  partly empty. Requests can share the blocks of a common prompt prefix, copied on write.

:func:`serve` runs a seeded :func:`request_stream` through one allocator, first come first served,
preempting the latest request (freed, recomputed later) when memory runs out, and reports the
waste, the most requests served at once and the tokens per step. :class:`BlockCacheAllocator`
lets it serve a block cache written one token at a time (exercise 15's).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import BudgetError, PlanError, check_int
from .pool import MemoryPool, round_size


def _tokens(tokens: object, what: str) -> int:
    """``tokens`` if it is an integer >= 0, else :class:`BudgetError` naming ``what``."""
    if type(tokens) is int and tokens >= 0:      # the common case, asked once a token
        return tokens
    return check_int(tokens, what, 0, BudgetError)


def _known(table: Any, rid: object, what: str) -> None:
    """:class:`PlanError` naming ``what`` unless request ``rid`` is held (a key of ``table``)."""
    if rid not in table:
        held = ", ".join(map(str, sorted(table, key=str)[:8])) or "none"
        raise PlanError(f"{what}: request {rid!r} is unknown: admit it first (requests held: "
                        f"{held})")


@dataclass(frozen=True)
class Request:
    """One request: ``id``, ``arrival`` step, ``prompt`` and ``output`` lengths in tokens."""

    id: int
    arrival: int
    prompt: int
    output: int


def request_stream(n: int, seed: int = 0, prompt: tuple[int, int] = (16, 256),
                   output: tuple[int, int] = (16, 256), per_step: float = 0.0) -> list[Request]:
    """``n`` requests with prompt and output lengths uniform in the given ranges (inclusive),
    arriving all at step 0 (``per_step=0``) or ``per_step`` a step on average (Poisson)."""
    check_int(n, "request_stream: n", 1)
    rng = np.random.default_rng(check_int(seed, "request_stream: seed", 0))
    for name, (lo, hi) in (("prompt", prompt), ("output", output)):
        check_int(lo, f"request_stream: {name}[0]", 1)
        check_int(hi, f"request_stream: {name}[1]", lo)
    arrivals = np.zeros(n, np.int64) if per_step <= 0 else \
        np.floor(np.cumsum(rng.exponential(1.0 / per_step, n))).astype(np.int64)
    p = rng.integers(prompt[0], prompt[1] + 1, n)
    o = rng.integers(output[0], output[1] + 1, n)
    return [Request(i, int(arrivals[i]), int(p[i]), int(o[i])) for i in range(n)]


class ContiguousAllocator:
    """One contiguous reservation of ``max_len`` tokens per request, within ``budget`` bytes."""

    name = "contiguous"

    def __init__(self, budget: int, token_bytes: int, max_len: int) -> None:
        self.budget = check_int(budget, "ContiguousAllocator: budget", 1, BudgetError)
        self.token_bytes = check_int(token_bytes, "ContiguousAllocator: token_bytes", 1,
                                     BudgetError)
        self.max_len = check_int(max_len, "ContiguousAllocator: max_len", 1, BudgetError)
        if self.max_len * self.token_bytes > self.budget:
            raise BudgetError(f"budget {budget} bytes is below one request of max_len={max_len} "
                              f"tokens ({self.max_len * self.token_bytes} bytes)")
        self.slots: dict[int, int] = {}

    def admit(self, rid: int, tokens: int) -> bool:
        """Reserve ``max_len`` tokens for request ``rid`` if the budget allows."""
        tokens = _tokens(tokens, "ContiguousAllocator.admit: tokens")
        if rid in self.slots:
            raise PlanError(f"ContiguousAllocator.admit: request {rid} already has a reservation")
        if tokens > self.max_len:
            raise BudgetError(f"request {rid} needs {tokens} tokens, more than max_len="
                              f"{self.max_len}")
        if (len(self.slots) + 1) * self.max_len * self.token_bytes > self.budget:
            return False
        self.slots[rid] = self.max_len
        return True

    def grow(self, rid: int, tokens: int) -> bool:
        """Room for ``tokens`` tokens: always there, up to ``max_len``."""
        tokens = _tokens(tokens, "ContiguousAllocator.grow: tokens")
        _known(self.slots, rid, "ContiguousAllocator.grow")
        if tokens > self.max_len:
            raise BudgetError(f"request {rid} grows to {tokens} tokens, past max_len="
                              f"{self.max_len}")
        return True

    def release(self, rid: int) -> None:
        """Free request ``rid``'s reservation."""
        _known(self.slots, rid, "ContiguousAllocator.release")
        del self.slots[rid]

    def held(self) -> tuple[int, int]:
        """Bytes held for requests, and of them bytes free in the allocator's cache (0 here)."""
        return len(self.slots) * self.max_len * self.token_bytes, 0


class _CountingPool(MemoryPool):
    """Lesson 02's pool, counting bytes without allocating them (a simulation of device memory)."""

    def new_buffer(self, size: int) -> Any:
        return None


class PoolAllocator:
    """Lesson 02's best-fit caching pool within ``budget`` bytes: one block per request, moved to
    a block twice the size when it fills; when a new block would pass the budget the cached
    blocks are given back first (``empty_cache``)."""

    name = "best-fit pool"

    def __init__(self, budget: int, token_bytes: int) -> None:
        self.budget = check_int(budget, "PoolAllocator: budget", 1, BudgetError)
        self.token_bytes = check_int(token_bytes, "PoolAllocator: token_bytes", 1, BudgetError)
        self.pool = _CountingPool(trace=False)
        self.blocks: dict[int, Any] = {}

    def _allocate(self, rid: int, nbytes: int) -> Any:
        size = round_size(nbytes)
        fits = any(b.size >= size for b in self.pool.free_blocks)
        if not fits and self.pool.stats.bytes_reserved + size > self.budget:
            self.pool.empty_cache()
            if self.pool.stats.bytes_reserved + size > self.budget:
                return None
        return self.pool.allocate(nbytes, owner=f"request {rid}")

    def admit(self, rid: int, tokens: int) -> bool:
        """A block for the prompt's ``tokens`` tokens, if the budget allows."""
        tokens = _tokens(tokens, "PoolAllocator.admit: tokens")
        if rid in self.blocks:
            raise PlanError(f"PoolAllocator.admit: request {rid} already has a block")
        block = self._allocate(rid, tokens * self.token_bytes)
        if block is not None:
            self.blocks[rid] = block
        return block is not None

    def grow(self, rid: int, tokens: int) -> bool:
        """Room for ``tokens`` tokens: a block twice as big when the current one is full."""
        tokens = _tokens(tokens, "PoolAllocator.grow: tokens")
        _known(self.blocks, rid, "PoolAllocator.grow")
        old = self.blocks[rid]
        if tokens * self.token_bytes <= old.size:
            return True
        new = self._allocate(rid, max(tokens * self.token_bytes, 2 * old.size))
        if new is None:
            return False
        self.pool.free(old)
        self.blocks[rid] = new
        return True

    def release(self, rid: int) -> None:
        """Free request ``rid``'s block into the pool's cache."""
        _known(self.blocks, rid, "PoolAllocator.release")
        self.pool.free(self.blocks.pop(rid))

    def held(self) -> tuple[int, int]:
        """Bytes reserved by the pool (in use and cached), and of them the cached bytes."""
        s = self.pool.stats
        return s.bytes_reserved, s.bytes_reserved - s.bytes_in_use


@dataclass
class PagedAllocator:
    """``num_blocks`` blocks of ``block_size`` tokens; a block table per request (vLLM).

    ``events`` logs every ``("alloc" | "free" | "copy", request, block)``; ``refcount`` counts the
    tables that hold a block (above 1 for a prefix shared by :meth:`fork`)."""

    num_blocks: int
    block_size: int
    token_bytes: int = 1
    name: str = "paged"
    tables: dict[int, list[int]] = field(default_factory=dict, init=False)
    lengths: dict[int, int] = field(default_factory=dict, init=False)
    events: list[tuple[str, int, int]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        check_int(self.num_blocks, "PagedAllocator: num_blocks", 1, BudgetError)
        check_int(self.block_size, "PagedAllocator: block_size", 1, BudgetError)
        check_int(self.token_bytes, "PagedAllocator: token_bytes", 1, BudgetError)
        self.free_list = list(range(self.num_blocks - 1, -1, -1))   # pop() gives block 0 first
        self.refcount = [0] * self.num_blocks

    def _take(self, rid: int) -> int:
        block = self.free_list.pop()
        self.refcount[block] = 1
        self.tables[rid].append(block)
        self.events.append(("alloc", rid, block))
        return block

    def _drop(self, rid: int, block: int) -> None:
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            self.free_list.append(block)
            self.events.append(("free", rid, block))

    def admit(self, rid: int, tokens: int) -> bool:
        """A block table holding ``tokens`` tokens for a new request, if enough blocks are free."""
        tokens = _tokens(tokens, "PagedAllocator.admit: tokens")
        if rid in self.tables:
            raise PlanError(f"request {rid} already has a block table")
        need = -(-tokens // self.block_size)
        if need > len(self.free_list):
            return False
        self.tables[rid], self.lengths[rid] = [], tokens
        for _ in range(need):
            self._take(rid)
        return True

    def grow(self, rid: int, tokens: int) -> bool:
        """Room for ``tokens`` tokens: new blocks when the last one is full, and a private copy of
        a shared last block before writing into it (copy on write)."""
        tokens = _tokens(tokens, "PagedAllocator.grow: tokens")
        _known(self.tables, rid, "PagedAllocator.grow")
        table, length = self.tables[rid], self.lengths[rid]
        need = -(-tokens // self.block_size) - len(table)
        shared_tail = tokens > length and length % self.block_size and \
            self.refcount[table[-1]] > 1
        if need + bool(shared_tail) > len(self.free_list):
            return False
        if shared_tail:
            old = table.pop()
            self.refcount[old] -= 1
            self.events.append(("copy", rid, self._take(rid)))
        for _ in range(need):
            self._take(rid)
        self.lengths[rid] = max(length, tokens)
        return True

    def fork(self, parent: int, child: int) -> None:
        """Request ``child`` shares every block of ``parent`` (a common prompt: parallel sampling)."""
        _known(self.tables, parent, "PagedAllocator.fork: parent")
        if child in self.tables:
            raise PlanError(f"request {child} already has a block table")
        table = list(self.tables[parent])
        for block in table:
            self.refcount[block] += 1
        self.tables[child], self.lengths[child] = table, self.lengths[parent]

    def release(self, rid: int) -> None:
        """Give back request ``rid``'s blocks (a shared block when its last holder leaves)."""
        _known(self.tables, rid, "PagedAllocator.release")
        for block in self.tables.pop(rid):
            self._drop(rid, block)
        del self.lengths[rid]

    def held(self) -> tuple[int, int]:
        """Bytes of the blocks in some table, and of them free bytes (0: blocks are not cached)."""
        used = self.num_blocks - len(self.free_list)
        return used * self.block_size * self.token_bytes, 0


def serve(stream: list[Request], allocator: Any, max_steps: int = 100_000,
          on_step: Callable[[int, list[Request]], None] | None = None) -> dict[str, Any]:
    """Serve ``stream`` with ``allocator``: each step admits waiting requests first come first
    served (prompt tokens), then every running request decodes one token (preempting the latest
    admitted when memory runs out: its cache is freed and it starts again later). Returns
    ``steps``, ``tokens`` (output of finished requests), ``throughput`` (those per step),
    ``max_running``, ``preemptions``, ``redone`` (tokens generated again after a preemption),
    ``waste`` (1 - bytes of tokens stored / bytes held, summed over steps),
    ``fragmentation`` (cached bytes / held) and per-step ``held``, ``used`` and ``running``.
    ``on_step(step, running requests)`` is called after each step's decoding, before the finished
    requests leave (a stepper's snapshot of the allocator)."""
    if not isinstance(stream, list) or not stream or \
            not all(isinstance(r, Request) for r in stream):
        raise BudgetError("serve: stream must be a non-empty list of Requests (request_stream)")
    if not all(hasattr(allocator, m) for m in ("admit", "grow", "release", "held", "token_bytes")):
        raise BudgetError(f"serve: allocator must be a Contiguous-, Pool- or PagedAllocator, got "
                          f"{type(allocator).__name__}")
    check_int(max_steps, "serve: max_steps", 1, BudgetError)
    tb = allocator.token_bytes
    pending = deque(sorted(stream, key=lambda r: (r.arrival, r.id)))
    queue: deque[Request] = deque()
    running: list[list[Any]] = []                # [request, tokens generated]
    trace = {"held": [], "used": [], "running": [], "cached": []}
    tokens = redone = preemptions = step = 0
    while (pending or queue or running) and step < max_steps:
        while pending and pending[0].arrival <= step:
            queue.append(pending.popleft())
        while queue and allocator.admit(queue[0].id, queue[0].prompt):
            running.append([queue.popleft(), 0])
        if queue and not running:
            raise BudgetError(f"serve: the budget is below one request: request {queue[0].id} "
                              f"({queue[0].prompt} prompt tokens) does not fit the "
                              f"{allocator.name} allocator when it holds nothing else")
        preempted: set[int] = set()              # ids of the entries preempted this step
        for entry in list(running):
            if id(entry) in preempted:
                continue
            req = entry[0]
            while not allocator.grow(req.id, req.prompt + entry[1] + 1):
                victim = running.pop()
                if victim is entry and not running:
                    raise BudgetError(f"serve: the budget cannot hold request {req.id} "
                                      f"({req.prompt + req.output} tokens) alone with the "
                                      f"{allocator.name} allocator")
                preempted.add(id(victim))
                allocator.release(victim[0].id)
                queue.appendleft(victim[0])
                preemptions += 1
                redone += victim[1]
                if victim is entry:
                    break
        for entry in running:
            entry[1] += 1
        held, cached = allocator.held()
        trace["held"].append(held)
        trace["cached"].append(cached)
        trace["used"].append(sum(r.prompt + g for r, g in running) * tb)
        trace["running"].append(len(running))
        if on_step is not None:
            on_step(step, [r for r, _ in running])
        finished = [e for e in running if e[1] == e[0].output]
        if finished:
            running = [e for e in running if e[1] != e[0].output]
            for entry in finished:
                allocator.release(entry[0].id)
                tokens += entry[1]
        step += 1
    held, used = sum(trace["held"]), sum(trace["used"])
    return {"allocator": allocator.name, "steps": step, "tokens": tokens,
            "throughput": tokens / max(step, 1), "max_running": max(trace["running"]),
            "preemptions": preemptions, "redone": redone, "waste": 1 - used / held if held else 0.0,
            "fragmentation": sum(trace["cached"]) / held if held else 0.0, **trace}


class BlockCacheAllocator:
    """:func:`serve`'s allocator (``admit``, ``grow``, ``release``, ``held``) over a block cache
    that adds one token at a time: ``admit(rid, tokens)``, ``append(rid)`` (False when no block is
    free), ``free(rid)``, ``free_count()``, ``num_blocks`` and ``block_size`` -- exercise 15's
    ``PagedKVCache``. ``grow`` appends a token at a time (``serve`` grows by one)."""

    def __init__(self, cache: Any, token_bytes: int = 1, name: str = "your paged cache") -> None:
        missing = [m for m in ("admit", "append", "free", "free_count", "num_blocks", "block_size")
                   if not hasattr(cache, m)]
        if missing:
            raise BudgetError(f"BlockCacheAllocator: cache must have admit, append, free, "
                              f"free_count, num_blocks and block_size; "
                              f"{type(cache).__name__} lacks {', '.join(missing)}")
        self.cache, self.name = cache, str(name)
        self.token_bytes = check_int(token_bytes, "BlockCacheAllocator: token_bytes", 1,
                                     BudgetError)
        self.block_size = cache.block_size
        self.lengths: dict[int, int] = {}

    def admit(self, rid: int, tokens: int) -> bool:
        """The cache's ``admit``; the adapter counts the request's tokens from here on."""
        ok = bool(self.cache.admit(rid, tokens))
        if ok:
            self.lengths[rid] = tokens
        return ok

    def grow(self, rid: int, tokens: int) -> bool:
        """``append`` until request ``rid`` holds ``tokens`` tokens; False at the first refusal."""
        while self.lengths[rid] < tokens:
            if not self.cache.append(rid):
                return False
            self.lengths[rid] += 1
        return True

    def release(self, rid: int) -> None:
        """The cache's ``free``."""
        self.cache.free(rid)
        del self.lengths[rid]

    def held(self) -> tuple[int, int]:
        """Bytes of the blocks not free, and of them cached bytes (0: blocks are not cached)."""
        used = int(self.cache.num_blocks) - int(self.cache.free_count())
        return used * int(self.cache.block_size) * self.token_bytes, 0
