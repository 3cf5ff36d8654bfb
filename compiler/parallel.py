"""How many processes a compile may use, and how to start them. Shared by the stages that split independent
work across cores (model generation per chunk, provider lowering per target).

`TOOLC_JOBS=N` caps the number of processes (1 = everything in this process); by default, the cores this
process may run on. Results never depend on it: each stage merges its workers' results in a fixed order, and
the tests compare a 1-job compile with a parallel one byte for byte.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import threading


def cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    available = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    requested = os.environ.get("TOOLC_JOBS", "").strip()
    if requested.isdigit() and int(requested) > 0:
        return min(int(requested), available)
    return available


def start_context() -> multiprocessing.context.BaseContext:
    """fork starts a worker with the compiler and its inputs already in memory, but is only safe while this
    process has one thread (a live MCP source may leave threads behind); spawn otherwise."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def can_fork() -> bool:
    return start_context().get_start_method() == "fork"
