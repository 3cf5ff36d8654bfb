"""The cyclic garbage collector paused around work that allocates many objects at once.

The collector runs after every few hundred net allocations, and an `ast` tree is millions of allocations that
all stay alive until the tree is done: its collections keep rescanning the growing tree for garbage it does not
hold. Checking Microsoft Graph's generated models (21 MB, `literals.check_module`, in a process shaped like a
model worker) took 7.6 s of CPU with the collector running and 5.5 s with it paused. An `ast` tree and a code object hold no reference
cycle, so pausing loses nothing. The model generator's run over a chunk is paused too, and collected once at its
end (GitHub's six chunks: 6.5 s of CPU with the collector running, 6.0 s so, 2 MB more at the peak).

Those figures are for a process whose older objects the collector still scans: models made in the compiling
process (one chunk, one core, `TOOLC_JOBS=1`: Stripe's python/ stage 7.3 → 6.9 s of CPU). Forked workers start
from a heap `gc.freeze()` took out of the collector's reach, and there the pauses measured no difference
(Microsoft Graph's 57 chunks: 42.8 s of generator CPU either way).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, collect_after: bool = False) -> Iterator[None]:
    """No automatic collection inside the block; with `collect_after`, for work that may leave cyclic garbage,
    one collection of the youngest generation as it ends: everything the block allocated and still tracked is
    there (a paused collector moves nothing to an older one), so its garbage does not outlive it. A collector
    the caller had disabled stays disabled, and is not run."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
            if collect_after:
                gc.collect(0)
