"""Benchmark (not a test): `toolc check` on the GitHub REST description with nothing changed.

    .venv/bin/python bench/bench_check.py [--runs 3] [--targets all|none]

Sets up a scratch project around fixtures/corpus/openapi/github.json, compiles it once, then runs
`toolc check` as a user would (a fresh process each run) and prints the wall times. Target: ≤ 2 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import PYTHON, ROOT, measure, precompile

sys.path.insert(0, str(ROOT))
GITHUB = ROOT / "fixtures" / "corpus" / "openapi" / "github.json"
TOOLC = [PYTHON, "-m", "compiler"]


def _in_process(project: Path) -> tuple[float, float]:
    """The same check without interpreter start-up, split into the compile and the comparison."""
    from compiler.config import load_config
    from compiler.drift.check import check_build
    from compiler.infra.diagnostics import Diagnostics
    from compiler.pipeline import compile_project

    config = load_config(project / "toolc.yaml")
    started = time.perf_counter()
    build = compile_project(config, out_dir=config.output_dir)
    compiled = time.perf_counter()
    report = check_build(build, where="generated", refresh="toolc compile", diagnostics=Diagnostics())
    checked = time.perf_counter()
    if report.changes or report.files:
        sys.exit("in-process check found drift on an unchanged project")
    return compiled - started, checked - compiled


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", choices=("all", "none"), default="all",
                        help="compile every provider target (default) or only the IR, catalog and lock")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolc-bench-check-") as folder:
        project = Path(folder)
        shutil.copy(GITHUB, project / "github.json")
        targets = "" if args.targets == "all" else "targets: []\ncodegen: false\n"
        (project / "toolc.yaml").write_text(f"output: generated\n{targets}openapi:\n  - path: github.json\n")
        compiled = measure("toolc compile", [*TOOLC, "compile"], runs=1, cwd=project)
        if not compiled.ok:
            sys.exit(f"toolc compile failed:\n{compiled.note}")
        print(f"toolc compile (once): {compiled.wall_s:.2f} s")
        times = []
        for _ in range(args.runs):  # one at a time: the minimum is reported too
            result = measure("toolc check", [*TOOLC, "check"], runs=1, cwd=project)
            times.append(result.wall_s)
            if not result.ok:
                sys.exit(f"toolc check reported drift on an unchanged project:\n{result.stdout}{result.note}")
        compile_s, check_s = _in_process(project)
        print(f"in process: compile_project {compile_s:.2f} s + check_build (drift's own work) {check_s:.3f} s")
        files = sum(1 for p in (project / "generated").rglob("*") if p.is_file())
        print(f"toolc check, nothing changed ({files} generated files, targets={args.targets}): "
              f"median {statistics.median(times):.2f} s, min {min(times):.2f} s over {args.runs} runs")


if __name__ == "__main__":
    main()
