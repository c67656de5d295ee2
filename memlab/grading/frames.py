"""Frames between grader, judge and kernel: a 4-byte big-endian length, then that many bytes.

The kernel side reads and writes them blocking (:func:`send_frame`, :func:`recv_frame`: it is the
student's process, nothing there waits on anyone); the grader non-blocking, every read and write
under a deadline (:func:`send_all`, :class:`FrameReader`).
"""
from __future__ import annotations

import os
import select
import socket
import struct
import time

from .codec import MAX_BYTES

MAX_FRAME = MAX_BYTES + 8   # a message and its sequence number


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> bytes | None:
    """One frame, or None at the end of the stream; ValueError for a frame over *limit*."""
    head = recv_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > limit:
        raise ValueError(f"a frame of {n:,} bytes is over the limit of {limit:,}")
    return recv_exact(sock, n)


def send_all(fd_or_sock, data: bytes, deadline: float) -> None:
    """Write all of *data* to a non-blocking socket or pipe before *deadline*; TimeoutError if not."""
    view, is_sock = memoryview(data), isinstance(fd_or_sock, socket.socket)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("a write did not finish in time")
        _, ready, _ = select.select([], [fd_or_sock], [], min(left, 0.5))
        if not ready:
            continue
        try:
            n = fd_or_sock.send(view) if is_sock else os.write(fd_or_sock, view)
        except (BlockingIOError, InterruptedError):
            continue
        view = view[n:]


class FrameReader:
    """Frames (a 4-byte big-endian length, then that many bytes) read from a non-blocking socket
    or pipe; :meth:`read` returns one whole frame or None (nothing complete yet)."""

    def __init__(self, source, limit: int = MAX_FRAME) -> None:
        self.source, self.limit, self.buf = source, limit, bytearray()
        self.closed = False

    def _pull(self) -> None:
        try:
            chunk = self.source.recv(1 << 20) if isinstance(self.source, socket.socket) \
                else os.read(self.source, 1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        if not chunk:
            self.closed = True
        self.buf += chunk

    def frame(self) -> bytes | None:
        if len(self.buf) < 4:
            return None
        (n,) = struct.unpack(">I", self.buf[:4])
        if n > self.limit:
            raise ValueError(f"a frame of {n:,} bytes is over the limit of {self.limit:,}")
        if len(self.buf) < 4 + n:
            return None
        out = bytes(self.buf[4:4 + n])
        del self.buf[:4 + n]
        return out

    def read(self, wait: float) -> bytes | None:
        """A whole frame, waiting at most *wait* seconds for more bytes; None if none is complete."""
        got = self.frame()
        if got is not None or self.closed:
            return got
        ready, _, _ = select.select([self.source], [], [], max(0.0, wait))
        if ready:
            self._pull()
        return self.frame()


def frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


