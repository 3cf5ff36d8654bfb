"""Router overhead per call against calling the SDK directly, with argument validation on (not a test).

    .venv/bin/python bench/bench_router.py [--calls 3000]

Generates the router for a small catalog (the probe MCP tools and `fixtures/guard/users.yaml`), then:
  mcp    direct: `client.call_tool("echo", ...)` on an open `mcp.Client` to an in-process MCP server
         router: `router.call_tool("mcp:probe:echo", ...)`: six gates, schema validation, decision + start
                 committed to SQLite before dispatch, end committed after
  http   direct: `httpx2.AsyncClient.get(url, params=..., headers=...)` to a loopback HTTP server
         router: `router.call_tool("openapi:users:listUsers", ...)` to the same server, credential from the env
Direct and routed calls alternate one for one, so both series see the same machine load. Overhead = router
percentile - direct percentile. Targets: p50 <= 0.5 ms, p99 <= 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import OpenApiConfig  # noqa: E402
from compiler.diagnostics import Diagnostics  # noqa: E402
from compiler.ir import Catalog  # noqa: E402
from compiler.loading import load_document  # noqa: E402
from compiler.sources.openapi import read_openapi  # noqa: E402
from tests.test_router_support import (  # noqa: E402
    FIXTURES,
    load_router,
    make_build,
    probe_catalog,
    probe_server,
    write_router,
)

USERS = OpenApiConfig(id="users", path="fixtures/guard/users.yaml", base_url="${USERS_URL}")
CONTEXT = {"mode": "execution", "project_id": "bench", "spec_frozen": True, "spec_hash": "h"}


class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall

    def do_GET(self) -> None:
        payload = b'{"users": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "mean": statistics.fmean(ordered) * 1000}


async def paired(calls: int, direct: Callable[[int], Awaitable[Any]],
                 routed: Callable[[int], Awaitable[Any]]) -> tuple[list[float], list[float]]:
    for i in range(min(300, calls)):  # warm-up: connections, validators, caches
        await direct(i)
        await routed(i)
    direct_samples, routed_samples = [], []
    for i in range(calls):
        for call, samples in ((direct, direct_samples), (routed, routed_samples)):
            start = time.perf_counter()
            await call(i)
            samples.append(time.perf_counter() - start)
    return direct_samples, routed_samples


def catalog() -> Catalog:
    users, tools = read_openapi(load_document(FIXTURES / "guard" / "users.yaml"), source_id="users",
                                location="users", diagnostics=Diagnostics(), config=USERS)
    probe = probe_catalog()
    return Catalog(sources=(*probe.sources, users), tools=(*probe.tools, *tools))


async def main(calls: int) -> None:
    import httpx2
    from mcp import Client

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise

    http = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{http.server_address[1]}"
    results: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as folder, \
            load_router(write_router(make_build(catalog(), openapi=[USERS]), Path(folder) / "gen")) as rt:
        router = rt.Router(audit_sink=rt.SqliteAuditSink(Path(folder) / "audit.db"),
                           environ={"USERS_URL": url, "TOOLC_USERS_KEY": "k-123"})
        context = rt.InvocationContext(**CONTEXT)
        server = probe_server()
        router.set_server_factory("probe", lambda: server)
        async with Client(server) as client:
            results["mcp"] = await paired(
                calls, lambda i: client.call_tool("echo", {"text": f"m{i}"}),
                lambda i: router.call_tool("mcp:probe:echo", {"text": f"m{i}"}, context=context))
        async with httpx2.AsyncClient() as direct_http:
            results["http"] = await paired(
                calls, lambda i: direct_http.get(f"{url}/users", params={"page_size": i % 100},
                                                 headers={"X-Api-Key": "k-123"}),
                lambda i: router.call_tool("openapi:users:listUsers", {"page_size": i % 100}, context=context))
        await router.aclose()
        router.audit.close()
    http.shutdown()
    http.server_close()

    print(f"calls per series: {calls} (direct and routed alternate; validation on; SQLite audit sink)")
    print(f"{'series':<14} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for kind, (direct, routed) in results.items():
        d, r = percentiles(direct), percentiles(routed)
        print(f"{kind + ' direct':<14} {d['p50']:8.3f} {d['p90']:8.3f} {d['p99']:8.3f} {d['mean']:8.3f}")
        print(f"{kind + ' router':<14} {r['p50']:8.3f} {r['p90']:8.3f} {r['p99']:8.3f} {r['mean']:8.3f}")
        print(f"{kind + ' overhead':<14} {r['p50'] - d['p50']:8.3f} {r['p90'] - d['p90']:8.3f} "
              f"{r['p99'] - d['p99']:8.3f} {r['mean'] - d['mean']:8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    asyncio.run(main(parser.parse_args().calls))
