"""Benchmark (not a test): the largest real API and a synthetic series, wall time, CPU time and peak memory of the
whole process tree (issues 12 and 27).

    .venv/bin/python bench/bench_scale.py [--spec PATH] [--series 1000,2000,4000,8000,16000,22000] [--no-peer]
                                          [--no-graph] [--doubled] [--skip-full] [--series-codegen]
                                          [--peer-cap-gb 6] [--timeout 900]

Cases, each in a fresh process, in one run:
- Microsoft Graph v1.0 (`../shared/corpus/openapi/microsoft-graph-v1.0.json`, 20 MB, 11,422 operations):
  `toolc compile` full (four targets + stubs + router), `--no-codegen` (four targets), catalog only
  (`--target none --no-codegen`). Targets (issue 27): full <= 30 s and <= 1.2 GB; --no-codegen <= 12 s.
- with `--doubled`, Graph twice over (`doubled`: every path again under `/x2`, every component again as
  `x2.<name>`, operationIds with `_x2`: 22,844 operations, 41 MB, nothing shared between the two halves),
  `--no-codegen` and catalog only, beside Graph itself: twice the document should cost twice as much, no more
  (issue 27 measured a 22,361-operation document at 3.5 times an 11k one).
- FastMCP 4.1.2 `from_openapi` + `list_tools()` on the same document, in its own venv (`harness.peer_venv`), with
  its address space capped (setrlimit RLIMIT_AS in the child, `--peer-cap-gb`) so that it cannot take the machine
  down: it ends in MemoryError (or the timeout) instead.
- the synthetic generator (`tests/support/synthetic.py`) at N = 1k, 2k, 4k, 8k, 16k and 22k operations,
  `--no-codegen` and catalog only (and full with `--series-codegen`), printed as a table per case with time, CPU
  and memory per 1,000 operations and each size's cost over the one before it against its size over the one
  before: growth is linear when the two ratios match (time/N and memory/N stay flat).

Memory is the peak of the proportional set size (PSS) summed over the process and all its descendants, sampled
every 0.1 s from /proc/<pid>/smaps_rollup: `ru_maxrss` sees one process at a time and misses workers that run
side by side, and RSS counts the pages forked workers share with their parent once per process. CPU is user +
system seconds of the process and every worker it waited for (`RUSAGE_CHILDREN`): on a machine other jobs
load, the steadier figure.

Sampling is not free: one read of smaps_rollup walks the process's page tables (about 3 ms for a 1 GB process,
holding its memory-map lock meanwhile), so with three processes at 10 Hz the sampler takes a tenth of a core from
a compile that uses both. Each toolc case therefore runs twice: once unsampled, for its wall and CPU time, and
once sampled, for its peak (whose own wall time is shown too). The peer runs once, sampled: it does not finish.
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
from typing import Any

from harness import FASTMCP_RUN, ROOT, peer_venv, precompile

sys.path.insert(0, str(ROOT))
from tests.support.synthetic import SERIES, synthetic_openapi

TOOLC = ROOT / ".venv" / "bin" / "toolc"
GRAPH = ROOT.parent.parent / "shared" / "corpus" / "openapi" / "microsoft-graph-v1.0.json"
if not GRAPH.exists():
    GRAPH = Path("/work/shared/corpus/openapi/microsoft-graph-v1.0.json")
GOALS = {"full": (30.0, 1.2 * 1024), "no-codegen": (12.0, 1024.0)}
"""Case → (wall s, peak PSS MB) that issue 27 asks of Graph."""


@dataclass
class Run:
    name: str
    wall_s: float
    peak_pss_mb: float
    returncode: int
    note: str = ""
    sampled_wall_s: float | None = None
    """The wall time of the run that sampled memory (`wall_s` is then that of an unsampled run)."""
    cpu_s: float = 0.0
    """User + system seconds of the process and the workers it waited for (of the unsampled run)."""


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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # cases run one at a time: the delta is this one's
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stop.set()
    if sample:
        sampler.join()
    lines = [line for line in (stderr or b"").decode(errors="replace").splitlines() if line.strip()]
    if not note and process.returncode != 0:
        note = (lines[-1] if lines else stdout.decode(errors="replace").strip()[-200:])[:160]
    elif not note and stdout.strip().startswith(b"{"):
        note = stdout.decode().strip()[:160]  # the peer's own count of tools and bytes
    return Run(name, wall, peak / 1024, process.returncode, note, cpu_s=cpu)


def print_table(rows: list[Run]) -> None:
    print(f"{'case':52} {'wall s':>8} {'CPU s':>8} {'sampled s':>10} {'peak PSS MB':>12} {'exit':>5}  note")
    for row in rows:
        sampled = f"{row.sampled_wall_s:10.1f}" if row.sampled_wall_s is not None else f"{'':>10}"
        print(f"{row.name:52} {row.wall_s:8.1f} {row.cpu_s:8.1f} {sampled} {row.peak_pss_mb:12.0f} "
              f"{row.returncode:5}  {row.note}")


def print_growth(title: str, series: list[tuple[int, Run]]) -> None:
    """One case over growing sizes: per 1,000 operations, and each size over the one before it (cost ratio
    against size ratio: equal when growth is linear)."""
    print(f"\n{title}: per 1,000 operations; x prev = this size's cost over the previous size's")
    print(f"{'operations':>10} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'s/1k':>7} {'CPU s/1k':>9} {'MB/1k':>7} "
          f"{'size x prev':>12} {'CPU x prev':>11} {'MB x prev':>10}")
    previous: tuple[int, Run] | None = None
    for size, row in series:
        ratios = f"{'':>12} {'':>11} {'':>10}"
        if previous is not None and previous[1].cpu_s and previous[1].peak_pss_mb:
            ratios = (f"{size / previous[0]:12.2f} {row.cpu_s / previous[1].cpu_s:11.2f} "
                      f"{row.peak_pss_mb / previous[1].peak_pss_mb:10.2f}")
        per = 1000 / size
        print(f"{size:10,} {row.wall_s:8.1f} {row.cpu_s:8.1f} {row.peak_pss_mb:8.0f} {row.wall_s * per:7.2f} "
              f"{row.cpu_s * per:9.2f} {row.peak_pss_mb * per:7.1f} {ratios}{'  exit ' + str(row.returncode) if row.returncode else ''}")
        previous = (size, row)


def doubled(document: dict[str, Any]) -> dict[str, Any]:
    """`document` twice over, nothing shared between the halves: every path again under `/x2`, every component
    again as `x2.<name>` (its `$ref`s renamed with it), every operationId again with `_x2`. Twice the work for a
    compiler that is linear in its input."""
    half = json.dumps({"paths": document.get("paths", {}), "components": document.get("components", {})})
    for kind in document.get("components", {}):
        half = half.replace(f'"#/components/{kind}/', f'"#/components/{kind}/x2.')
    copy = json.loads(half)
    result: dict[str, Any] = json.loads(json.dumps(document))
    for path, item in copy["paths"].items():
        for operation in item.values() if isinstance(item, dict) else ():
            if isinstance(operation, dict) and isinstance(operation.get("operationId"), str):
                operation["operationId"] += "_x2"
        result["paths"][f"/x2{path}"] = item
    for kind, entries in copy["components"].items():
        result["components"][kind].update({f"x2.{name}": value for name, value in entries.items()})
    return result


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
                  timed.note or sampled.note, sampled_wall_s=sampled.wall_s, cpu_s=timed.cpu_s)
        if report.exists():
            files = json.loads(report.read_text()).get("files", {})
            biggest = sorted(files.items(), key=lambda item: -item[1])[:4]
            row.note += ", ".join(f"{path} {size / 1e6:.0f} MB" for path, size in biggest)
        rows.append(row)
    return rows


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def operation_count(document: dict[str, Any]) -> int:
    return sum(1 for item in document.get("paths", {}).values() if isinstance(item, dict)
               for method in item if method in _METHODS)


def _by_case(rows: list[Run], size: int) -> dict[str, tuple[int, Run]]:
    return {row.name.split("(")[-1].rstrip(")"): (size, row) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=GRAPH)
    parser.add_argument("--series", default=",".join(str(n) for n in SERIES))
    parser.add_argument("--series-codegen", action="store_true", help="also the full compile for the series")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--no-graph", action="store_true")
    parser.add_argument("--doubled", action="store_true", help="also the document twice over (`doubled`)")
    parser.add_argument("--skip-full", action="store_true", help="the real document without its full compile")
    parser.add_argument("--peer-cap-gb", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    precompile()
    rows: list[Run] = []
    growth: dict[str, list[tuple[int, Run]]] = {}
    with tempfile.TemporaryDirectory(prefix="toolc-bench-scale-") as tmp:
        scratch = Path(tmp)
        if not args.no_graph or args.doubled:
            graph_rows = compile_cases(args.spec, "graph", scratch, full=not args.skip_full, timeout=args.timeout)
            for row in graph_rows:
                case = row.name.split("(")[-1].rstrip(")")
                if case in GOALS:
                    wall, mb = GOALS[case]
                    verdict = "meets" if row.returncode == 0 and row.wall_s <= wall and row.peak_pss_mb <= mb \
                        else "MISSES"
                    row.note = f"{verdict} <= {wall:.0f} s, <= {mb:.0f} MB; " + row.note
            rows += graph_rows
            if args.doubled:
                document = json.loads(args.spec.read_bytes())
                twice = doubled(document)
                spec = scratch / "graph-x2.json"
                spec.write_text(json.dumps(twice))
                doubled_rows = compile_cases(spec, "graph x2", scratch, full=False, timeout=args.timeout)
                rows += doubled_rows
                one, two = _by_case(graph_rows, operation_count(document)), \
                    _by_case(doubled_rows, operation_count(twice))
                for case in two:
                    growth[f"graph and graph x2, {case}"] = [one[case], two[case]]
            if not args.no_peer:
                python = peer_venv("fastmcp", ["fastmcp==4.1.2"])
                script = scratch / "fastmcp_run.py"
                script.write_text(FASTMCP_RUN)
                rows.append(run(f"graph: FastMCP from_openapi (cap {args.peer_cap_gb:g} GB)",
                                [str(python), str(script), str(args.spec)],
                                cap_bytes=int(args.peer_cap_gb * 2**30), timeout=args.timeout))
        for size in [int(n) for n in args.series.split(",") if n]:
            spec = scratch / f"synthetic-{size}.json"
            spec.write_text(json.dumps(synthetic_openapi(size)))
            for case, found in _by_case(compile_cases(spec, f"synthetic N={size}", scratch,
                                                      full=args.series_codegen, timeout=args.timeout), size).items():
                rows.append(found[1])
                growth.setdefault(f"synthetic series, {case}", []).append(found)
    print_table(rows)
    for title, series in growth.items():
        print_growth(title, series)


if __name__ == "__main__":
    main()
