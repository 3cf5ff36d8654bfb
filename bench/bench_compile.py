"""Benchmark (not a test): `toolc compile` on GitHub and Stripe next to the floor (json.loads + json.dumps)
and jsonref full inlining of the same files, in one run, with ratios.

    .venv/bin/python bench/bench_compile.py [--runs 3] [--targets all]
    .venv/bin/python bench/bench_compile.py --stages [--runs 3] [--jobs 1] [--spec PATH ...] [--case CASE]
                                                   [--before DIR]
    .venv/bin/python bench/bench_compile.py --fixed-costs [--before DIR] [--runs 5] [--peer-runs 1]

Targets (issue 2, catalog only: `--target none --no-codegen`): GitHub ≤ 1.5 s and ≤ 250 MB; Stripe ≤ 0.7 s.

`--stages` (issue 27) profiles one compile per stage instead: in a fresh process, the imports `toolc compile`
makes, then each stage of the pipeline as its `Progress` reports it (reading sources, catalog.json, schemas/,
the fit, python/, toolc.lock) and writing the output, for three cases per document: catalog only, four targets
(catalog.json is then written inside schemas/, beside the lowering worker, up to `slices.HERE_MAX_TOOLS` tools)
without codegen, and the full compile. Each figure is the best of `--runs`, wall and CPU seconds (CPU counts
this process and the workers it forked and waited for: on a busy machine, CPU is the steadier figure). What the
process spends outside the stages (interpreter start-up, removing the spool folder, the process's exit) is the
whole run's wall time minus the stages. The run ends as `toolc compile` does, without the interpreter's teardown:
freeing the catalog object by object (0.13 s on GitHub, 1.4 s on Microsoft Graph) was counted here as "start-up +
exit" though `toolc` never pays it. `--case` keeps only the cases named; `--before DIR` profiles that checkout's
compile right after this one's, case by case (the same load for both).

`--stages --changed` times the stages of a recompile instead: the document compiled once (not timed), then before
each run one operation's description changed and the same output folder compiled again, its cache in place.

`--fixed-costs` (issue 27) prints the issue's table: toolc on GitHub and Stripe (four targets, no stubs), Stripe's
catalog only and `toolc --help`, each beside the floor (a fresh Python that loads and dumps the same document with
`json`) and FastMCP `from_openapi` (its venv as `bench_providers.py` makes it), all in one run; with `--before DIR`
(a checkout of an earlier commit, e.g. `git worktree add DIR main`), that toolc's figures too, run by this venv's
interpreter from DIR. Median wall and CPU seconds of fresh processes. Each compile case runs cold (a new output
folder every run: nothing to reuse) and, on the row after, warm (the lowering cache of an identical compile).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench_incremental import change_description
from harness import FASTMCP_RUN, PYTHON, ROOT, Measurement, measure, peer_venv, precompile, print_table

INPUTS = {
    "github": ROOT / "fixtures/corpus/openapi/github.json",
    "stripe": ROOT / "fixtures/corpus/openapi/stripe.json",
}

STAGE_CASES = {"catalog only": ("", False), "4 targets, no codegen": (None, False), "full": (None, True)}
"""Case → (--target value, None for the project's default of all four; codegen)."""
CHANGED = "full, one description changed"
"""With `--changed`: a full compile (not timed) leaves its cache, then before each timed run one operation's
description changes (`bench_incremental.change_description`) and the same output folder is compiled again."""

# One compile in this fresh process, timed per stage through the pipeline's own progress reports.
STAGES_RUN = r"""
import json, os, resource, sys, time

def clocks():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + children.ru_utime + children.ru_stime

start = clocks()
from pathlib import Path
import click
from compiler.cli import main
main.get_command(click.Context(main), "compile")  # what `toolc compile` imports before it runs, as it imports it
from compiler.commands.support import parse_targets
from compiler.config import Config
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.infra.progress import Progress

class StageClock(Progress):
    def __init__(self):
        self.times, self._label, self._since = {}, None, None

    def _switch(self, label):
        now = clocks()
        if self._label is not None:
            wall, cpu = self.times.get(self._label, (0.0, 0.0))
            self.times[self._label] = (wall + now[0] - self._since[0], cpu + now[1] - self._since[1])
        self._label, self._since = label, now

    def begin(self, total, label):
        self._switch(label)

    def stage(self, label):
        self._switch(label)

    def end(self):
        self._switch(None)

imported = clocks()
spec, out, targets, codegen = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
config = Config(root=Path.cwd()).model_copy(update={"codegen": codegen})
clock = StageClock()
build = compile_project(config, adhoc_inputs([spec], Path.cwd()), out_dir=out, progress=clock,
                        targets=None if targets == "-" else parse_targets(targets))
clock.end()
written = clocks()
write_build(build, out)
done = clocks()
times = {"imports": (imported[0] - start[0], imported[1] - start[1]), **clock.times,
         "write": (done[0] - written[0], done[1] - written[1])}
print(json.dumps({"tools": len(build.catalog.tools), "times": times}))
build.files.release_spool()
sys.stdout.flush()
os._exit(0)  # as `toolc compile` ends (`cli.ENDS_WITHOUT_TEARDOWN`): without freeing the catalog object by object
"""


def stage_profile(spec: Path, case: str, runs: int, jobs: str | None,
                  root: Path = ROOT) -> tuple[dict[str, tuple[float, float]], float]:
    """Best of `runs` per stage (wall s, CPU s), and the best whole-process wall time, of the toolc in `root`."""
    targets, codegen = STAGE_CASES["full" if case == CHANGED else case]
    env = {**os.environ, "PYTHONHASHSEED": "0", **({"TOOLC_JOBS": jobs} if jobs else {})}
    best: dict[str, tuple[float, float]] = {}
    best_total = float("inf")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        if case == CHANGED:  # the document is edited in place: a copy of it, and a compile that leaves a cache
            spec = Path(shutil.copyfile(spec, Path(scratch) / spec.name))
            _stage_run(spec, out, targets, codegen, env, root)
        for index in range(runs):
            if case == CHANGED:
                change_description(spec, index)
            started = time.perf_counter()  # a cold case compiles into a folder of its own each time: no cache
            folder = out if case == CHANGED else out.with_name(f"out{index}")
            times = _stage_run(spec, folder, targets, codegen, env, root)
            best_total = min(best_total, time.perf_counter() - started)
            for stage, (wall, cpu) in times.items():
                old = best.get(stage, (float("inf"), float("inf")))
                best[stage] = (min(old[0], wall), min(old[1], cpu))
    return best, best_total


def _stage_run(spec: Path, out: Path, targets: str | None, codegen: bool, env: dict[str, str],
               root: Path = ROOT) -> dict[str, tuple[float, float]]:
    run = subprocess.run([PYTHON, "-c", STAGES_RUN, str(spec), str(out), "-" if targets is None else targets,
                          "1" if codegen else "0"], capture_output=True, text=True, cwd=root, env=env, check=False)
    if run.returncode != 0:
        raise SystemExit(f"{spec.name} failed: {run.stderr[-800:]}")
    times: dict[str, tuple[float, float]] = json.loads(run.stdout.strip().splitlines()[-1])["times"]
    return times


def print_stages(name: str, case: str, stages: dict[str, tuple[float, float]], total: float) -> None:
    print(f"\n## {name}: {case} (best of runs; wall s / CPU s)")
    accounted = sum(wall for wall, _ in stages.values())
    print(f"{'stage':32} {'wall s':>8} {'CPU s':>8}")
    print(f"{'start-up + exit (run - stages)':32} {max(0.0, total - accounted):8.2f} {'':>8}")
    for stage, (wall, cpu) in stages.items():
        print(f"{stage:32} {wall:8.2f} {cpu:8.2f}")
    print(f"{'whole process':32} {total:8.2f}")


def main_stages(args: argparse.Namespace) -> None:
    specs = [Path(spec) for spec in args.spec] or list(INPUTS.values())
    roots = {"": ROOT, **({"before: ": Path(args.before).resolve()} if args.before else {})}
    for spec in specs:
        for case in [CHANGED] if args.changed else args.case or STAGE_CASES:
            for label, root in roots.items():  # one after the other, under the same load
                stages, total = stage_profile(spec, case, args.runs, args.jobs, root)
                print_stages(label + spec.name, case, stages, total)
                sys.stdout.flush()


FIXED_COST_CASES = {
    "GitHub, all four targets, no stubs": ("github", ["--no-codegen"], False),
    "GitHub, same, warm (nothing changed)": ("github", ["--no-codegen"], True),
    "Stripe, all four targets, no stubs": ("stripe", ["--no-codegen"], False),
    "Stripe, same, warm (nothing changed)": ("stripe", ["--no-codegen"], True),
    "Stripe, catalog only (`--target none --no-codegen`)": ("stripe", ["--target", "none", "--no-codegen"], False),
    "`toolc --help` (imports alone)": (None, ["--help"], False),
}
"""Case → (document, arguments, warm). A cold case compiles into a folder of its own every run: no lowering
cache (`.toolc-cache` beside the output). A warm one compiles the same folder once before the timed runs, so
every run finds the cache of an identical compile. (Until the fourth pass every case reused its folder: the
first run was cold and the median of three a warm one.)"""


def _toolc_command(args: list[str], scratch: Path) -> list[str]:
    """`python -m compiler ARGS`, run with a toolc checkout as its working folder (so its `compiler` is imported)."""
    command = [PYTHON, "-m", "compiler", *args]
    return [*command, "--out", str(scratch / "out"), "--quiet"] if args[0] == "compile" else command


def interleaved(commands: dict[str, tuple[list[str], Path]], runs: int,
                before_each: Callable[[str], None] = lambda label: None) -> dict[str, Measurement]:
    """Each command once per round, `runs` rounds, medians: on a machine other jobs load, a burst of load then
    falls on every command alike rather than on whichever ran during it. `before_each(label)` runs, untimed,
    before each run of a command."""
    samples: dict[str, list[Measurement]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, (command, cwd) in commands.items():
            before_each(label)
            samples[label].append(measure(label, command, runs=1, cwd=cwd, env={"PYTHONHASHSEED": "0"}))
    return {label: Measurement(label, statistics.median(m.wall_s for m in found),
                               statistics.median(m.rss_mb for m in found), all(m.ok for m in found),
                               next((m.note for m in found if not m.ok), ""),
                               cpu_s=statistics.median(m.cpu_s for m in found))
            for label, found in samples.items()}


def _fresh_folder(scratch: Path, label: str) -> None:
    """A cold run's output folder and its cache (`scratch/label/out`, `scratch/label/.toolc-cache`), gone."""
    shutil.rmtree(scratch / label, ignore_errors=True)


def main_fixed_costs(args: argparse.Namespace) -> None:
    roots = {"after": ROOT, **({"before": Path(args.before).resolve()} if args.before else {})}
    for root in roots.values():
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(root / "compiler")], check=True, capture_output=True)
    jsonref_python = peer_venv("jsonref", ["jsonref==1.1.0"])
    fastmcp_python = None if args.no_peers else peer_venv("fastmcp", ["fastmcp==4.1.2", "httpx"])
    print(f"{'case':55} " + " ".join(f"{label + ' s':>16}" for label in roots)
          + f" {'floor s':>8} {'ratio':>12} {'FastMCP s':>10}")
    for case, (spec, extra, warm) in FIXED_COST_CASES.items():
        path = INPUTS[spec] if spec else None
        command = ["compile", str(path), *extra] if path else extra
        with tempfile.TemporaryDirectory() as scratch:
            commands = {label: (_toolc_command(command, Path(scratch) / label), root) for label, root in roots.items()}
            if path and warm:
                for toolc, root in commands.values():
                    subprocess.run(toolc, cwd=root, check=True, capture_output=True)
            if path:
                commands["floor"] = ([str(jsonref_python), str(ROOT / "bench/peer_run.py"), "json", str(path)], ROOT)
            fresh = partial(_fresh_folder, Path(scratch)) if path and not warm else lambda label: None
            measured = interleaved(commands, args.runs, fresh)
        floor = measured.pop("floor", None)
        ours = measured
        peer = measure("fastmcp", [str(fastmcp_python), "-c", FASTMCP_RUN, str(path)], runs=args.peer_runs) \
            if path and fastmcp_python and "none" not in extra and not warm else None
        cells = " ".join(f"{m.wall_s:7.2f} ({m.cpu_s:5.2f})" if m.ok else f"{'FAILED':>16}" for m in ours.values())
        ratio = " / ".join(f"{m.wall_s / floor.wall_s:.1f}x" for m in ours.values()) if floor else ""
        print(f"{case:55} {cells} {floor.wall_s if floor else float('nan'):8.2f} {ratio:>12} "
              f"{(f'{peer.wall_s:10.2f}' if peer.ok else 'FAILED') if peer else '':>10}")
        sys.stdout.flush()
    print("(toolc: median wall s of fresh processes, run in turn, median CPU s in brackets; ratio: wall / floor, in column order)")


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="none", help="toolc --target value; 'none' = catalog only")
    parser.add_argument("--stages", action="store_true", help="time each stage of one compile instead")
    parser.add_argument("--jobs", help="TOOLC_JOBS for --stages (default: unset, every core)")
    parser.add_argument("--spec", action="append", default=[], help="a document for --stages (default: both)")
    parser.add_argument("--changed", action="store_true",
                        help="with --stages: a full recompile after one changed description, per stage")
    parser.add_argument("--fixed-costs", action="store_true", help="the table of issue 27 instead")
    parser.add_argument("--before", help="a checkout of an earlier toolc to run beside this one")
    parser.add_argument("--case", action="append", choices=list(STAGE_CASES), help="--stages: only this case")
    parser.add_argument("--peer-runs", type=int, default=1)
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    if args.fixed_costs:
        main_fixed_costs(args)
        return
    if args.stages:
        main_stages(args)
        return
    jsonref_python = peer_venv("jsonref", ["jsonref==1.1.0"])
    toolc = [PYTHON, "-m", "compiler", "compile"]
    for name, path in INPUTS.items():
        with tempfile.TemporaryDirectory() as out:
            command = [*toolc, str(path), "--out", str(Path(out) / "gen"), "--no-codegen"]
            if args.targets == "none":
                command += ["--target", ""]
            elif args.targets:
                command += ["--target", args.targets]
            rows = [
                measure(f"{name}: json.loads + json.dumps (floor)", [str(jsonref_python), str(ROOT / "bench/peer_run.py"), "json", str(path)], runs=args.runs),
                measure(f"{name}: jsonref full inline + dumps", [str(jsonref_python), str(ROOT / "bench/peer_run.py"), "jsonref", str(path)], runs=args.runs),
                measure(f"{name}: toolc compile (--target {args.targets})", command, runs=args.runs),
            ]
        print(f"\n## {name} ({path.stat().st_size / 1e6:.1f} MB)")
        print_table(rows, baseline=rows[0].name)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
