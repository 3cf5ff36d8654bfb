"""Fuzz (not a test): hostile documents through the loader, the resolver and the OpenAPI / MCP readers.

    .venv/bin/python bench/fuzz_loader.py [--examples 3000] [--seed N | --derandomize] [--cap-mb 2048]

Inputs come from hypothesis (`tests/support/fuzz.py`: the repository's fixtures mutated byte-wise and
structurally). Each input must end in diagnostics: an exception is a crash (what `toolc` would report as
TC999). The process runs with its address space capped (`resource.setrlimit`), so a resource bomb fails the
run instead of the machine. Prints one JSON line: inputs tried, crashes, the diagnostic codes seen, time.
Exit status 1 when anything crashed. tests/test_hostile_limits.py runs a short derandomized slice of it.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import resource
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.support.fuzz import DOCUMENTS, run_one  # noqa: E402


def fuzz(examples: int, chosen_seed: int | None, derandomize: bool) -> dict[str, object]:
    codes: collections.Counter[str] = collections.Counter()
    crashes: list[str] = []
    tried = 0

    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck))
    @given(DOCUMENTS)
    def target(document: tuple[bytes, str]) -> None:
        nonlocal tried
        tried += 1
        data, suffix = document
        try:
            codes.update(run_one(data, suffix))
        except Exception as exc:  # a crash: recorded, and the run goes on to count them all
            if len(crashes) < 5:
                crashes.append(f"{type(exc).__name__}: {exc} (suffix {suffix!r}, {len(data)} bytes, "
                               f"head {data[:120]!r})\n{traceback.format_exc(limit=-4)}")
            else:
                crashes.append(type(exc).__name__)

    runner = target if chosen_seed is None else seed(chosen_seed)(target)
    started = time.perf_counter()
    runner()
    return {"inputs": tried, "crashes": len(crashes), "first_crashes": crashes[:5], "seed": chosen_seed,
            "derandomize": derandomize, "codes": dict(sorted(codes.items())),
            "seconds": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--derandomize", action="store_true")
    parser.add_argument("--cap-mb", type=int, default=2048, help="address-space cap of this process (0: none)")
    args = parser.parse_args()
    if args.cap_mb:
        resource.setrlimit(resource.RLIMIT_AS, (args.cap_mb * 2**20, args.cap_mb * 2**20))
    chosen = None if args.derandomize else (args.seed if args.seed is not None else random.randrange(2**32))
    report = fuzz(args.examples, chosen, args.derandomize)
    print(json.dumps(report))
    return 1 if report["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
