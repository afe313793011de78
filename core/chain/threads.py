"""Worker threads for batched solves and the gate that keeps BLAS-heavy steps from
oversubscribing the CPUs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

#: Automatic threading (``SolveSettings.threads=None``) starts one thread per this much
#: work, counted as batch rows × forward-kinematics nodes of the skeleton (one per
#: unlocked DOF or Fixed joint): below it the numpy calls are short, the loop's Python
#: between them (which holds the GIL) dominates and a second thread gains nothing or
#: loses. The default of the methods (:attr:`IKSolver.work_per_thread`); gated DLS needs
#: less, CCD (a sweep of short calls per DOF) more (measurements: docs/decisions.md).
WORK_PER_THREAD = 10_000


def worker_count(threads: int | None, rows: int, nodes: int, work: int = WORK_PER_THREAD) -> int:
    """Threads for a solve of ``rows`` rows on a skeleton of ``nodes`` forward-kinematics
    nodes (``SolveSettings.threads``; automatic: one per ``work`` rows × nodes)."""
    if threads is None:
        if rows * nodes < 2 * work:  # one thread whatever the CPUs (no syscall)
            return 1
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cpus = os.cpu_count() or 1
        threads = min(cpus, rows * nodes // work)
    return max(1, min(threads, rows))


class Gate:
    """The turnstile of a threaded solve's chunks (:meth:`IKSolver.run`) for methods whose
    step has one dominant LAPACK/BLAS section (:attr:`IKSolver.gated`).

    Each chunk holds the gate while it runs its loop — the many short numpy calls of
    forward kinematics, residual, Jacobian and bookkeeping — and opens it (:meth:`open`)
    only around that heavy section, a few long calls that release the GIL. So one chunk's
    short calls overlap the other's long ones instead of both chunks contending for the
    GIL at every short call (each contended hand-over puts a thread to sleep; see
    docs/decisions.md)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Held by a chunk for its whole loop."""
        with self._lock:
            self._local.depth = 0
            yield

    @contextmanager
    def open(self) -> Iterator[None]:
        """Let the other chunks through for the enclosed heavy calls (nested: once)."""
        depth = self._local.depth
        self._local.depth = depth + 1
        if depth == 0:
            self._lock.release()
        try:
            yield
        finally:
            if depth == 0:
                self._lock.acquire()
            self._local.depth = depth


def opened(gate: Gate | None) -> Any:
    """``gate.open()``, or a no-op without a gate (one thread, or an ungated method)."""
    return nullcontext() if gate is None else gate.open()
