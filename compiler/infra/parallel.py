"""How many processes a compile may use, and how to start them. Shared by the stages that split independent
work across cores (provider lowering per target, model generation per chunk, stub functions per piece) and
work that runs beside this process (`Background`: the router while the stubs are made).

`TOOLC_JOBS=N` caps the number of processes (1 = everything in this process); by default, the cores this
process may run on. Results never depend on it: each stage merges its workers' results in a fixed order, and
the tests compare a 1-job compile with a parallel one byte for byte.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import os
import pickle
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar, cast

from compiler.infra import limits
from compiler.infra.collector import paused_then_frozen

T = TypeVar("T")


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


class Background(Generic[T]):
    """`function()` run in a forked child while this process goes on; `result()` waits for it and returns its
    value (or raises its exception). Only for a fork-safe moment (`can_fork()`): the child starts with this
    process's memory as it is, so nothing is pickled on the way in, only the result on the way back.

    No thread is started (a pool would start one, and `start_context` then refuses to fork again for the
    stage running meanwhile). The result travels through a temporary file, not a pipe: a child blocked on a
    full pipe would hold its memory until this process reads, while the file lets it exit as soon as it is done.
    A child killed by a signal (the kernel's out-of-memory killer) raises MemoryError here, as the same work
    running out of memory in this process would."""

    def __init__(self, function: Callable[[], T], *, budget_mb: int = 0) -> None:
        descriptor, name = tempfile.mkstemp(prefix="toolc-background-", suffix=".pickle")
        os.close(descriptor)
        self._path = Path(name)
        self._process = multiprocessing.get_context("fork").Process(
            target=_run_in_background, args=(function, self._path, budget_mb), daemon=True)
        self._process.start()

    def result(self) -> T:
        try:
            self._process.join()
            code = self._process.exitcode
            if code is not None and code < 0:  # killed: on a compile, the kernel's answer to memory running out
                raise MemoryError(f"a background process was killed by signal {-code} before it finished")
            if code != 0 or self._path.stat().st_size == 0:
                raise RuntimeError(f"a background process exited with code {code} and no result")
            with self._path.open("rb") as handle:  # streamed: the result is not held twice, as bytes and as objects
                ok, value = _load_kept(handle)
        finally:
            self._path.unlink(missing_ok=True)
        if not ok:
            raise value
        return cast(T, value)

    @property
    def sentinel(self) -> int:
        """Ready (for `multiprocessing.connection.wait`) once the child has ended."""
        return self._process.sentinel

    def cancel(self) -> None:
        """Stop the child (when the work it was doing is no longer wanted: the compile failed meanwhile)."""
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._path.unlink(missing_ok=True)


def _load_kept(handle: BinaryIO) -> Any:
    """Unpickle a worker's result, which its caller keeps (a stage's output: Microsoft Graph's lowering sends back
    236,000 loss notes and every tool's name-map entry and layout). Unpickling makes no garbage, so the collector
    is paused meanwhile; then what is alive is frozen out of its generations, as the pipeline froze the catalog
    (`pipeline._compile` unfreezes everything when the compile ends). Otherwise the collections that follow rescan
    those objects in every generation on their way to the oldest: the parent's collections took 1.5 s of CPU on Graph
    and 4.1 s on Graph twice over (more than twice: each rescan is longer, and there are more), 0.3 and 0.8 s now."""
    with paused_then_frozen():
        return pickle.load(handle)


def fork_each(tasks: Sequence[Callable[[], T]], workers: int, *, budget_mb: int = 0,
              done: Callable[[int, T], None] | None = None) -> list[T]:
    """Each task in a forked child of its own (`Background`), at most `workers` at a time, started in order;
    `done(index, result)` as each one ends; the results in task order, whatever finished first.

    A child per task rather than a pool: a task's memory goes back to the system when it ends (a pool's worker
    keeps what the last task left, and spends seconds freeing its objects before it takes the next one)."""
    results: dict[int, T] = {}
    running: dict[int, Background[T]] = {}
    waiting = list(enumerate(tasks))
    try:
        while waiting or running:
            while waiting and len(running) < max(1, workers):
                index, task = waiting.pop(0)
                running[index] = Background(task, budget_mb=budget_mb)
            ended = set(multiprocessing.connection.wait([child.sentinel for child in running.values()]))
            for index in sorted(i for i, child in running.items() if child.sentinel in ended):
                results[index] = running.pop(index).result()
                if done is not None:
                    done(index, results[index])
    finally:
        for child in running.values():
            child.cancel()
    return [results[index] for index in range(len(tasks))]


def here_and_forked(tasks: Sequence[Callable[[], T]], *, budget_mb: int = 0) -> list[T]:
    """The first task in this process and each other in a forked child of its own (`Background`), started before
    it; the results in task order. For tasks that share out one piece of work (`Claims`): this process takes its
    share instead of waiting on a child of its own, and its result is never pickled (one fork and one result's
    round trip fewer than `fork_each`). Any child left when something fails is stopped."""
    children: list[Background[T]] = []
    try:
        children.extend(Background(task, budget_mb=budget_mb) for task in tasks[1:])
        results = [tasks[0]()]
        while children:
            results.append(children[0].result())
            children.pop(0)
        return results
    finally:
        for child in children:
            child.cancel()


WRITE_ASIDE_MIN_BYTES = 64 << 20
"""Below this many bytes of files to copy and hash, a forked child writing some of them aside (`providers.schemas`'
tools files, `fit.aside`'s toolset files) costs more than it saves."""


class Once:
    """A task that this process or a forked child may do, done by whichever asks for it first (`take`): the
    other goes on without it. Made before forking (the flag is shared memory)."""

    def __init__(self) -> None:
        self._taken = multiprocessing.get_context("fork").Value("b", 0)

    def take(self) -> bool:
        with self._taken.get_lock():
            if self._taken.value:
                return False
            self._taken.value = 1
            return True


class Claims:
    """Indexes `0..count-1` handed out in runs to forked workers, each taking the next run when it is free
    (`runs()`): the workers end together however the work is spread, where slices dealt out beforehand end when
    the slowest does. Guided: a run is a share of what is left (`1 / (SHARE * workers)`, at least one), so the
    first runs are long and each worker takes neighbouring indexes (neighbouring tools share definitions, which
    its memos then hold once), and the last ones short. Made before forking (the counter is shared memory)."""

    SHARE = 4
    """Each run is `1 / (SHARE * workers)` of what is left."""

    def __init__(self, count: int, workers: int) -> None:
        self._count, self._divisor = count, max(1, self.SHARE * workers)
        self._next = multiprocessing.get_context("fork").Value("q", 0)

    def take(self) -> range:
        """The next run (empty once every index is taken)."""
        with self._next.get_lock():
            start = self._next.value
            end = min(self._count, start + max(1, (self._count - start) // self._divisor))
            self._next.value = end
        return range(start, end)

    def runs(self) -> Iterator[range]:
        while taken := self.take():
            yield taken


def _run_in_background(function: Callable[[], object], path: Path, budget_mb: int) -> None:
    limits.cap_worker(budget_mb)
    with path.open("wb") as out:  # streamed: a result of hundreds of MB is never one `bytes` here either
        try:
            pickle.dump((True, function()), out, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # handed to the parent, which raises it
            out.seek(0)
            out.truncate()
            try:
                pickle.dump((False, exc), out, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # one that does not pickle still fails the parent, by name
                out.seek(0)
                out.truncate()
                pickle.dump((False, RuntimeError(f"{type(exc).__name__}: {exc}")), out)
