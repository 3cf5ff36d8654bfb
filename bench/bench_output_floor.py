"""The floor of issue 27 measured on a compile's output instead of its input.

    .venv/bin/python bench/bench_output_floor.py [--runs 3] DOCUMENT [DOCUMENT ...]

For each document: compile it (all four targets, no stubs) into a scratch folder, then time, in fresh processes,
the issue's floor (`json.load` + `json.dumps` of the document) beside the same over every JSON file the compile
wrote (catalog.json, schemas/, toolsets and deferred forms; not the lock or the cache). A compile cannot cost less
than writing its output, and its output is several times its input (four targets, toolsets, deferred forms):
this says how much of a ratio to the input's floor the output alone takes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import PYTHON, ROOT

TOOLC = ROOT / ".venv" / "bin" / "toolc"
FLOOR = "import json, sys\nfor path in sys.argv[1:]:\n    with open(path, 'rb') as f:\n        json.dumps(json.load(f))\n"


def output_files(out: Path) -> list[Path]:
    return sorted(path for path in out.rglob("*.json") if path.is_file())


def timed(paths: list[Path], runs: int) -> float:
    """Median wall seconds of a fresh Python loading and dumping `paths`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([PYTHON, "-c", FLOOR, *map(str, paths)], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'document':<40} {'input MB':>9} {'floor s':>8} {'output MB':>10} {'output floor s':>15} {'ratio':>6}")
    for document in args.documents:
        scratch = Path(tempfile.mkdtemp(prefix="toolc-output-floor-"))
        try:
            out = scratch / "out"
            subprocess.run([str(TOOLC), "compile", str(document), "--out", str(out), "--quiet", "--target", "all",
                            "--no-codegen"], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            files = output_files(out)
            size = sum(path.stat().st_size for path in files)
            floor, output_floor = timed([document], args.runs), timed(files, args.runs)
            print(f"{document.name:<40} {document.stat().st_size / 1e6:>9.1f} {floor:>8.2f} {size / 1e6:>10.1f} "
                  f"{output_floor:>15.2f} {output_floor / floor:>5.1f}x")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
