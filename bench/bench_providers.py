"""Benchmark (not a test): provider schemas for GitHub and Stripe, next to FastMCP `from_openapi`, in one run.

    .venv/bin/python bench/bench_providers.py [--runs N] [--peer-runs N] [--no-peers]

For each spec: `toolc compile SPEC --out DIR` (every emitter, all targets), then a project file with
`codegen: false` (the schemas path: catalog, provider schemas, lock) with all targets and once per target, each in a
fresh process under `/usr/bin/time -v` (median wall, median peak RSS, bytes of `schemas/*.json`), plus an
in-process split (read + resolve vs provider lowering). The peer, FastMCP 4.1.x, runs the same file in its own
venv `bench/.peers-fastmcp` (created on first use with pip: fastmcp==4.1.2, the version reference/performance.md
measured): `FastMCP.from_openapi` + `list_tools()` + MCP tool JSON. Targets: Stripe <= 1.5 s, <= 250 MB RSS,
<= 15 MB emitted JSON; GitHub <= 3 s, <= 400 MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import FASTMCP_RUN, PYTHON, ROOT, Measurement, measure, peer_venv, precompile

TOOLC = ROOT / ".venv" / "bin" / "toolc"
HASH_SEED = {"PYTHONHASHSEED": "0"}
SPECS = {"stripe": ROOT / "fixtures/corpus/openapi/stripe.json", "github": ROOT / "fixtures/corpus/openapi/github.json"}
TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")
GOALS = {"stripe": (1.5, 250.0, 15.0), "github": (3.0, 400.0, None)}

# In-process phase split for toolc (same machinery as the CLI).
SPLIT_RUN = r"""
import json, sys, time
from pathlib import Path
from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.pipeline import adhoc_inputs, read_catalog
from compiler.providers.dialect import LoweringCache
from compiler.providers.lower import lower_target
from compiler.refs import RefResolver
config = Config(root=Path.cwd())
diagnostics = Diagnostics()
resolver = RefResolver(diagnostics)
t0 = time.perf_counter()
catalog = read_catalog(config, adhoc_inputs([Path(sys.argv[1])], Path.cwd()), resolver, diagnostics)
t1 = time.perf_counter()
cache, phases = LoweringCache(), {}
for target in sys.argv[2:]:
    start = time.perf_counter()
    result = lower_target(catalog, resolver, target, config, cache)
    phases[target] = round(time.perf_counter() - start, 3)
print(json.dumps({"tools": len(catalog.tools), "read_s": round(t1 - t0, 3), "lower_s": phases}))
"""


def median_run(command: list[str], runs: int) -> Measurement:
    return measure(command[0], command, runs=runs, env=HASH_SEED)


def emitted_mb(out_dir: Path) -> float:
    return sum(p.stat().st_size for p in (out_dir / "schemas").glob("*.json")) / 1e6 if out_dir.exists() else 0.0


def schemas_only_project(spec: Path, scratch: Path) -> Path:
    """A project file compiling just `spec` with `codegen: false`: the path the provider schemas take."""
    project = scratch / "toolc.yaml"
    project.write_text(json.dumps({"openapi": [{"path": str(spec)}], "codegen": False, "output": "out"}))
    return project


def bench_toolc(name: str, spec: Path, runs: int) -> dict[str, float | bool | str]:
    row: dict[str, float | bool | str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "all"
        full = median_run([str(TOOLC), "compile", str(spec), "--out", str(out)], runs)
        row.update(all_wall_s=full.wall_s, all_rss_mb=full.rss_mb, ok=full.ok, emitted_mb=emitted_mb(out))
        if not full.ok:
            row["error"] = full.note or "failed"
        project = schemas_only_project(spec, Path(scratch))
        out_s = Path(scratch) / "schemas-only"
        schemas = median_run([str(TOOLC), "compile", "-c", str(project), "--out", str(out_s)], runs)
        row.update(schemas_wall_s=schemas.wall_s, schemas_rss_mb=schemas.rss_mb)
        for target in TARGETS:
            out_t = Path(scratch) / target
            one = median_run([str(TOOLC), "compile", "-c", str(project), "--out", str(out_t), "--target", target],
                             runs)
            row[f"{target}_wall_s"], row[f"{target}_rss_mb"] = one.wall_s, one.rss_mb
    split = subprocess.run([PYTHON, "-c", SPLIT_RUN, str(spec), *TARGETS], capture_output=True, text=True,
                           cwd=ROOT, check=False)
    if split.returncode == 0:
        data = json.loads(split.stdout.strip().splitlines()[-1])
        row["read_s"] = data["read_s"]
        row["lower_s"] = round(sum(data["lower_s"].values()), 3)
        row["tools"] = data["tools"]
    return row


def bench_fastmcp(spec: Path, runs: int) -> dict[str, float | bool | str]:
    python = peer_venv("fastmcp", ["fastmcp==4.1.2", "httpx"])
    run = median_run([str(python), "-c", FASTMCP_RUN, str(spec)], runs)
    row: dict[str, float | bool | str] = {"wall_s": run.wall_s, "rss_mb": run.rss_mb, "ok": run.ok}
    if run.ok and run.stdout.strip():
        data = json.loads(run.stdout.strip().splitlines()[-1])
        row.update(tools=data["tools"], json_mb=data["bytes"] / 1e6)
    elif not run.ok:
        row["error"] = run.note[:160] or "failed"
    return row


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer-runs", type=int, default=1)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--only", choices=sorted(SPECS))
    args = parser.parse_args()
    for name, spec in SPECS.items():
        if args.only and name != args.only:
            continue
        ours = bench_toolc(name, spec, args.runs)
        wall_goal, rss_goal, mb_goal = GOALS[name]
        print(f"\n== {name} ({spec.stat().st_size / 1e6:.1f} MB, {ours.get('tools', '?')} tools)")
        print(f"toolc compile, all targets : {ours['all_wall_s']:.2f} s  {ours['all_rss_mb']:.0f} MB  "
              f"emitted schemas {ours['emitted_mb']:.2f} MB   (goal <= {wall_goal} s, <= {rss_goal:.0f} MB"
              + (f", <= {mb_goal} MB" if mb_goal else "") + ")" + ("" if ours["ok"] else f"  FAILED {ours.get('error')}"))
        print(f"  schemas only (codegen: false), all targets: {ours['schemas_wall_s']:.2f} s  "
              f"{ours['schemas_rss_mb']:.0f} MB")
        for target in TARGETS:
            print(f"  schemas only, --target {target:17}: {ours[f'{target}_wall_s']:.2f} s  "
                  f"{ours[f'{target}_rss_mb']:.0f} MB")
        if "read_s" in ours:
            print(f"  in-process: read+IR {ours['read_s']:.2f} s, provider lowering (4 targets) {ours['lower_s']:.2f} s")
        if args.no_peers:
            continue
        peer = bench_fastmcp(spec, args.peer_runs)
        if peer["ok"]:
            print(f"FastMCP 4.1.2 from_openapi : {peer['wall_s']:.2f} s  {peer['rss_mb']:.0f} MB  "
                  f"{peer.get('tools')} tools, {float(peer.get('json_mb', 0)):.1f} MB MCP JSON")
            for label, wall_key, rss_key in (("full compile", "all_wall_s", "all_rss_mb"),
                                             ("schemas only", "schemas_wall_s", "schemas_rss_mb")):
                print(f"ratio FastMCP / toolc {label:13}: wall x{float(peer['wall_s']) / float(ours[wall_key]):.1f}, "
                      f"RSS x{float(peer['rss_mb']) / float(ours[rss_key]):.1f}")
        else:
            print(f"FastMCP 4.1.2 from_openapi : failed: {peer.get('error')}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
