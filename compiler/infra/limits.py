"""The resource limits every compile runs under (DESIGN.md decision 10), and their diagnostic codes.

Each limit has a documented default that the project file's `limits:` section can raise (or lower):

    limits:
      max_document_mb: 64        # TC130  a document bigger than this is not read
      max_depth: 64              # TC131  objects and arrays nested deeper than this (checked before any recursion)
      max_alias_nodes: 100000    # TC132  YAML aliases may stand for at most this many nodes in all
      max_number_length: 100     # TC134  a YAML number written with more characters than this
      max_identifier_length: 80  # TC612  longer names are cut (with a hash) before code generation
      memory_mb: 4096            # TC139  address space a compile may add, and each worker process; 0 = unbounded

The memory budget is enforced by checks: before a document is read (its size times `PARSE_FACTOR` must fit),
after each stage of the pipeline, and in each model-generator worker (an RLIMIT_AS of its own); a hard
RLIMIT_AS of `BACKSTOP` budgets stops a runaway inside one stage (see `memory_budget`).

The values in force are a context variable, set by `pipeline.compile_project` for the duration of one compile
(`use(limits)`); code that has no project at hand (the config loader, tests, the fuzz bench) gets the defaults.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import resource
import signal
import sys
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

DOCUMENT_TOO_BIG = "TC130"
NESTING_TOO_DEEP = "TC131"
ALIAS_BUDGET = "TC132"
NON_JSON_TAG = "TC133"
NUMBER_TOO_LONG = "TC134"
NON_STRING_KEY = "TC135"
NOT_FINITE = "TC136"
INVALID_TEXT = "TC137"
OUT_OF_MEMORY = "TC139"


class Limits(BaseModel):
    """The `limits:` section of the project file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_document_mb: float = Field(default=64, gt=0)
    """Size of one input document (JSON or YAML), in MiB."""
    max_depth: int = Field(default=64, ge=8, le=120)
    """Objects and arrays nested in one document. Capped at 120: orjson, which writes every output file,
    refuses more than 254 levels, and resolution and the provider wrappers may add to a schema's depth."""
    max_alias_nodes: int = Field(default=100_000, ge=0)
    """Nodes that YAML aliases stand for, all together (a "billion laughs" document stands for 10^9)."""
    max_number_length: int = Field(default=100, gt=0)
    """Characters in one YAML number (Python refuses to read integers of more than 4,300 digits)."""
    max_identifier_length: int = Field(default=80, ge=16)
    """Characters in a generated Python name (function, class or field); a longer name is cut and hashed."""
    memory_mb: int = Field(default=4096, ge=0)
    """Address space one compile may add to what the process already holds, in MiB (0: no budget)."""

    @property
    def max_document_bytes(self) -> int:
        return int(self.max_document_mb * 1024 * 1024)


DEFAULT_LIMITS = Limits()
_CURRENT: contextvars.ContextVar[Limits] = contextvars.ContextVar("toolc_limits", default=DEFAULT_LIMITS)


def current() -> Limits:
    return _CURRENT.get()


@contextlib.contextmanager
def use(limits: Limits) -> Iterator[Limits]:
    token = _CURRENT.set(limits)
    try:
        yield limits
    finally:
        _CURRENT.reset(token)


def _address_space() -> int | None:
    """Bytes of address space this process maps now (Linux), or None where that cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


_CEILING: contextvars.ContextVar[int | None] = contextvars.ContextVar("toolc_memory_ceiling", default=None)
"""Address space (bytes) the running compile may reach: what the process held when it began plus its budget."""


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is memory running out: a MemoryError, or what the interpreter raises when it cannot map a
    lazily imported extension module or start a thread under an address-space limit."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    if isinstance(exc, ImportError):
        return "failed to map segment" in text or "cannot allocate memory" in text.lower()
    if isinstance(exc, RuntimeError):
        return "can't start new thread" in text
    return isinstance(exc, OSError) and exc.errno == errno.ENOMEM


def headroom() -> int | None:
    """Bytes the running compile may still add, or None when it has no budget (or it cannot be measured)."""
    ceiling, used = _CEILING.get(), _address_space()
    if ceiling is None or used is None:
        return None
    return max(0, ceiling - used)


def over_budget() -> bool:
    left = headroom()
    return left is not None and left == 0


PARSE_FACTOR = 16
"""Address space reading a document may take, per byte of it (Python objects for JSON are 5-10 times the text)."""


def room_to_parse(size: int) -> str | None:
    """None when a document of `size` bytes can be read within the memory budget, else why not. Checked before
    the parser runs, so that a document too big for the budget never starts to be read."""
    left = headroom()
    if left is None or left >= PARSE_FACTOR * size:
        return None
    return (f"reading {size / 2**20:.1f} MiB may take {PARSE_FACTOR * size / 2**20:.0f} MiB, and the memory budget "
            f"leaves {left / 2**20:.0f} MiB (limits.memory_mb)")


BACKSTOP = 2
"""The hard address-space limit of a compile is this many budgets above its start: the budget is enforced by
checks (before a document is read, after each stage, in each worker), and the limit only stops a runaway
inside one stage. CPython does not survive every failed allocation (threads, multiprocessing, GC), so the
checks, not the limit, are what normally report TC139."""


def _lower_limit(ceiling: int) -> tuple[int, int] | None:
    """Lower the soft RLIMIT_AS to `ceiling` (never raising it); the previous limits, or None if unchanged."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    if soft != resource.RLIM_INFINITY and soft <= ceiling:
        return None
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    return soft, hard


@contextlib.contextmanager
def memory_budget(megabytes: int) -> Iterator[None]:
    """Run a compile with a budget of `megabytes` of address space above what the process maps now.

    A no-op with a budget of 0, or where address space cannot be measured (not Linux)."""
    used = _address_space() if megabytes > 0 and sys.platform.startswith("linux") else None
    if used is None:
        yield
        return
    budget = megabytes * 1024 * 1024
    token = _CEILING.set(used + budget)
    previous = _lower_limit(used + BACKSTOP * budget)
    try:
        yield
    finally:
        if previous is not None:
            resource.setrlimit(resource.RLIMIT_AS, previous)
        _CEILING.reset(token)


def worker_budget() -> int:
    """The budget (MiB) a worker process gets: that of the running compile (0 when none)."""
    return current().memory_mb if _CEILING.get() is not None else 0


def cap_worker(megabytes: int) -> None:
    """Process-pool initializer: a worker may add `megabytes` to what it maps when it starts. Past that its
    allocations fail; a worker that dies is a broken pool, which its stage reports. A worker leaves Ctrl-C to
    the compile that started it (which stops its workers), so one interrupt prints one line, not a traceback
    per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    used = _address_space()
    if megabytes > 0 and used is not None:
        _lower_limit(used + megabytes * 1024 * 1024)
