"""The resource limits every compile runs under (DESIGN.md decision 10), and their diagnostic codes.

Each limit has a documented default that the project file's `limits:` section can raise (or lower):

    limits:
      max_document_mb: 64        # TC130  a document bigger than this is not read
      max_depth: 64              # TC131  objects and arrays nested deeper than this (checked before any recursion)
      max_alias_nodes: 100000    # TC132  YAML aliases may stand for at most this many nodes in all
      max_number_length: 100     # TC134  a YAML number written with more characters than this
      max_identifier_length: 80  # TC612  longer names are cut (with a hash) before code generation
      memory_mb: 4096            # TC139  address space a compile may add (workers inherit it); 0 = unbounded

The values in force are a context variable, set by `pipeline.compile_project` for the duration of one compile
(`use(limits)`); code that has no project at hand (the config loader, tests, the fuzz bench) gets the defaults.
"""

from __future__ import annotations

import contextlib
import contextvars
import resource
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


@contextlib.contextmanager
def memory_budget(megabytes: int) -> Iterator[None]:
    """Lower the soft RLIMIT_AS to what the process maps now plus `megabytes` for the block, then restore it.

    Past it an allocation fails with MemoryError (the pipeline turns that into TC139) instead of taking the
    machine down; forked workers inherit the limit. A no-op where address space cannot be measured or limited
    (not Linux), with a budget of 0, or when an existing limit is already tighter."""
    used = _address_space() if megabytes > 0 and sys.platform.startswith("linux") else None
    if used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = used + megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft <= wanted:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
