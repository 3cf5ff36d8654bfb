"""The PostgreSQL audit sink against a real server started for this module (tests/support/pg_server.py): the same rows
as SQLite, schema created and migrated, `flush()` waiting for what was queued before it, 2,000 calls from four
processes that end with `os._exit` right after `aclose()` each audited exactly once, also across a server crash
and restart mid-run, an unreachable server refusing calls, a refused login refusing them at once, and passwords
that never reach an error or a log. Skipped only where no PostgreSQL can start (never on CI: there it fails)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.router.router_package import generate_router
from compiler.config import AuditConfig
from tests.support.paths import ROOT
from tests.support.pg_server import PASSWORD, PgServer, free_port, postgres_or_skip
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router

psycopg = pytest.importorskip("psycopg")

EVENTS = ("policy_decision", "tool_invocation_start", "tool_invocation_end")
POSTGRES = {"postgres": True}
"""The project file's `router: {postgres: true}`: the package holds `audit_pg`."""


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from postgres_or_skip("the PostgreSQL audit tests")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_router(make_build(probe_catalog(), router=POSTGRES), tmp_path_factory.mktemp("gen"))


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


@pytest.fixture
def database(pg: PgServer) -> str:
    """A fresh database for one test; returns its DSN."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.dsn(), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return pg.dsn(dbname=name)


def rows(dsn: str, columns: str = "invocation_id, event_type") -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute(f"SELECT {columns} FROM task_audits ORDER BY id").fetchall()


def context(rt: Any) -> Any:
    return rt.InvocationContext(mode="execution", project_id="fleet", spec_frozen=True, spec_hash="h")


async def test_same_rows_as_sqlite_and_schema_created_on_first_use(rt: Any, database: str, tmp_path: Path) -> None:
    events = [
        rt.AuditEvent("policy_decision", "inv-1", "mcp:probe:echo", 1.5, "task", "proj", "execution",
                      {"allowed": True, "gate": None, "reason": "ok"}),
        rt.AuditEvent("tool_invocation_start", "inv-1", "mcp:probe:echo", 1.6, "task", "proj", "execution",
                      {"arguments": ["text"], "kind": "mcp"}),
        rt.AuditEvent("tool_invocation_end", "inv-1", "mcp:probe:echo", 1.7, None, None, None,
                      {"status": "success", "duration_ms": 0.5, "note": "ünïcode"}),
    ]
    sink = rt.audit_pg.PostgresAuditSink(database)
    lite = rt.SqliteAuditSink(tmp_path / "audit.db")
    sink.emit_many(events[:2])
    sink.emit(events[2])
    lite.emit_many(events[:2])
    lite.emit(events[2])
    sink.close()
    lite.close()
    import sqlite3

    columns = "invocation_id, event_type, tool_id, task_id, project_id, mode, created_at, payload"
    with sqlite3.connect(tmp_path / "audit.db") as connection:
        expected = [(*row[:-1], json.loads(row[-1])) for row in connection.execute(
            f"SELECT {columns} FROM task_audits ORDER BY id")]
    assert rows(database, columns) == expected
    with psycopg.connect(database) as connection:
        assert connection.execute("SELECT max(version) FROM toolc_audit_schema").fetchone() == (1,)
        indexes = {name for (name,) in connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'task_audits'")}
    assert {"task_audits_event", "task_audits_created"} <= indexes


async def test_an_older_table_is_migrated_in_place(rt: Any, database: str) -> None:
    with psycopg.connect(database) as connection:  # the SQLite layout, copied over by hand: payload as text
        connection.execute("CREATE TABLE task_audits (id BIGSERIAL PRIMARY KEY, invocation_id TEXT NOT NULL, "
                           "event_type TEXT NOT NULL, tool_id TEXT NOT NULL, task_id TEXT, project_id TEXT, "
                           "mode TEXT, created_at DOUBLE PRECISION NOT NULL, payload TEXT NOT NULL)")
        connection.execute("INSERT INTO task_audits (invocation_id, event_type, tool_id, created_at, payload) "
                           "VALUES ('old', 'policy_decision', 't', 1, '{\"allowed\": false}')")
    sink = rt.audit_pg.PostgresAuditSink(database)
    sink.emit(rt.AuditEvent("policy_decision", "new", "t", 2.0, payload={"allowed": True}))
    sink.emit(rt.AuditEvent("policy_decision", "new", "t", 2.0, payload={"allowed": True}))  # idempotent
    sink.close()
    assert rows(database, "invocation_id, payload") == [("old", {"allowed": False}), ("new", {"allowed": True})]
    with psycopg.connect(database) as connection:
        kind = connection.execute("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                  "'task_audits' AND column_name = 'payload'").fetchone()
    assert kind == ("jsonb",)


async def test_a_row_postgresql_cannot_store_does_not_refuse_its_batch(rt: Any, database: str) -> None:
    sink = rt.audit_pg.PostgresAuditSink(database)
    hostile = [rt.AuditEvent("policy_decision", f"h{i}", "mcp:x:\x00evil\ud800", 1.0,
                             payload={"reason": "nul \x00 and \udcff"}) for i in range(3)]
    good = [rt.AuditEvent("policy_decision", f"g{i}", "mcp:probe:echo", 1.0) for i in range(20)]
    await asyncio.gather(*(sink.aemit_many([event]) for event in [*good[:10], *hostile, *good[10:]]))
    sink.close()
    stored = dict(rows(database, "invocation_id, tool_id"))
    assert len(stored) == 23
    assert stored["h0"] == "mcp:x:\ufffdevil\\ud800"


async def test_close_then_flush_returns_and_emit_after_close_is_refused(rt: Any, database: str) -> None:
    sink = rt.audit_pg.PostgresAuditSink(database)
    sink.emit(rt.AuditEvent("policy_decision", "a", "t", 1.0))
    sink.flush()
    sink.close()
    sink.flush()
    sink.close()
    with pytest.raises(RuntimeError, match="closed"):
        sink.emit(rt.AuditEvent("policy_decision", "b", "t", 1.0))


def run_workers(generated: Path, dsn: str, processes: int, calls: int, concurrency: int, delay: float,
                retry_for: float = 30.0, exit_mode: str = "exit") -> list[subprocess.Popen[str]]:
    """Start the fleet; by default each worker ends with `os._exit` right after `Router.aclose()`."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = []
    for _ in range(processes):
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.support.audit_pg_worker", str(generated), str(calls), str(concurrency), str(delay),
             str(retry_for), exit_mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=ROOT, env=environment)
        assert worker.stdin is not None
        worker.stdin.write(dsn)
        worker.stdin.close()
        worker.stdin = None  # written and closed: communicate() must not flush it again
        workers.append(worker)
    return workers


def collect(workers: list[subprocess.Popen[str]]) -> tuple[list[dict[str, Any]], str]:
    results, errors = [], ""
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        errors += err
        assert worker.returncode == 0, err[-3000:]
        results += [json.loads(line) for line in out.splitlines()]
    return results, errors


def assert_each_audited_once(dsn: str, results: list[dict[str, Any]]) -> None:
    stored = rows(dsn, "invocation_id, event_type, tool_id, task_id")
    per_event = Counter((invocation, event) for invocation, event, _, _ in stored)
    invocations = {result["invocation_id"] for result in results}
    assert len(invocations) == len(results)
    assert set(per_event.values()) == {1}, "an event was stored twice"
    assert len(stored) == 3 * len(results)
    for event in EVENTS:
        assert {invocation for invocation, kind in per_event if kind == event} == invocations, event
    assert {(tool, task) for _, _, tool, task in stored} == {("mcp:probe:echo", "fleet")}
    order: dict[str, list[str]] = {}
    for invocation, event, _, _ in stored:
        order.setdefault(invocation, []).append(event)
    assert set(map(tuple, order.values())) == {EVENTS}
    assert all(result["ran"] for result in results), "every call audited as started ran, and no other"


async def test_flush_returns_only_once_the_events_queued_before_it_are_stored(rt: Any, database: str) -> None:
    sink = rt.audit_pg.PostgresAuditSink(database)
    sink.emit(rt.AuditEvent("policy_decision", "first", "t", 1.0))  # connected and migrated
    late = []
    with psycopg.connect(database, autocommit=True) as reader:
        for trial in range(100):
            ends = [rt.AuditEvent("tool_invocation_end", f"t{trial}-{i}", "t", 1.0, payload={"status": "success"})
                    for i in range(3)]
            await asyncio.gather(*(sink.aemit_many([end]) for end in ends))  # deferred: returns before the commit
            sink.flush()
            (stored,) = reader.execute("SELECT count(*) FROM task_audits WHERE invocation_id LIKE %s",
                                       (f"t{trial}-%",)).fetchone()
            if stored != len(ends):
                late.append(trial)
    sink.close()
    assert late == [], f"flush() returned before the events queued ahead of it were stored in {len(late)}/100 trials"


def test_two_thousand_concurrent_calls_from_four_processes_exiting_at_once_are_each_audited_once(
        generated: Path, database: str) -> None:
    # Each worker ends with os._exit right after Router.aclose(): only what aclose() waited for can be stored.
    results, errors = collect(run_workers(generated, database, processes=4, calls=500, concurrency=500,
                                          delay=0.0))
    assert len(results) == 2_000
    assert [r for r in results if r["error"]] == []
    assert sorted(int(r["text"][1:]) for r in results) == sorted(list(range(500)) * 4)
    assert_each_audited_once(database, results)
    assert PASSWORD not in errors


def test_server_restart_mid_run_of_workers_exiting_at_once_loses_and_doubles_nothing(
        pg: PgServer, generated: Path, database: str) -> None:
    # 4 x 500 calls at once, each tool call taking 50 ms (10 at a time per MCP server): the starts are stored at
    # once, the ends trickle in for seconds, and the server crashes and comes back in between.
    expected = 4 * 500 * 3
    workers = run_workers(generated, database, processes=4, calls=500, concurrency=500, delay=0.05)
    deadline = time.monotonic() + 120
    seen = 0
    while seen < expected // 8 and time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            seen = len(rows(database, "id"))
        except psycopg.errors.UndefinedTable:
            seen = 0
    assert expected // 8 <= seen < expected, "the restart must fall in the middle of the run"
    pg.stop("immediate")  # a crash: transactions in flight are lost, commits in flight may or may not have landed
    time.sleep(1.0)
    pg.start()
    results, errors = collect(workers)
    assert len(results) == 2_000
    assert [r for r in results if r["error"]] == [], "no call may be refused for a restart shorter than retry_for"
    assert "audit database unavailable" in errors and "reachable again" in errors  # the outage was lived through
    assert_each_audited_once(database, results)
    assert PASSWORD not in errors


async def test_unreachable_server_refuses_calls_and_reports_it(rt: Any, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()  # nothing listens there
    sink = rt.audit_pg.PostgresAuditSink(f"host=127.0.0.1 port={port} dbname=x user=toolc password={PASSWORD}",
                                retry_for=0.3)
    router = rt.Router(audit_sink=sink)
    ran: list[str] = []
    server = probe_server()

    @server.tool()
    def spy(text: str) -> str:
        ran.append(text)
        return text

    router.set_server_factory("probe", lambda: server)
    with caplog.at_level(logging.DEBUG):
        results = [await router.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt)) for _ in range(2)]
    sink.close()
    for result in results:
        assert result.is_error and result.denied_by == "audit"
        assert result.error.startswith("audit unavailable (RuntimeError: audit database unavailable (")
        assert "refused" in result.error.lower() and result.error.endswith("call refused")
    assert ran == []
    assert any(r.levelno == logging.WARNING and "audit database unavailable" in r.getMessage()
               for r in caplog.records)
    assert PASSWORD not in caplog.text and all(PASSWORD not in (r.error or "") for r in results)


def every_text(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], results: list[Any]) -> str:
    handler = logging.Formatter()
    logged = "\n".join(handler.format(record) for record in caplog.records)  # messages and tracebacks
    captured = capsys.readouterr()
    return "\n".join([logged, captured.out, captured.err, *(repr(dataclasses.asdict(r)) for r in results)])


@pytest.mark.parametrize("shape", ["keywords", "url", "malformed", "env"])
async def test_a_wrong_password_never_appears_in_an_error_or_a_log(
        rt: Any, pg: PgServer, shape: str, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    wrong = "Wr0ng-s3cret-" + uuid.uuid4().hex[:8]
    dsn = {"keywords": pg.dsn(wrong),
           "url": f"postgresql://toolc:{wrong}@127.0.0.1:{pg.port}/postgres",
           "malformed": f"host=127.0.0.1 port={pg.port} password={wrong} user=toolc 'broken",
           "env": pg.dsn(wrong)}[shape]
    if shape == "env":  # through TOOLC_AUDIT_DSN and the router's own choice of sink
        router = rt.Router(environ={"TOOLC_AUDIT_DSN": dsn})
        assert type(router.audit).__name__ == "PostgresAuditSink"
        router.audit.retry_for = 0.3
    else:
        router = rt.Router(audit_sink=rt.audit_pg.PostgresAuditSink(dsn, retry_for=0.3))
    router.set_server_factory("probe", probe_server)
    with caplog.at_level(logging.DEBUG):
        results = [await router.call_tool("mcp:probe:echo", {"text": wrong}, context=context(rt)),
                   await router.call_tool("mcp:probe:nope", {}, context=context(rt))]
        router.audit.close()
    assert all(r.is_error and r.denied_by == "audit" for r in results), results
    reason = "password authentication failed" if shape != "malformed" else "malformed"
    assert reason in results[0].error
    text = every_text(caplog, capsys, results)
    assert wrong not in text


async def test_a_refused_login_refuses_calls_at_once_and_a_corrected_one_is_used(rt: Any, pg: PgServer) -> None:
    environ = {"AUDIT_PASSWORD": "Wr0ng-" + uuid.uuid4().hex[:8]}
    sink = rt.audit_pg.PostgresAuditSink(pg.dsn("${AUDIT_PASSWORD}"), environ=environ, expand_env=True, retry_for=10.0)
    router = rt.Router(audit_sink=sink)
    router.set_server_factory("probe", probe_server)
    refused = await router.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    assert refused.denied_by == "audit" and "password authentication failed" in refused.error
    # Refused as a login, not waited out as an outage ("audit database unavailable" after retry_for, 10 s here):
    # no reconnect attempt was backed off. The time it takes is bench/bench_hostile.py's to report.
    assert "audit database refused the login" in refused.error
    assert "audit database unavailable" not in refused.error
    assert sink._attempts == 0
    environ["AUDIT_PASSWORD"] = PASSWORD  # the operator fixes the secret: the next call logs in
    accepted = await router.call_tool("mcp:probe:echo", {"text": "y"}, context=context(rt))
    sink.close()
    assert not accepted.is_error, accepted.error


def _server_that_cuts_the_login_short() -> tuple[int, threading.Thread]:
    """A loopback server that speaks PostgreSQL's protocol up to the password, then drops the connection: what a
    server going down (or not yet up) does to a login, as libpq sees it."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection, listener:
            while True:
                size = int.from_bytes(connection.recv(4), "big")
                body = connection.recv(size - 4)
                if body[:4] in (b"\x04\xd2\x16\x2f", b"\x04\xd2\x16\x30"):  # SSL or GSS encryption asked
                    connection.sendall(b"N")
                    continue
                connection.sendall(b"R" + (8).to_bytes(4, "big") + (3).to_bytes(4, "big"))  # a password, please
                connection.recv(1024)  # the password message; then the server is gone
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def test_a_login_cut_short_by_a_restarting_server_is_waited_out_not_refused(rt: Any) -> None:
    port, server = _server_that_cuts_the_login_short()
    sink = rt.audit_pg.PostgresAuditSink(
        f"host=127.0.0.1 port={port} dbname=d user=u password=p connect_timeout=5", retry_for=1.0)
    with pytest.raises(psycopg.OperationalError) as raised:
        sink._connect(psycopg)
    server.join(timeout=10)
    assert not isinstance(raised.value, rt.audit_pg._LoginRefused)
    assert "server closed the connection unexpectedly" in str(raised.value)
    sink.close()


async def test_dsn_from_the_project_file_or_the_environment(pg: PgServer, database: str,
                                                            tmp_path: Path) -> None:
    build = make_build(probe_catalog())
    build.config = build.config.model_copy(update={"audit": AuditConfig(dsn="${FLEET_AUDIT_DSN}")})
    folder = write_router(build, tmp_path / "gen")
    assert "AUDIT_DSN: Final[str | None] = '${FLEET_AUDIT_DSN}'" in (
        folder / "toolc_router" / "_tables.py").read_text()
    with load_router(folder) as rt:
        server = probe_server()
        router = rt.Router(environ={"FLEET_AUDIT_DSN": database})
        router.set_server_factory("probe", lambda: server)
        result = await router.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
        router.audit.close()
        assert not result.is_error, result.error
        assert [event for _, event in rows(database)] == list(EVENTS)

        unset = rt.Router(environ={})
        refused = await unset.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
        unset.audit.close()
        assert refused.denied_by == "audit" and "FLEET_AUDIT_DSN is not set" in refused.error

        other = rt.Router(environ={"FLEET_AUDIT_DSN": "host=nowhere.invalid", "TOOLC_AUDIT_DSN": database})
        other.set_server_factory("probe", lambda: server)
        assert not (await other.call_tool("mcp:probe:echo", {"text": "y"}, context=context(rt))).is_error
        other.audit.close()
        assert len(rows(database)) == 6


def test_a_literal_password_in_the_project_file_is_refused_and_never_baked() -> None:
    build = make_build(probe_catalog())
    build.config = build.config.model_copy(update={"audit": AuditConfig(
        dsn="postgresql://audit:hunter2-literal@db.internal/audit")})
    files = generate_router(build)
    assert [d.code for d in build.diagnostics if d.code.startswith("TC67")] == ["TC670"]
    assert [d.pointer for d in build.diagnostics if d.code == "TC670"] == ["/audit/dsn"]
    assert not any(b"hunter2-literal" in content for content in files.values())
    assert b"AUDIT_DSN: Final[str | None] = None" in files["toolc_router/_tables.py"]


async def test_an_end_event_is_not_waited_for_but_its_loss_is_logged(rt: Any,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    sink = rt.audit_pg.PostgresAuditSink(f"host=127.0.0.1 port={free_port()} dbname=x user=toolc", retry_for=0.2)
    end = rt.AuditEvent("tool_invocation_end", "i", "t", 1.0, payload={"status": "success"})
    with caplog.at_level(logging.WARNING):
        await sink.aemit_many([end])  # returns at once: the call has already run
        sink.flush()  # ... and flush waits until it is written or given up
        with pytest.raises(RuntimeError, match="audit database unavailable"):
            await sink.aemit_many([rt.AuditEvent("tool_invocation_start", "i", "t", 1.0)])
        sink.close()
    assert any(r.levelno == logging.ERROR and "an end event could not be audited" in r.getMessage()
               for r in caplog.records)
    waiting = rt.audit_pg.PostgresAuditSink(f"host=127.0.0.1 port={free_port()} dbname=x", retry_for=0.2, wait_for_end=True)
    with pytest.raises(RuntimeError, match="audit database unavailable"):
        waiting.emit(end)  # as SQLite: the router then reports the call as not audited
    waiting.close()


async def test_without_psycopg_calls_are_refused_with_the_extra_to_install(rt: Any, database: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the optional extra were not installed
    router = rt.Router(audit_sink=rt.audit_pg.PostgresAuditSink(database))
    result = await router.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    router.audit.close()
    assert result.denied_by == "audit" and "pip install 'psycopg[binary]'" in result.error


async def test_a_role_that_may_only_insert_is_enough_once_the_schema_exists(rt: Any, pg: PgServer,
                                                                             database: str) -> None:
    rt.audit_pg.PostgresAuditSink(database).close()  # an owner's router (or a DBA) created the schema
    sink = rt.audit_pg.PostgresAuditSink(database)
    sink.emit(rt.AuditEvent("policy_decision", "owner", "t", 1.0))
    sink.close()
    role = f"writer_{uuid.uuid4().hex[:8]}"
    dbname = database.split("dbname=")[1].split()[0]
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'writer-pass-123'")
        connection.execute(f"GRANT CONNECT ON DATABASE {dbname} TO {role}")
        connection.execute(f"GRANT INSERT ON task_audits TO {role}")
        connection.execute(f"GRANT USAGE ON SEQUENCE task_audits_id_seq TO {role}")
        connection.execute(f"GRANT SELECT ON toolc_audit_schema TO {role}")
    writer = rt.audit_pg.PostgresAuditSink(f"host=127.0.0.1 port={pg.port} dbname={dbname} user={role} "
                                  "password=writer-pass-123")
    writer.emit(rt.AuditEvent("policy_decision", "writer", "t", 2.0))
    writer.emit(rt.AuditEvent("policy_decision", "writer", "t", 2.0))  # a retry: ON CONFLICT needs no SELECT
    writer.close()
    assert [invocation for invocation, _ in rows(database)] == ["owner", "writer"]
