"""Router overhead per call against calling the SDK directly, per audit sink, with and without an OpenTelemetry
SDK, with argument validation on (not a test).

    .venv/bin/python bench/bench_router.py [--calls 3000] [--concurrent 2000]

Generates the router for a small catalog (the probe MCP tools and `fixtures/guard/users.yaml`), then for each
audit sink (none: a sink that stores nothing; SQLite; PostgreSQL on a loopback server started from the `pgserver`
wheel, see tests/support/pg_server.py), first without and then with an OpenTelemetry SDK (TracerProvider +
BatchSpanProcessor, spans to memory):
  mcp    direct: `client.call_tool("echo", ...)` on an open `mcp.Client` to an in-process MCP server
         router: `router.call_tool("mcp:probe:echo", ...)`: six gates, schema validation, decision + start
                 committed before dispatch, end committed after, a span when an SDK is configured
  http   direct: `httpx2.AsyncClient.get(url, params=..., headers=...)` to a loopback HTTP server
         router: `router.call_tool("openapi:users:listUsers", ...)` to the same server, credential from the env
Direct and routed calls alternate one for one, so both series see the same machine load. Overhead = router
percentile - direct percentile. Targets (SQLite, no SDK): p50 <= 0.5 ms, p99 <= 1 ms.

Then `--concurrent` calls at once (asyncio.gather) through each sink, with PostgreSQL both as shipped (group
commit: every request waiting shares one transaction) and with `max_batch=1` (one transaction per request):
wall time and calls per second, the price of a durable commit before every call and what grouping buys back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import OpenApiConfig  # noqa: E402
from compiler.infra.diagnostics import Diagnostics  # noqa: E402
from compiler.infra.loading import load_document  # noqa: E402
from compiler.ir import Catalog  # noqa: E402
from compiler.sources.openapi import read_openapi  # noqa: E402
from tests.support.loopback import KeepAliveHandler, loopback_http  # noqa: E402
from tests.support.paths import FIXTURES  # noqa: E402
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router  # noqa: E402

USERS = OpenApiConfig(id="users", path="fixtures/guard/users.yaml", base_url="${USERS_URL}")
CONTEXT = {"mode": "execution", "project_id": "bench", "spec_frozen": True, "spec_hash": "h"}


class Answer(KeepAliveHandler):
    def do_GET(self) -> None:
        self.send_json(200, b'{"users": []}')


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


class NullSink:
    """Stores nothing: the router's cost without an audit trail."""

    def emit(self, event: Any) -> None:
        return None

    def emit_many(self, events: Any) -> None:
        return None

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def print_table(title: str, results: dict[str, tuple[list[float], list[float]]]) -> None:
    print(f"\n{title}")
    print(f"{'series':<16} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for kind, (direct, routed) in results.items():
        d, r = percentiles(direct), percentiles(routed)
        print(f"{kind + ' direct':<16} {d['p50']:8.3f} {d['p90']:8.3f} {d['p99']:8.3f} {d['mean']:8.3f}")
        print(f"{kind + ' router':<16} {r['p50']:8.3f} {r['p90']:8.3f} {r['p99']:8.3f} {r['mean']:8.3f}")
        print(f"{kind + ' overhead':<16} {r['p50'] - d['p50']:8.3f} {r['p90'] - d['p90']:8.3f} "
              f"{r['p99'] - d['p99']:8.3f} {r['mean'] - d['mean']:8.3f}")


async def series(rt: Any, sink: Any, calls: int, url: str) -> dict[str, tuple[list[float], list[float]]]:
    import httpx2
    from mcp import Client

    router = rt.Router(audit_sink=sink, environ={"USERS_URL": url, "TOOLC_USERS_KEY": "k-123"})
    context = rt.InvocationContext(**CONTEXT)
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    results: dict[str, tuple[list[float], list[float]]] = {}
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
    sink.close()
    return results


async def concurrent(rt: Any, sink: Any, calls: int) -> tuple[float, int | None]:
    """Seconds for `calls` calls started at once (the in-process MCP server; 10 dispatched at a time)."""
    router = rt.Router(audit_sink=sink)
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    context = rt.InvocationContext(**CONTEXT)
    await router.call_tool("mcp:probe:echo", {"text": "warm"}, context=context)
    start = time.perf_counter()
    results = await asyncio.gather(*(router.call_tool("mcp:probe:echo", {"text": f"c{i}"}, context=context)
                                     for i in range(calls)))
    elapsed = time.perf_counter() - start
    assert not any(r.is_error for r in results), results[0].error
    await router.aclose()
    before = getattr(sink, "transactions", None)
    sink.close()  # writes the last queued end events
    after = getattr(sink, "transactions", None)
    return elapsed, (after if after is not None and before is not None else None)


def commit_floor(dsn: str, calls: int) -> str:
    """What one durable commit costs on this server and disk: the least a synchronous audit row can cost."""
    import psycopg

    samples = []
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE floor (x INTEGER)")
        for i in range(calls):
            start = time.perf_counter()
            with connection.transaction():
                connection.execute("INSERT INTO floor VALUES (%s)", (i,))
            samples.append(time.perf_counter() - start)
    found = percentiles(samples)
    return f"{found['p50']:.3f} / {found['p99']:.3f}"


async def main(calls: int, many: int) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.support.pg_server import postgres_server

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(loopback_http(Answer))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        rt = stack.enter_context(load_router(write_router(make_build(catalog(), openapi=[USERS]), folder / "gen")))
        try:
            pg = stack.enter_context(postgres_server())
            dsn: str | None = pg.dsn()
        except RuntimeError as exc:
            print(f"PostgreSQL: not measured ({exc})")
            dsn = None
        databases = iter(range(1_000))

        def fresh_dsn() -> str:
            import psycopg

            assert dsn is not None
            name = f"bench_{next(databases)}"
            with psycopg.connect(dsn, autocommit=True) as connection:
                connection.execute(f"DROP DATABASE IF EXISTS {name}")
                connection.execute(f"CREATE DATABASE {name}")
            return pg.dsn(dbname=name)

        sinks: dict[str, Callable[[], Any]] = {
            "none": NullSink,
            "sqlite": lambda: rt.SqliteAuditSink(folder / f"audit-{next(databases)}.db"),
        }
        if dsn is not None:
            sinks["postgres"] = lambda: rt.PostgresAuditSink(fresh_dsn())
        if dsn is not None:
            print(f"PostgreSQL commit floor (psycopg, one INSERT + COMMIT, no router), p50/p99 ms: "
                  f"{commit_floor(fresh_dsn(), calls)}")
        print(f"calls per series: {calls} (direct and routed alternate; validation on)")
        for traced in (False, True):
            if traced:  # set once per process: every series after this one runs with an SDK
                trace.set_tracer_provider(provider := TracerProvider())
                provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
            for name, make in sinks.items():
                results = await series(rt, make(), calls, url)
                print_table(f"sink {name}, OpenTelemetry SDK {'on' if traced else 'off'}", results)

        print(f"\n{many} concurrent calls (OpenTelemetry SDK on), wall time:")
        variants: dict[str, Callable[[], Any]] = {"sqlite": sinks["sqlite"]}
        if dsn is not None:
            variants["postgres group commit"] = lambda: rt.PostgresAuditSink(fresh_dsn())
            variants["postgres max_batch=1"] = lambda: rt.PostgresAuditSink(fresh_dsn(), max_batch=1)
        for name, make in variants.items():
            elapsed, transactions = await concurrent(rt, make(), many)
            shared = f"  {transactions} transactions for {3 * (many + 1)} events" if transactions else ""
            print(f"  {name:<24} {elapsed:7.2f} s  {many / elapsed:8.0f} calls/s{shared}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrent", type=int, default=2000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.concurrent))
