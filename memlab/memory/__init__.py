"""Memory planning for the op graph (CSE599G1 lecture 7, p.14-25).

Dynamic allocation through a caching pool (:mod:`.pool`, p.14-16); liveness and reference counts,
computed once (:mod:`.liveness`); the execution order chosen for its peak memory
(:mod:`.order`, the scheduling slides, part 1); the lecture's tag planner with in-place, sharing and the box of
free tags (:mod:`.planner`, p.17-22); byte offsets in one arena, tags chosen with every lifetime
known, and the live-bytes lower bound (:mod:`.offsets`); longest-path colouring and the implicit
dependencies sharing adds (:mod:`.longest_path`, :mod:`.coloring`, p.23-25); an independent
verifier of any :class:`Plan` (:mod:`.checkplan`); OpenNMT's sharing techniques as planning
rules (:mod:`.sharing`, OpenNMT's notes); the KV cache of LLM serving under three allocators, lesson 02's
pool among them (:mod:`.kvcache`, lesson 15); beyond the slides, PyTorch's caching allocator
(:mod:`.caching`) and TensorFlow's BFC allocator (:mod:`.bfc`) over the segments and blocks of
:mod:`.blocks`. Imports :mod:`memlab.graph` and below.
"""
from .plan import Plan, PlanWithTags, ALIGN, align
from .pool import MemoryPool
from .caching import CachingAllocator
from .bfc import BFCAllocator
from . import blocks, caching, bfc, checksnapshot, replay
from .liveness import reference_counts, lifetimes, prepare
from .order import memory_order, order_peak, resolve_order
from .planner import plan_memory, TagPlan, PlanStep, Box
from .offsets import plan_offsets, plan_tags_by_size, live_bytes_lower_bound, OffsetPlan
from .checkplan import check_plan
from . import coloring, sharing, kvcache, fragmentation
from .sharing import plan_sharing

__all__ = ["Plan", "PlanWithTags", "ALIGN", "align", "MemoryPool", "reference_counts", "lifetimes", "prepare",
           "memory_order", "order_peak", "resolve_order",
           "plan_memory", "TagPlan", "PlanStep", "Box", "plan_offsets", "plan_tags_by_size",
           "live_bytes_lower_bound", "OffsetPlan", "check_plan", "coloring", "sharing", "plan_sharing", "kvcache",
           "fragmentation", "CachingAllocator", "BFCAllocator", "blocks", "caching", "bfc",
           "checksnapshot", "replay"]
