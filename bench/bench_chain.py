"""The checked path's own cost, this work tree against an earlier commit (not a test).

    .venv/bin/python bench/bench_chain.py [--base main] [--rounds 4] [--calls 2000]

Generates the router of `bench_router`'s catalog twice: once as the work tree makes it, once with the router's
static modules (`templates/router/static/*.py`) as they were at `--base` (the generated `_tables.py` is today's
in both). Rounds alternate between the two, in one process, so both see the same machine load. Each round times,
on an audit sink that stores nothing (the chain's cost, not the disk's):
  refused  `call_tool("mcp:probe:echo", {"text": 5})`: policy, validation's refusal, the audit rows; no I/O
  mcp      `call_tool("mcp:probe:echo", {"text": "x"})` to an in-process MCP server: the whole chain
and prints p50 and p99 per series.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_router  # noqa: E402

from tests.support.router import load_router, make_build, probe_server, write_router  # noqa: E402

STATIC = "templates/router/static"
SERIES = {"refused": {"text": 5}, "mcp": {"text": "x"}}


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=True).stdout


def generate(folder: Path, base: str | None) -> Path:
    """The router in `folder`; with `base`, its static modules replaced by that commit's."""
    out = write_router(make_build(bench_router.catalog(), openapi=[bench_router.USERS]), folder)
    if base is None:
        return out
    package = out / "toolc_router"
    then = {Path(line).name for line in git("ls-tree", "--name-only", base, f"{STATIC}/").decode().split()}
    for module in package.glob("*.py"):
        if module.name != "_tables.py" and (ROOT / STATIC / module.name).exists() and module.name not in then:
            module.unlink()
    for name in then:
        if name.endswith(".py"):
            (package / name).write_bytes(git("show", f"{base}:{STATIC}/{name}"))
    return out


async def one_round(rt: Any, calls: int, samples: dict[str, list[float]]) -> None:
    router = rt.Router(audit_sink=bench_router.NullSink(), environ={})
    context = rt.InvocationContext(**bench_router.CONTEXT)
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    for series, arguments in SERIES.items():
        for _ in range(200):  # warm-up: connection, validator
            await router.call_tool("mcp:probe:echo", arguments, context=context)
        for _ in range(calls):
            start = time.perf_counter()
            await router.call_tool("mcp:probe:echo", arguments, context=context)
            samples[series].append(time.perf_counter() - start)
    await router.aclose()


def main(base: str, rounds: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"work tree": generate(Path(tmp) / "now", None), base: generate(Path(tmp) / "base", base)}
        samples: dict[str, dict[str, list[float]]] = {label: {s: [] for s in SERIES} for label in folders}
        for _ in range(rounds):
            for label, folder in folders.items():
                with load_router(folder) as rt:
                    asyncio.run(one_round(rt, calls, samples[label]))
    print(f"{'router':<12} {'series':<8} {'p50 us':>8} {'p99 us':>8}")
    for label, by_series in samples.items():
        for series, values in by_series.items():
            ordered = sorted(values)
            p50, p99 = (ordered[int(q * (len(ordered) - 1))] * 1e6 for q in (0.50, 0.99))
            print(f"{label:<12} {series:<8} {p50:8.1f} {p99:8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    main(options.base, options.rounds, options.calls)
