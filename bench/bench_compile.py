"""Benchmark (not a test): `toolc compile` on GitHub and Stripe next to the floor (json.loads + json.dumps)
and jsonref full inlining of the same files, in one run, with ratios.

    .venv/bin/python bench/bench_compile.py [--runs 3] [--targets all]

Targets (issue 2, catalog only: `--target none --no-codegen`): GitHub ≤ 1.5 s and ≤ 250 MB; Stripe ≤ 0.7 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness import PYTHON, ROOT, measure, peer_venv, precompile, print_table

INPUTS = {
    "github": ROOT / "fixtures/corpus/openapi/github.json",
    "stripe": ROOT / "fixtures/corpus/openapi/stripe.json",
}


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="none", help="toolc --target value; 'none' = catalog only")
    args = parser.parse_args()
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
