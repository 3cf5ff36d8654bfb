"""The cyclic garbage collector paused around work that allocates many objects and makes no reference cycle.

The collector runs after every few hundred net allocations, and a stage that builds millions of long-lived,
acyclic containers (a decoded cache, a worker's pickled result, an `ast` tree, lowering's memos) sets off
collections that only rescan what it is building. Two ways out, one per kind of result:

- `collector_paused`: for work whose result is dropped or short-lived. Checking Microsoft Graph's generated models
  (21 MB, `literals.check_module`, in a process shaped like a model worker) took 7.6 s of CPU with the collector
  running and 5.5 s with it paused; the model generator's run over a chunk is paused too, and collected once at its
  end (GitHub's six chunks: 6.5 s of CPU with the collector running, 6.0 s so, 2 MB more at the peak). Those
  figures are for a process whose older objects the collector still scans (models made in the compiling process:
  one chunk, one core, `TOOLC_JOBS=1`: Stripe's python/ stage 7.3 → 6.9 s of CPU); forked workers start from a
  heap `gc.freeze()` took out of the collector's reach, and there the pauses measured no difference.
- `paused_then_frozen`: for work whose result lives until the compile ends (lowering, decoded caches, workers'
  results): what the block made is then frozen out of the collector's generations, as the pipeline freezes the
  catalog, and `pipeline._compile` unfreezes everything when the compile ends. Microsoft Graph's lowering made
  about 1,100 objects of cyclic garbage, while every collection meanwhile rescanned its memos and results (8 s of
  the lowering stage's parent).
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


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """`collector_paused`, then what is alive frozen out of the collector's generations (until the pipeline
    unfreezes at the end of the compile). Nested blocks leave re-enabling the collector to the outermost; each
    freezes as it ends, which is cheap."""
    with collector_paused():
        try:
            yield
        finally:
            gc.freeze()
