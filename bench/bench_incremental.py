"""Benchmark (not a test): incremental compiles (issue 27), each figure beside its floor in the same run.

    .venv/bin/python bench/bench_incremental.py [--spec PATH] [--runs 3] [--no-codegen] [--no-sample]

In a scratch folder, on a copy of the document (default Microsoft Graph v1.0, `bench_scale.GRAPH`):
- floor: a fresh Python that loads and dumps the document with `json` (median of `--runs`);
- cold: `toolc compile` with no cache (once; the cache it leaves is what the rest reuse);
- warm: the same compile again, nothing changed (median);
- one description: one operation's description changed before each run (a different text each time), then
  compiled (median); after the last, a compile from nothing of the same document into a folder of its own, and
  the two output folders compared byte for byte (`identical: yes` or the differing files);
- `toolc check` on the unchanged project (median; not with `--no-codegen`: `check PATH` checks a full compile).
Peak memory is the PSS summed over the process tree (`bench_scale.run`, sampled every 0.1 s; `--no-sample`
leaves it out, the sampler costs a little CPU). Everything runs under `nice`: other jobs share the cores, so the
load average is printed beside the figures, and each row's CPU seconds (with the workers) in its note.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import statistics
import tempfile
from pathlib import Path

from bench_scale import GRAPH, TOOLC, Run, run
from harness import PYTHON, precompile

FLOOR = "import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    json.dumps(json.load(f))\n"


def _nice(command: list[str]) -> list[str]:
    return ["nice", *command]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(name: str, command: list[str], *, sample: bool) -> tuple[Run, float]:
    """One run and its CPU seconds (the process and the workers it waited for): steadier than wall time while
    other jobs load the machine."""
    before = _children_cpu()
    found = run(name, _nice(command), sample=sample)
    return found, _children_cpu() - before


def median_run(name: str, command: list[str], runs: int, *, sample: bool, before: object = None) -> Run:
    found: list[Run] = []
    cpu: list[float] = []
    for index in range(runs):
        if callable(before):
            before(index)
        one, seconds = timed_run(name, command, sample=sample)
        found.append(one)
        cpu.append(seconds)
    failed = next((r for r in found if r.returncode != 0), None)
    return Run(name, statistics.median(r.wall_s for r in found), max(r.peak_pss_mb for r in found),
               failed.returncode if failed else 0, failed.note if failed else f"CPU {statistics.median(cpu):.2f} s")


def change_description(spec: Path, index: int) -> str:
    """Give the first operation (in document order) a new description; returns its operationId."""
    document = json.loads(spec.read_bytes())
    for methods in document["paths"].values():
        for operation in methods.values():
            if isinstance(operation, dict) and "operationId" in operation:
                operation["description"] = f"Changed for the incremental bench, run {index}."
                spec.write_text(json.dumps(document))
                return str(operation["operationId"])
    raise SystemExit("no operation with an operationId")


def differing(left: Path, right: Path) -> list[str]:
    found: list[str] = []
    compared = filecmp.dircmp(left, right)
    stack = [("", compared)]
    while stack:
        prefix, node = stack.pop()
        found += [prefix + name for name in node.left_only + node.right_only + node.funny_files]
        _match, mismatch, errors = filecmp.cmpfiles(node.left, node.right, node.common_files, shallow=False)
        found += [prefix + name for name in mismatch + errors]
        stack += [(f"{prefix}{name}/", sub) for name, sub in node.subdirs.items()]
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=GRAPH)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-codegen", action="store_true", help="four targets without stubs and router")
    parser.add_argument("--no-sample", action="store_true", help="no memory sampling")
    args = parser.parse_args()
    precompile()
    sample = not args.no_sample
    extra = ["--no-codegen"] if args.no_codegen else []
    rows: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="toolc-bench-incremental-") as tmp:
        scratch = Path(tmp)
        spec = scratch / "api.json"
        shutil.copyfile(args.spec, spec)
        out, clean_out = scratch / "out", scratch / "clean" / "out"
        compile_ = [str(TOOLC), "compile", str(spec), "--out", str(out), "--quiet", *extra]
        rows.append(median_run("floor: json.load + json.dumps", [PYTHON, "-c", FLOOR, str(spec)], args.runs,
                               sample=False))
        rows.append(median_run("cold compile (no cache)", compile_, 1, sample=sample))
        rows.append(median_run("warm compile (nothing changed)", compile_, args.runs, sample=sample))
        changed: list[str] = []
        rows.append(median_run("one operation's description changed", compile_, args.runs, sample=sample,
                               before=lambda index: changed.append(change_description(spec, index))))
        clean = median_run("compile from nothing, same document",
                           [str(TOOLC), "compile", str(spec), "--out", str(clean_out), "--quiet", *extra], 1,
                           sample=False)
        rows.append(clean)
        if not args.no_codegen:  # `toolc check PATH` checks a full compile: the project's default
            check = [str(TOOLC), "check", str(spec), "--out", str(out)]
            rows.append(median_run("toolc check, nothing changed", check, args.runs, sample=False))
        diff = differing(out, clean_out) if clean.returncode == 0 else ["(the clean compile failed)"]
    floor = rows[0].wall_s
    print(f"{args.spec.name}, {'--no-codegen' if args.no_codegen else 'full compile (4 targets, stubs, router)'}; "
          f"median of {args.runs}; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'case':44} {'wall s':>8} {'x floor':>8} {'peak PSS MB':>12} {'exit':>5}  note")
    for row in rows:
        peak = f"{row.peak_pss_mb:12.0f}" if row.peak_pss_mb else f"{'':>12}"
        print(f"{row.name:44} {row.wall_s:8.2f} {row.wall_s / floor:8.1f} {peak} {row.returncode:5}  {row.note}")
    print(f"changed operation: {changed[-1] if changed else '-'}; output after the change identical to a compile "
          f"from nothing: {'yes' if not diff else 'NO: ' + ', '.join(diff[:10])}")


if __name__ == "__main__":
    main()
