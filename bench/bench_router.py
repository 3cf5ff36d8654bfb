"""Router overhead per call against calling the MCP SDK directly (not a test).

    .venv/bin/python bench/bench_router.py [--calls 5000]

Generates the router for a small catalog, then against one in-process MCP server (mcp 2.x `Client(server)`):
  direct   `client.call_tool("echo", ...)` on an open `mcp.Client`
  router   `router.call_tool("mcp:probe:echo", ...)`: six gates, three audit events (SQLite sink), dispatch
  overhead the router's own work per call (gates, audit, bookkeeping) timed with dispatch answered instantly
Targets: overhead p50 <= 0.5 ms, p99 <= 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_router_support import (  # noqa: E402
    load_router,
    make_build,
    probe_catalog,
    probe_server,
    write_router,
)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "mean": statistics.fmean(ordered) * 1000}


async def timed(calls: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    for i in range(min(200, calls)):  # warm-up
        await call(i)
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - start)
    return samples


async def main(calls: int) -> None:
    from mcp import Client

    with tempfile.TemporaryDirectory() as folder, \
            load_router(write_router(make_build(probe_catalog()), Path(folder) / "gen")) as rt:
        server = probe_server()
        async with Client(server) as client:
            direct = await timed(calls, lambda i: client.call_tool("echo", {"text": f"m{i}"}))

        router = rt.Router(audit_sink=rt.SqliteAuditSink(Path(folder) / "audit.db"))
        router.set_server_factory("probe", lambda: server)
        routed = await timed(calls, lambda i: router.call_tool("mcp:probe:echo", {"text": f"m{i}"}))
        await router.aclose()

        instant = rt.ToolResult(structured={"text": "x"})

        async def no_dispatch(tool: Any, arguments: dict[str, Any]) -> Any:
            return instant

        bare = rt.Router(audit_sink=rt.SqliteAuditSink(Path(folder) / "audit2.db"))
        bare._dispatch = no_dispatch
        overhead = await timed(calls, lambda i: bare.call_tool("mcp:probe:echo", {"text": f"m{i}"}))
        await bare.aclose()
        router.audit.close()
        bare.audit.close()

    print(f"calls per series: {calls} (sequential, in-process MCP server, SQLite audit sink)")
    print(f"{'series':<10} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for label, samples in (("direct", direct), ("router", routed), ("overhead", overhead)):
        p = percentiles(samples)
        print(f"{label:<10} {p['p50']:8.3f} {p['p90']:8.3f} {p['p99']:8.3f} {p['mean']:8.3f}")
    delta = percentiles(routed)["p50"] - percentiles(direct)["p50"]
    print(f"router p50 - direct p50: {delta:.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    asyncio.run(main(parser.parse_args().calls))
