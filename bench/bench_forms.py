"""Benchmark (not a test): what each form of giving a model an API costs at the start of a request.

    .venv/bin/python bench/bench_forms.py [--graph PATH] [--no-graph]

For GitHub and Stripe (`fixtures/corpus/openapi/`) and Microsoft Graph v1.0 (`/work/shared/corpus/openapi/`, the
bench only), `toolc list --tokens --json` per target: every tool (`schemas/<target>.json`), toolsets (the largest
toolset file; one is sent per request), the provider's native deferral (`schemas/<target>.deferred.json`: what the
model sees before it searches), toolc's discovery meta-tools and code mode's two tools (`schemas/code.<target>.json`:
search the functions, run a program). o200k_base tokens, as `toolc list --tokens` counts them. Targets: OpenAI native
deferral <= 6,000 tokens for GitHub; code mode <= 1,500 tokens for every API and target.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from harness import ROOT

TOOLC = ROOT / ".venv" / "bin" / "toolc"
SPECS = {"github": ROOT / "fixtures/corpus/openapi/github.json", "stripe": ROOT / "fixtures/corpus/openapi/stripe.json"}
GRAPH = Path("/work/shared/corpus/openapi/microsoft-graph-v1.0.json")
TARGETS = ("openai-responses", "openai-chat", "anthropic", "gemini")
FORMS = ("all", "toolsets", "deferred", "discovery", "code")
GOAL = ("github", "openai-responses", "deferred", 6_000)
CODE_GOAL = 1_500


def forms_of(spec: Path) -> tuple[dict[str, dict[str, dict[str, object]]], int, float]:
    """(target → form → row, tools, seconds) from `toolc list --tokens --json`."""
    start = time.perf_counter()
    out = subprocess.run([str(TOOLC), "list", "--tokens", "--json", "--target", ",".join(TARGETS), str(spec)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    data = json.loads(out.stdout)
    return ({target: row["forms"] for target, row in data["targets"].items()}, len(data["tools"]),
            time.perf_counter() - start)


def cell(row: dict[str, object] | None) -> str:
    if row is None:
        return "-"
    tokens = f"{row['start_tokens']:,}"
    return tokens if row["sendable"] else f"({tokens}) no"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, default=GRAPH)
    parser.add_argument("--no-graph", action="store_true")
    args = parser.parse_args()
    specs = dict(SPECS)
    if not args.no_graph and args.graph.exists():
        specs["graph"] = args.graph
    print("Tokens at the start of a request (o200k_base). toolsets: the largest toolset file; '(n) no': over a "
          "request's limits, not sendable; '-': the provider has no such form.\n")
    print(f"| API | tools | target | {' | '.join(FORMS)} |")
    print("|---|---:|---|" + "---:|" * len(FORMS))
    failures = []
    for name, spec in specs.items():
        forms, tools, seconds = forms_of(spec)
        for target in TARGETS:
            row = forms[target]
            print(f"| {name} | {tools:,} | {target} | {' | '.join(cell(row.get(form)) for form in FORMS)} |")
            code = row["code"]["start_tokens"]
            assert isinstance(code, int)
            if code > CODE_GOAL:
                failures.append(f"{name} {target} code mode: {code:,} tokens > {CODE_GOAL:,}")
        print(f"<!-- {name}: toolc list --tokens in {seconds:.1f} s -->")
        if name == GOAL[0]:
            got = forms[GOAL[1]][GOAL[2]]["start_tokens"]
            assert isinstance(got, int)
            if got > GOAL[3]:
                failures.append(f"{name} {GOAL[1]} {GOAL[2]}: {got:,} tokens > {GOAL[3]:,}")
    for failure in failures:
        print(f"GOAL MISSED: {failure}")


if __name__ == "__main__":
    main()
