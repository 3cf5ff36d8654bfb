"""Load: 2,000 concurrent invocations through the router against an in-process MCP server; every call has exactly
one start and one end row in `task_audits`, none lost, none duplicated, and the per-server limit holds."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.router import load_router, make_build, probe_catalog, write_router

CALLS = 2_000


async def test_two_thousand_concurrent_calls_are_each_audited_once(tmp_path: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("probe", version="1.0")
    in_flight = 0
    peak = 0

    @server.tool()
    async def echo(text: str) -> dict[str, str]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return {"text": text}

    with load_router(write_router(make_build(probe_catalog()), tmp_path / "gen")) as rt:
        database = tmp_path / "audit.db"
        router = rt.Router(audit_sink=rt.SqliteAuditSink(database))
        router.set_server_factory("probe", lambda: server)
        context = rt.InvocationContext(task_id="load")

        async def one(i: int) -> Any:
            return await router.call_tool("mcp:probe:echo", {"text": f"m{i}"}, context=context)

        results = await asyncio.gather(*(one(i) for i in range(CALLS)))
        await router.aclose()
        router.audit.close()

        assert [r.structured for r in results] == [{"text": f"m{i}"} for i in range(CALLS)]
        assert not any(r.is_error for r in results)
        assert len({r.invocation_id for r in results}) == CALLS
        assert 1 <= peak <= 10  # the per-server concurrency limit

        with sqlite3.connect(database) as connection:
            rows = connection.execute("SELECT invocation_id, event_type, tool_id, task_id FROM task_audits").fetchall()
        per_event = Counter((invocation, event) for invocation, event, _, _ in rows)
        assert len(rows) == 3 * CALLS
        assert set(per_event.values()) == {1}
        invocations = {r.invocation_id for r in results}
        for event in ("policy_decision", "tool_invocation_start", "tool_invocation_end"):
            assert {invocation for invocation, kind in per_event if kind == event} == invocations
        assert {(tool, task) for _, _, tool, task in rows} == {("mcp:probe:echo", "load")}
        # Within one invocation, events are stored in the order they happened.
        order: dict[str, list[str]] = {}
        with sqlite3.connect(database) as connection:
            for invocation, event in connection.execute("SELECT invocation_id, event_type FROM task_audits ORDER BY id"):
                order.setdefault(invocation, []).append(event)
        assert set(map(tuple, order.values())) == {("policy_decision", "tool_invocation_start", "tool_invocation_end")}


async def test_sqlite_sink_is_safe_from_many_threads(tmp_path: Path) -> None:
    with load_router(write_router(make_build(probe_catalog()), tmp_path / "gen")) as rt:
        sink = rt.SqliteAuditSink(tmp_path / "threads.db")

        def burst(thread: int) -> None:
            for i in range(250):
                sink.emit(rt.AuditEvent("policy_decision", f"{thread}-{i}", "t", 0.0, payload={"i": i}))

        await asyncio.gather(*(asyncio.to_thread(burst, t) for t in range(8)))
        sink.flush()
        with sqlite3.connect(tmp_path / "threads.db") as connection:
            ids = [row[0] for row in connection.execute("SELECT invocation_id FROM task_audits")]
        assert len(ids) == len(set(ids)) == 2_000
        sink.close()
        with pytest.raises(RuntimeError, match="closed"):
            sink.emit(rt.AuditEvent("policy_decision", "late", "t", 0.0))


def test_a_flood_of_commits_keeps_the_sqlite_wal_bounded_and_gives_it_back(tmp_path: Path) -> None:
    """6,000 refused calls as fast as one thread can commit them (the rate of issue 22's flood, 88 MiB of WAL)."""
    with load_router(write_router(make_build(probe_catalog()), tmp_path / "gen")) as rt:
        database = tmp_path / "flood.db"
        wal = tmp_path / "flood.db-wal"
        sink = rt.SqliteAuditSink(database, wal_limit=2 * 1024 * 1024)
        peak = 0
        flooding = threading.Event()

        def watch() -> None:
            nonlocal peak
            while flooding.is_set():
                peak = max(peak, wal.stat().st_size if wal.exists() else 0)
                time.sleep(0.002)

        flooding.set()
        watcher = threading.Thread(target=watch)
        watcher.start()
        for i in range(6_000):
            reason = {"gate": "disabled", "reason": f"unknown tool 'no_such_tool_{i}'"}
            sink.emit_many([rt.AuditEvent("policy_decision", f"i{i}", "no_such_tool", 0.0,
                                          payload={"allowed": False, **reason}),
                            rt.AuditEvent("policy_violation", f"i{i}", "no_such_tool", 0.0, payload=reason)])
        flooding.clear()
        watcher.join()
        # The limit, plus the CHECKPOINT_EVERY commits (about 2 MiB) between two looks at the WAL's size.
        assert peak <= 2 * 1024 * 1024 + 3 * 1024 * 1024, f"the WAL grew to {peak / 2**20:.1f} MiB"
        deadline = time.monotonic() + 10
        while wal.stat().st_size and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wal.stat().st_size == 0, "an idle sink keeps its WAL"
        sink.close()
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT count(*) FROM task_audits").fetchone() == (12_000,)
