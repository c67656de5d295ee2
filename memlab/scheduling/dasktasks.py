"""What runs inside Dask's workers for :mod:`memlab.scheduling.dask`: real buffers and a meter.

A task of a memlab tree or task graph (scheduling slides, "Notations") allocates, when it starts, a numpy
buffer for its execution data ``m`` and one for each datum it outputs, holds them while it works
(a sleep of its duration), then frees its execution buffer and the inputs it consumed. A
:class:`Buffer` is one datum: the consumer calls :meth:`Buffer.release`, which drops the numpy
array itself, so the bytes really leave memory even while Dask still holds the (now empty) result.

The :class:`Meter` counts the bytes of the buffers alive; it is shared by the tasks of one run,
which find it by name in this module's registry. That works because memlab runs Dask's workers as
threads of this process (``LocalCluster(processes=False)``), and because this module is imported
by name, so cloudpickle sends its functions by reference, not as copies with their own globals.
"""
from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import numpy as np

__all__ = ["Buffer", "Meter", "node_task", "hold_task", "meter", "new_meter", "drop_meter"]

_METERS: dict[str, "Meter"] = {}
_COUNT = itertools.count()


class Meter:
    """Live bytes of one run, in total and per worker, their peaks, and the tasks' own log.

    ``live`` counts every buffer allocated and not yet released (the model's memory);
    ``resident`` counts the arrays really present in RAM: a buffer that Dask spilled to disk
    leaves it, and an unspilled copy comes back (so ``resident <= live`` up to copies).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.RLock()  # reentrant: a buffer may be collected inside a locked block
        self.live = 0
        self.peak = 0
        self.resident = 0
        self.resident_peak = 0
        self.worker_live: dict[str, int] = {}
        self.worker_peak: dict[str, int] = {}
        #: ``(node, worker, start, end)`` per task, appended as tasks end
        self.log: list[tuple[int, str, float, float]] = []
        #: ``(time, live)`` after every change of ``live``
        self.trace: list[tuple[float, int]] = []
        self.gate = threading.Event()

    def add(self, nbytes: int, worker: str) -> None:
        """Count ``nbytes`` more alive on ``worker`` (negative: freed)."""
        with self.lock:
            self.live += nbytes
            self.peak = max(self.peak, self.live)
            self.trace.append((time.perf_counter(), self.live))
            w = self.worker_live.get(worker, 0) + nbytes
            self.worker_live[worker] = w
            self.worker_peak[worker] = max(self.worker_peak.get(worker, 0), w)

    def add_resident(self, nbytes: int) -> None:
        with self.lock:
            self.resident += nbytes
            self.resident_peak = max(self.resident_peak, self.resident)


def new_meter() -> Meter:
    """A fresh meter under a new name in the registry."""
    m = Meter(f"memlab-run-{next(_COUNT)}")
    _METERS[m.name] = m
    return m


def meter(name: str) -> Meter:
    """The meter registered as ``name``."""
    return _METERS[name]


def drop_meter(name: str) -> None:
    _METERS.pop(name, None)


class Buffer:
    """One datum of ``nbytes`` really allocated (a numpy array of that many bytes, touched)."""

    def __init__(self, meter_name: str, nbytes: int, worker: str) -> None:
        self.meter_name = meter_name
        self.nbytes = int(nbytes)
        self.worker = worker
        self.array: np.ndarray | None = np.ones(self.nbytes, dtype=np.uint8)
        m = meter(meter_name)
        m.add(self.nbytes, worker)
        m.add_resident(self.nbytes)

    def release(self) -> None:
        """Free the array (once); the datum's bytes leave the meter of the worker that made it."""
        if self.array is None:
            return
        self.array = None
        m = _METERS.get(self.meter_name)
        if m is not None:
            m.add(-self.nbytes, self.worker)
            m.add_resident(-self.nbytes)

    def __getstate__(self) -> dict[str, Any]:  # Dask spills a result to disk by pickling it
        return {"meter_name": self.meter_name, "nbytes": self.nbytes, "worker": self.worker,
                "array": self.array}

    def __setstate__(self, state: dict[str, Any]) -> None:  # ... and reads it back
        self.meter_name, self.nbytes = state["meter_name"], state["nbytes"]
        self.worker = state["worker"]
        self.array = state["array"]
        m = _METERS.get(self.meter_name)
        if m is not None and self.array is not None:
            m.add_resident(self.nbytes)

    def __del__(self) -> None:  # a spilled copy dropped by Dask leaves RAM, not the model
        if getattr(self, "array", None) is not None:
            m = _METERS.get(self.meter_name)
            if m is not None:
                m.add_resident(-self.nbytes)


def _sizeof(buf: Buffer) -> int:
    """What Dask's memory manager counts for a result: the bytes its array holds."""
    return buf.nbytes if buf.array is not None else 64


def register_sizeof() -> None:
    """Teach ``dask.sizeof`` the size of a :class:`Buffer` (so spilling sees real bytes)."""
    from dask.sizeof import sizeof

    sizeof.register(Buffer)(_sizeof)


def _worker() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:  # run outside a worker (a test calling the task directly)
        return "local"


def node_task(meter_name: str, node: int, outs: tuple[tuple[int, int], ...], exec_bytes: int,
              seconds: float, *inputs: Any) -> dict[int, Buffer]:
    """One task: allocate ``exec_bytes`` and one buffer per ``(consumer, nbytes)`` of ``outs``,
    work ``seconds``, free the execution buffer and the inputs addressed to ``node``.

    ``inputs`` are the producers' results (dicts consumer -> Buffer); entries for other consumers
    and results of pure ordering edges are left alone. Returns this task's outputs by consumer.
    """
    m = meter(meter_name)
    worker = _worker()
    start = time.perf_counter()
    scratch = Buffer(meter_name, exec_bytes, worker)
    out = {c: Buffer(meter_name, nbytes, worker) for c, nbytes in outs}
    if seconds > 0:
        time.sleep(seconds)
    scratch.release()
    for result in inputs:
        if isinstance(result, dict) and node in result:
            result[node].release()
    end = time.perf_counter()
    with m.lock:
        m.log.append((node, worker, start, end))
    return out


def hold_task(meter_name: str, timeout: float) -> bool:
    """Occupy a worker's only thread until the run's gate opens (so every first task is queued
    and Dask starts with the best priority, not with whichever task it saw first)."""
    return meter(meter_name).gate.wait(timeout)
