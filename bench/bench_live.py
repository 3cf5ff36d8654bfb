"""Benchmark (not a test): listing the four stdio servers concurrently vs. the slowest one alone.

    .venv/bin/python bench/bench_live.py [--rounds 3]
    .venv/bin/python bench/bench_live.py --timeouts


Servers: mcp-server-time, mcp-server-git (on a temporary repository), mcp-server-fetch (PyPI, run with this
interpreter) and @modelcontextprotocol/server-everything (npm, `npm ci --prefix tests/servers`). Each figure is the
best of `--rounds` wall-clock runs of `list_servers` (spawn, handshake, every tools/list page, shutdown). The goal:
concurrent <= 1.3 x the slowest server alone.

`--timeouts` measures how long failing servers take to be given up on (bounds from issue 4, reported here
rather than asserted in tests): a server that never answers the handshake (bound: timeout_ms + 1 s), one that
never answers tools/list (handshake, then one request bounded by timeout_ms), and a hanging server stopped by
--strict when another fails (bound: far below its 30 s timeout).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import ServerConfig  # noqa: E402
from compiler.infra.diagnostics import Diagnostics  # noqa: E402
from compiler.sources.mcp_live import list_servers  # noqa: E402

EDGE = str(ROOT / "tests" / "servers" / "edge_stdio.py")
EVERYTHING = ROOT / "tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def servers(repo: Path) -> list[ServerConfig]:
    py = sys.executable
    return [
        ServerConfig(id="time", command=(py, "-m", "mcp_server_time", "--local-timezone", "UTC")),
        ServerConfig(id="git", command=(py, "-m", "mcp_server_git", "--repository", str(repo))),
        ServerConfig(id="fetch", command=(py, "-m", "mcp_server_fetch")),
        ServerConfig(id="everything", command=("node", str(EVERYTHING), "stdio")),
    ]


def timed(chosen: list[ServerConfig], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        diagnostics = Diagnostics()
        started = time.perf_counter()
        outcomes = list_servers(chosen, diagnostics, root=ROOT, progress=None)
        elapsed = time.perf_counter() - started
        failed = [d.render() for d in diagnostics if d.severity.value == "error"]
        if failed or not all(o.ok for o in outcomes):
            raise SystemExit("a server failed: " + "; ".join(failed))
        best = min(best, elapsed)
    return best


def edge(mode: str, timeout_ms: int) -> ServerConfig:
    return ServerConfig(id=mode, command=(sys.executable, EDGE, mode), timeout_ms=timeout_ms)


def failing_after(chosen: list[ServerConfig], *, strict: bool = False) -> tuple[float, list[str]]:
    diagnostics = Diagnostics()
    started = time.perf_counter()
    list_servers(chosen, diagnostics, root=ROOT, strict=strict, progress=None)
    return time.perf_counter() - started, sorted(f"{d.source}:{d.code}" for d in diagnostics)


def timeouts() -> None:
    cases = [
        ("never answers the handshake (1.5 s)", [edge("hang", 1500)], False, 1.5 + 1.0),
        ("never answers tools/list (1.5 s)", [edge("mute-list", 1500)], False, 1.5 + 1.0 + 1.0),
        ("hangs (30 s) while another exits, --strict", [edge("exit", 10_000), edge("hang", 30_000)], True, 20.0),
    ]
    for name, chosen, strict, bound in cases:
        seconds, codes = failing_after(chosen, strict=strict)
        verdict = "met" if seconds <= bound else "MISSED"
        print(f"{name:<46} {seconds:6.2f} s  (bound {bound:4.1f} s: {verdict})  {', '.join(codes)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeouts", action="store_true", help="measure how fast failing servers are given up on")
    args = parser.parse_args()
    if args.timeouts:
        timeouts()
        return
    if not EVERYTHING.exists():
        raise SystemExit("server-everything is not installed: npm ci --prefix tests/servers")
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        all_servers = servers(repo)
        alone = {server.id: timed([server], args.rounds) for server in all_servers}
        together = timed(all_servers, args.rounds)
    slowest = max(alone, key=lambda k: alone[k])
    for server_id, seconds in alone.items():
        print(f"alone       {server_id:<11} {seconds:6.2f} s")
    print(f"sum of alone            {sum(alone.values()):6.2f} s")
    print(f"concurrent  all four    {together:6.2f} s")
    ratio = together / alone[slowest]
    print(f"ratio concurrent / slowest alone ({slowest}) = {ratio:.2f}  (goal ≤ 1.30: {'met' if ratio <= 1.3 else 'MISSED'})")


if __name__ == "__main__":
    main()
