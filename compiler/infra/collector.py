"""The cyclic garbage collector around stages that make millions of long-lived, acyclic containers."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """Pause the cyclic collector for the block, then freeze what it made (out of the collector's generations
    until the pipeline unfreezes at the end of the compile). Lowering makes next to no cyclic garbage (Microsoft
    Graph: about 1,100 objects), while its memos, records and results live until the compile ends: every
    collection meanwhile only rescanned them (Graph: 8 s of the lowering stage's parent). Nested blocks leave
    the collector to the outermost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
