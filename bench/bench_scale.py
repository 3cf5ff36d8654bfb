"""Benchmark (not a test): the largest real API and a synthetic series, wall time and peak memory of the whole
process tree (issue 12).

    .venv/bin/python bench/bench_scale.py [--spec PATH] [--series 1000,2000,4000,8000] [--no-peer] [--no-graph]
                                          [--skip-full] [--series-codegen] [--peer-cap-gb 6] [--timeout 900]

Cases, each in a fresh process, in one run:
- Microsoft Graph v1.0 (`../shared/corpus/openapi/microsoft-graph-v1.0.json`, 20 MB, 11,422 operations):
  `toolc compile` full (four targets + stubs + router), `--no-codegen` (four targets), catalog only
  (`--target none --no-codegen`). Targets: full <= 60 s and <= 2 GB; --no-codegen <= 25 s and <= 1 GB.
- FastMCP 4.1.2 `from_openapi` + `list_tools()` on the same document, in its own venv (`harness.peer_venv`), with
  its address space capped (setrlimit RLIMIT_AS in the child, `--peer-cap-gb`) so that it cannot take the machine
  down: it ends in MemoryError (or the timeout) instead.
- the synthetic generator (`tests/support/synthetic.py`) at N = 1k, 2k, 4k, 8k operations, `--no-codegen` (and
  full with `--series-codegen`), to show growth with N: time/N and memory/N should stay flat.

Memory is the peak of the proportional set size (PSS) summed over the process and all its descendants, sampled
every 0.1 s from /proc/<pid>/smaps_rollup: `ru_maxrss` sees one process at a time and misses workers that run
side by side, and RSS counts the pages forked workers share with their parent once per process.

Sampling is not free: one read of smaps_rollup walks the process's page tables (about 3 ms for a 1 GB process,
holding its memory-map lock meanwhile), so with three processes at 10 Hz the sampler takes a tenth of a core from
a compile that uses both. Each toolc case therefore runs twice: once unsampled, for its wall time, and once
sampled, for its peak (whose own wall time is shown too). The peer runs once, sampled: it does not finish.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness import FASTMCP_RUN, ROOT, peer_venv, precompile

sys.path.insert(0, str(ROOT))
from tests.support.synthetic import SERIES, synthetic_openapi

TOOLC = ROOT / ".venv" / "bin" / "toolc"
GRAPH = ROOT.parent.parent / "shared" / "corpus" / "openapi" / "microsoft-graph-v1.0.json"
if not GRAPH.exists():
    GRAPH = Path("/work/shared/corpus/openapi/microsoft-graph-v1.0.json")
GOALS = {"full": (60.0, 2048.0), "no-codegen": (25.0, 1024.0)}


@dataclass
class Run:
    name: str
    wall_s: float
    peak_pss_mb: float
    returncode: int
    note: str = ""
    sampled_wall_s: float | None = None
    """The wall time of the run that sampled memory (`wall_s` is then that of an unsampled run)."""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
    except OSError:
        pass
    return found


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kb(root: int) -> int:
    """PSS of `root` and every descendant now alive."""
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _pss_kb(pid)
        stack.extend(_children(pid))
    return total


def run(name: str, command: list[str], *, cap_bytes: int | None = None, timeout: float = 900,
        env: dict[str, str] | None = None, sample: bool = True) -> Run:
    def limit() -> None:
        if cap_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    peak = 0
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": "0", **(env or {})},
                               preexec_fn=limit)
    stop = threading.Event()

    def sample_tree() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_pss_kb(process.pid))
            stop.wait(0.1)

    sampler = threading.Thread(target=sample_tree, daemon=True)
    if sample:
        sampler.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        note = ""
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        note = f"killed after {timeout:.0f} s"
    wall = time.perf_counter() - start
    stop.set()
    if sample:
        sampler.join()
    lines = [line for line in (stderr or b"").decode(errors="replace").splitlines() if line.strip()]
    if not note and process.returncode != 0:
        note = (lines[-1] if lines else stdout.decode(errors="replace").strip()[-200:])[:160]
    elif not note and stdout.strip().startswith(b"{"):
        note = stdout.decode().strip()[:160]  # the peer's own count of tools and bytes
    return Run(name, wall, peak / 1024, process.returncode, note)


def print_table(rows: list[Run]) -> None:
    print(f"{'case':52} {'wall s':>8} {'sampled s':>10} {'peak PSS MB':>12} {'exit':>5}  note")
    for row in rows:
        sampled = f"{row.sampled_wall_s:10.1f}" if row.sampled_wall_s is not None else f"{'':>10}"
        print(f"{row.name:52} {row.wall_s:8.1f} {sampled} {row.peak_pss_mb:12.0f} {row.returncode:5}  {row.note}")


def _compile_command(spec: Path, out: Path, report: Path, extra: list[str]) -> list[str]:
    return [str(TOOLC), "compile", str(spec), "--out", str(out), "--report", str(report), "--quiet", *extra]


def compile_cases(spec: Path, label: str, scratch: Path, *, full: bool = True, timeout: float = 900) -> list[Run]:
    """Each case twice: unsampled for the wall time, then sampled for the peak memory (see the module doc)."""
    cases = [("full", []), ("no-codegen", ["--no-codegen"]), ("catalog only", ["--target", "none", "--no-codegen"])]
    rows: list[Run] = []
    for case, extra in cases:
        if case == "full" and not full:
            continue
        slug = case.replace(" ", "-")
        report = scratch / "reports" / f"{label}-{slug}.json"

        name = f"{label}: toolc compile ({case})"
        timed = run(name, _compile_command(spec, scratch / f"{label}-{slug}-timed", report, extra), timeout=timeout,
                    sample=False)
        sampled = run(name, _compile_command(spec, scratch / f"{label}-{slug}", report, extra), timeout=timeout)
        row = Run(name, timed.wall_s, sampled.peak_pss_mb, timed.returncode or sampled.returncode,
                  timed.note or sampled.note, sampled_wall_s=sampled.wall_s)
        if report.exists():
            files = json.loads(report.read_text()).get("files", {})
            biggest = sorted(files.items(), key=lambda item: -item[1])[:4]
            row.note += ", ".join(f"{path} {size / 1e6:.0f} MB" for path, size in biggest)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=GRAPH)
    parser.add_argument("--series", default=",".join(str(n) for n in SERIES))
    parser.add_argument("--series-codegen", action="store_true", help="also the full compile for the series")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--no-graph", action="store_true")
    parser.add_argument("--skip-full", action="store_true", help="the real document without its full compile")
    parser.add_argument("--peer-cap-gb", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    precompile()
    rows: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="toolc-bench-scale-") as tmp:
        scratch = Path(tmp)
        if not args.no_graph:
            rows += compile_cases(args.spec, "graph", scratch, full=not args.skip_full, timeout=args.timeout)
            for row in rows:
                case = row.name.split("(")[-1].rstrip(")")
                if case in GOALS:
                    wall, mb = GOALS[case]
                    verdict = "meets" if row.returncode == 0 and row.wall_s <= wall and row.peak_pss_mb <= mb \
                        else "MISSES"
                    row.note = f"{verdict} <= {wall:.0f} s, <= {mb:.0f} MB; " + row.note
            if not args.no_peer:
                python = peer_venv("fastmcp", ["fastmcp==4.1.2"])
                script = scratch / "fastmcp_run.py"
                script.write_text(FASTMCP_RUN)
                rows.append(run(f"graph: FastMCP from_openapi (cap {args.peer_cap_gb:g} GB)",
                                [str(python), str(script), str(args.spec)],
                                cap_bytes=int(args.peer_cap_gb * 2**30), timeout=args.timeout))
        series: list[tuple[int, Run]] = []
        for size in [int(n) for n in args.series.split(",") if n]:
            spec = scratch / f"synthetic-{size}.json"
            spec.write_text(json.dumps(synthetic_openapi(size)))
            for found in compile_cases(spec, f"synthetic N={size}", scratch, full=args.series_codegen,
                                       timeout=args.timeout):
                rows.append(found)
                series.append((size, found))
    print_table(rows)
    if series:
        print("\nsynthetic series: per 1,000 operations")
        print(f"{'case':52} {'s / 1k ops':>11} {'MB / 1k ops':>12}")
        for size, row in series:
            print(f"{row.name:52} {row.wall_s * 1000 / size:11.2f} {row.peak_pss_mb * 1000 / size:12.1f}")


if __name__ == "__main__":
    main()
