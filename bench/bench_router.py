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

Then the guard chain: the router as shipped (no `gateway:` rules) against the same router with every guard this
benchmark can configure: a rate limit every call matches (a bucket that never runs dry, so every call takes a
token), a result budget every result is measured against (64 KiB: these answers fit, so none is cut), and the
retry bookkeeping; then the same with the rate limit fleet-wide (a token taken in PostgreSQL on every call).
Calls alternate one for one; added = guarded percentile - shipped percentile. Target: p50 <= 0.5 ms added (local).

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


def every_guard(rt: Any, fleet: bool) -> dict[str, Any]:
    """Router arguments configuring each guard: a rate limit no call runs dry, a result budget no answer exceeds."""
    limit = rt._types.RateLimitSpec(tools="*", rate=1e9, burst=10**9, fleet=fleet, label="bench")
    budget = rt._types.BudgetSpec(tools="*", limit=65_536, unit="bytes")
    return {"rate_limits": (limit,), "result_budgets": (budget,)}


async def guard_series(rt: Any, make_sink: Callable[[], Any], calls: int, url: str,
                       dsn: str | None) -> dict[str, tuple[list[float], list[float]]]:
    """(shipped, guarded) samples for the MCP and HTTP tools; `dsn`: the fleet's rate limit in PostgreSQL."""
    environ = {"USERS_URL": url, "TOOLC_USERS_KEY": "k-123", **({"TOOLC_AUDIT_DSN": dsn} if dsn else {})}
    shipped = rt.Router(audit_sink=make_sink(), environ=environ)
    guarded = rt.Router(audit_sink=make_sink(), environ=environ, **every_guard(rt, fleet=dsn is not None))
    context = rt.InvocationContext(**CONTEXT)
    server = probe_server()
    for router in (shipped, guarded):
        router.set_server_factory("probe", lambda: server)
    results: dict[str, tuple[list[float], list[float]]] = {}
    for kind, tool, arguments in (("mcp", "mcp:probe:echo", lambda i: {"text": f"m{i}"}),
                                  ("http", "openapi:users:listUsers", lambda i: {"page_size": i % 100})):
        results[kind] = await paired(
            calls, lambda i: shipped.call_tool(tool, arguments(i), context=context),  # noqa: B023 (awaited at once)
            lambda i: guarded.call_tool(tool, arguments(i), context=context))  # noqa: B023
    for router in (shipped, guarded):
        await router.aclose()
        router.audit.close()
    return results


async def guard_alone(rt: Any, calls: int, dsn: str | None) -> dict[str, list[float]]:
    """Seconds per call of each guard on its own (no dispatch, no audit): what the chain adds, without the noise
    of a full call on a shared machine."""
    guards = rt.Router(audit_sink=NullSink(), environ={"TOOLC_AUDIT_DSN": dsn} if dsn else {},
                       **every_guard(rt, fleet=dsn is not None))
    tool = rt.router.TOOLS["openapi:users:listUsers"]
    context = rt.InvocationContext(**CONTEXT)
    answer = {"users": [{"id": i, "name": f"user {i}"} for i in range(20)]}
    samples: dict[str, list[float]] = {"rate limit": [], "result budget": []}
    for i in range(calls + 300):  # the first 300: warm-up (the fleet's connection and table)
        start = time.perf_counter()
        assert await guards.rate_limits.refusal(tool, context) is None
        middle = time.perf_counter()
        guards.result_budget.apply(tool, rt.ToolResult(structured=answer, content=[{"type": "text", "text": "x"}]),
                                   "bench")
        end = time.perf_counter()
        if i >= 300:
            samples["rate limit"].append(middle - start)
            samples["result budget"].append(end - middle)
    await guards.aclose()
    return samples


def print_alone(title: str, samples: dict[str, list[float]]) -> None:
    print(f"\n{title}")
    print(f"{'guard':<16} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name, series_of in samples.items():
        found = percentiles(series_of)
        print(f"{name:<16} {found['p50']:8.4f} {found['p90']:8.4f} {found['p99']:8.4f} {found['mean']:8.4f}")


def print_guards(title: str, results: dict[str, tuple[list[float], list[float]]]) -> None:
    print(f"\n{title}")
    print(f"{'series':<16} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for kind, (shipped, guarded) in results.items():
        s, g = percentiles(shipped), percentiles(guarded)
        print(f"{kind + ' shipped':<16} {s['p50']:8.3f} {s['p90']:8.3f} {s['p99']:8.3f} {s['mean']:8.3f}")
        print(f"{kind + ' guarded':<16} {g['p50']:8.3f} {g['p90']:8.3f} {g['p99']:8.3f} {g['mean']:8.3f}")
        print(f"{kind + ' added':<16} {g['p50'] - s['p50']:8.3f} {g['p90'] - s['p90']:8.3f} "
              f"{g['p99'] - s['p99']:8.3f} {g['mean'] - s['mean']:8.3f}")


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


async def main(calls: int, many: int, guards_only: bool = False) -> None:
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
            if guards_only:
                break
            if traced:  # set once per process: every series after this one runs with an SDK
                trace.set_tracer_provider(provider := TracerProvider())
                provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
            for name, make in sinks.items():
                results = await series(rt, make(), calls, url)
                print_table(f"sink {name}, OpenTelemetry SDK {'on' if traced else 'off'}", results)

        print_alone("each guard alone, rate limit local", await guard_alone(rt, calls, None))
        if dsn is not None:
            print_alone("each guard alone, rate limit fleet-wide (PostgreSQL)", await guard_alone(rt, calls, fresh_dsn()))
        print(f"\nthe guard chain, sink sqlite, OpenTelemetry SDK {'off' if guards_only else 'on'}:")
        print_guards("every guard configured, rate limit local", await guard_series(rt, sinks["sqlite"], calls, url,
                                                                                     None))
        if dsn is not None:
            print_guards("every guard configured, rate limit fleet-wide (PostgreSQL)",
                         await guard_series(rt, sinks["sqlite"], calls, url, fresh_dsn()))
        if guards_only:
            return

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
    parser.add_argument("--guards-only", action="store_true", help="only the guard chain's series")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.concurrent, arguments.guards_only))
