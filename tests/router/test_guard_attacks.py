"""Attacks on the generated router as a trust boundary (issue 10: no validation, secrets leak, audit fails open,
policy names). A model's tool call is untrusted JSON: each test sends it through `call_tool`, a stub, and each
provider entry point, then checks exactly what reached the wire (a loopback HTTP server recording raw requests,
an in-process MCP server recording calls), what the caller got, and what the audit table holds."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import shutil
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from compiler.config import OpenApiConfig, RecordingConfig, ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.ir import Catalog, RiskLevel
from compiler.sources.mcp_env import connection_for
from compiler.sources.mcp_transport import StderrTail
from compiler.sources.openapi import read_openapi
from compiler.sources.recording import read_recording
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.paths import FIXTURES, ROOT
from tests.support.router import load_router, make_build, with_name_maps, write_router

USERS_API = OpenApiConfig(id="users", path="fixtures/guard/users.yaml", base_url="${USERS_URL}")
KEY = "sk-live-4f9a2c7e1b"
ADMIN = "admin-token-77c1"
FROZEN = {"mode": "execution", "project_id": "p", "spec_frozen": True, "spec_hash": "sha256:1"}


def guard_catalog(*, trusted: bool = False) -> Catalog:
    diagnostics = Diagnostics()
    users = read_openapi(load_document(FIXTURES / "guard" / "users.yaml"), source_id="users", location="users",
                         diagnostics=diagnostics, config=USERS_API)
    liar = read_recording(json.loads((FIXTURES / "guard" / "liar.json").read_text()), source_id="liar",
                          location="liar", diagnostics=diagnostics,
                          config=RecordingConfig(id="liar", path="liar.json", trusted=trusted))
    read = [users, liar]
    return Catalog(sources=tuple(sorted((s for s, _ in read), key=lambda s: s.id)),
                   tools=tuple(sorted((t for _, ts in read for t in ts), key=lambda t: t.id)))


# The wire --------------------------------------------------------------------------------------------------------

class Wire(QuietHandler):
    """Records every raw request; `page_size=500` answers 500 with the request headers echoed in the body."""

    seen: ClassVar[list[dict[str, Any]]] = []
    audit_db: ClassVar[Path | None] = None

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        started = 0
        if Wire.audit_db is not None and Wire.audit_db.exists():  # what the audit table held when this arrived
            with sqlite3.connect(Wire.audit_db) as connection:
                started = connection.execute(
                    "SELECT count(*) FROM task_audits WHERE event_type = 'tool_invocation_start'").fetchone()[0]
        Wire.seen.append({"line": f"{self.command} {self.path}", "headers": self.headers.items(), "body": body,
                          "audited_starts": started})
        echo = "page_size=500" in self.path
        self.send_json(500 if echo else 200,
                       json.dumps({"headers": dict(self.headers.items())} if echo else {"ok": True}).encode())

    do_GET = do_POST = do_DELETE = _handle


@pytest.fixture
def wire() -> Iterator[str]:
    Wire.seen, Wire.audit_db = [], None
    with loopback_http(Wire) as url:
        yield url


def liar_server(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("liar", version="1.0")

    @server.tool()
    def delete_everything(scope: str) -> str:
        calls.append(("delete_everything", {"scope": scope}))
        return f"deleted {scope}"

    @server.tool()
    def echo(text: str) -> str:
        calls.append(("echo", {"text": text}))
        return text

    return server


# The router ------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Guard:
    rt: Any
    router: Any
    db: Path
    mcp_calls: list[tuple[str, dict[str, Any]]]
    folder: Path

    def ctx(self, **fields: Any) -> Any:
        return self.rt.InvocationContext(**{**FROZEN, "admin_token": ADMIN, **fields})

    def rows(self, invocation_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        with sqlite3.connect(self.db) as connection:
            found = connection.execute("SELECT invocation_id, event_type, payload FROM task_audits ORDER BY id")
            return [(kind, json.loads(payload)) for invocation, kind, payload in found
                    if invocation_id is None or invocation == invocation_id]

    def audit_text(self) -> str:
        with sqlite3.connect(self.db) as connection:
            return "\n".join(" ".join(map(str, row)) for row in connection.execute("SELECT * FROM task_audits"))

    def name(self, target: str, tool_id: str) -> str:
        return next(name for name, entry in self.rt.router.providers.NAME_MAPS[target].items()
                    if entry.tool_id == tool_id)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    build = with_name_maps(make_build(guard_catalog(), openapi=[USERS_API], root=ROOT))
    folder = write_router(build, tmp_path / "gen")
    shutil.copytree(ROOT / "generated" / "python" / "params", folder / "params")  # typed stubs (golden record)
    with load_router(folder) as module:
        yield module
    for name in [m for m in sys.modules if m == "params" or m.startswith("params.")]:
        del sys.modules[name]


def make_guard(rt: Any, tmp_path: Path, url: str, *, sink: Any = None, environ: dict[str, str] | None = None) -> Guard:
    db = tmp_path / "audit.db"
    env = {"USERS_URL": url, "TOOLC_USERS_KEY": KEY, "TOOLC_ADMIN_TOKEN": ADMIN, "PARAMS_URL": url,
           **(environ or {})}
    router = rt.configure(rt.Router(audit_sink=sink or rt.SqliteAuditSink(db), environ=env))
    calls: list[tuple[str, dict[str, Any]]] = []
    server = liar_server(calls)
    router.set_server_factory("liar", lambda: server)
    return Guard(rt, router, db, calls, tmp_path)


@pytest.fixture
async def guard(rt: Any, tmp_path: Path, wire: str) -> AsyncIterator[Guard]:
    g = make_guard(rt, tmp_path, wire)
    Wire.audit_db = g.db
    yield g
    await g.router.aclose()
    g.router.audit.close()


def assert_refused(g: Guard, result: Any, gate: str, *needles: str) -> None:
    """Refused by `gate`, nothing on the wire, and the audit table holds exactly decision + violation."""
    assert result.is_error and result.denied_by == gate, (result.denied_by, result.error)
    for needle in needles:
        assert needle in (result.error or ""), (needle, result.error)
    assert Wire.seen == [] and g.mcp_calls == []
    rows = g.rows(result.invocation_id)
    assert [kind for kind, _ in rows] == ["policy_decision", "policy_violation"]
    assert rows[0][1]["allowed"] is False and rows[0][1]["gate"] == rows[1][1]["gate"] == gate
    for needle in needles:  # the audit names the same place, but keeps no argument value (issue 22)
        assert needle.split(": ")[0] in rows[0][1]["reason"]
        assert rows[0][1]["reason"] == rows[1][1]["reason"]


# 1. No validation ------------------------------------------------------------------------------------------------

class TestNoValidation:
    @pytest.mark.parametrize(("arguments", "pointer"), [
        ({"page_size": "ten"}, "/page_size: 'ten' is not of type 'integer'"),
        ({"page_size": 10, "tenant": "evil"}, "/tenant: unexpected argument"),
        ({"page_size": {"tenant": "evil"}}, "/page_size:"),
        ({"page_size": 501}, "/page_size: 501 is greater than the maximum"),
        ({"api_key": "ATTACKER", "X-Api-Key": "ATTACKER"}, "/X-Api-Key, /api_key: unexpected argument"),
        ({f"k{i:05}": i for i in range(10_000)}, "/k00000, /k00001, /k00002, /k00003, /k00004 and 9995 more:"),
        ({"x" * 5000: 1}, "/" + "x" * 80 + "…: unexpected argument"),
    ])
    async def test_call_tool_refuses_before_io(self, guard: Guard, arguments: dict[str, Any], pointer: str) -> None:
        result = await guard.rt.call_tool("openapi:users:listUsers", arguments, context=guard.ctx())
        assert_refused(guard, result, "validation", pointer)

    async def test_missing_required_and_closed_body(self, guard: Guard) -> None:
        result = await guard.rt.call_tool("openapi:users:deleteUser", {}, context=guard.ctx())
        assert_refused(guard, result, "validation", "/id: required argument is missing")
        Wire.seen.clear()
        result = await guard.rt.call_tool("openapi:users:createUser", {"name": "a", "role": "admin"},
                                          context=guard.ctx())
        assert_refused(guard, result, "validation", "/role: unexpected argument")

    async def test_each_provider_entry_point(self, guard: Guard) -> None:
        tool = "openapi:users:listUsers"
        chat = {"id": "c1", "function": {"name": guard.name("openai-chat", tool), "arguments": '{"page_size": "ten"}'}}
        result = await guard.rt.call_openai_tool_call(chat, context=guard.ctx())
        assert result.call_id == "c1"
        assert_refused(guard, result, "validation", "/page_size")
        responses = {"call_id": "r2", "name": guard.name("openai-responses", tool), "arguments": '{"page_size": 1'}
        result = await guard.rt.call_openai_tool_call(responses, context=guard.ctx())
        assert_refused(guard, result, "validation", "arguments are not valid JSON")
        block = {"id": "a3", "name": guard.name("anthropic", tool), "input": ["page_size", 10]}
        result = await guard.rt.call_anthropic_tool_use(block, context=guard.ctx())
        assert_refused(guard, result, "validation", "arguments must be a JSON object, not list")
        call = {"function_call": {"id": "g4", "name": guard.name("gemini", tool), "args": {"page_size": 2.5}}}
        result = await guard.rt.call_gemini_function_call(call, context=guard.ctx())
        assert_refused(guard, result, "validation", "/page_size: 2.5 is not of type 'integer'")
        result = await guard.rt.call_openai_tool_call(
            {"id": "c5", "function": {"name": guard.name("openai-chat", tool), "arguments": '"page_size"'}},
            context=guard.ctx())
        assert_refused(guard, result, "validation", "not str")

    async def test_mcp_tool_arguments(self, guard: Guard) -> None:
        for arguments, pointer in (({"text": 5}, "/text: 5 is not of type 'string'"),
                                   ({"text": "x", "shell": "rm -rf /"}, "/shell: unexpected argument")):
            result = await guard.rt.call_tool("mcp:liar:echo", arguments, context=guard.ctx())
            assert_refused(guard, result, "validation", pointer)

    async def test_stubs(self, guard: Guard) -> None:
        from pydantic import ValidationError

        params_tools = importlib.import_module("params.tools")  # the golden record's stubs for params.yaml

        support = guard.rt.stubs
        # An untyped stub (no pydantic model) hands plain data over: the router is what checks it.
        arguments = support.build_arguments(None, required={"id": "ten"})
        result = await support.call_tool("openapi:users:deleteUser", arguments, context=guard.ctx())
        assert_refused(guard, result, "validation", "/id: 'ten' is not of type 'integer'")
        # A typed stub refuses in Python before the router is even asked: nothing sent, nothing audited.
        before = len(guard.rows())
        with pytest.raises(ValidationError):
            await params_tools.get_pet(id_="ten", context=guard.ctx())  # type: ignore[arg-type]
        assert Wire.seen == [] and len(guard.rows()) == before

    async def test_a_schema_python_cannot_check_refuses(self, tmp_path: Path) -> None:
        ecma_only = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(?<word>\\w+)$"}}}
        catalog = guard_catalog()
        tools = tuple(dataclasses.replace(t, input_schema=ecma_only) if t.id == "mcp:liar:echo" else t
                      for t in catalog.tools)
        build = make_build(Catalog(sources=catalog.sources, tools=tools), openapi=[USERS_API], root=ROOT)
        folder = write_router(build, tmp_path / "gen")
        assert [(d.code, d.tool, d.pointer) for d in build.diagnostics if d.code == "TC650"] == [
            ("TC650", "mcp:liar:echo", "/properties/text/pattern")]
        calls: list[tuple[str, dict[str, Any]]] = []
        with load_router(folder) as module:
            router = module.Router(audit_sink=module.MemoryAuditSink())
            server = liar_server(calls)
            router.set_server_factory("liar", lambda: server)
            result = await router.call_tool("mcp:liar:echo", {"text": "hi"}, context=module.InvocationContext(**FROZEN))
            assert result.denied_by == "validation" and "cannot be checked" in (result.error or "") and calls == []
            assert [e.event_type for e in router.audit.events] == ["policy_decision", "policy_violation"]

    def test_schemas_file_is_indexed_exactly(self, tmp_path: Path) -> None:
        # Hostile tool names (quotes, newlines, lookalikes) and shared $defs: the lazy per-line index must give
        # back exactly what a full JSON parse gives.
        hostile = read_recording(json.loads((FIXTURES / "codegen" / "hostile.json").read_text()),
                                 source_id="hostile", location="hostile", diagnostics=Diagnostics())
        catalog = guard_catalog()
        catalog = Catalog(sources=(*catalog.sources, hostile[0]), tools=(*catalog.tools, *hostile[1]))
        folder = write_router(make_build(catalog, openapi=[USERS_API], root=ROOT), tmp_path / "gen")
        text = (folder / "toolc_router" / "_schemas.json").read_text()
        with load_router(folder) as module:
            index = importlib.import_module("toolc_router.validate").index_schemas(text)
            module.Router(audit_sink=module.MemoryAuditSink())  # imports cleanly
        full = json.loads(text)
        assert {key: json.loads(value) for key, value in index["tools"].items()} == full["tools"]
        assert {key: json.loads(value) for key, value in index["defs"].items()} == full["defs"] != {}
        assert len(full["tools"]) == len(catalog.tools)

    async def test_well_formed_calls_go_out_exactly(self, guard: Guard) -> None:
        # `format` is an annotation only (documented): `since` is not a date-time, and the API decides.
        result = await guard.rt.call_tool("openapi:users:listUsers", {"page_size": 10, "since": "yesterday"},
                                          context=guard.ctx())
        assert not result.is_error, result.error
        [request] = Wire.seen
        assert request["line"] == "GET /users?page_size=10&since=yesterday"
        assert [value for name, value in request["headers"] if name.lower() == "x-api-key"] == [KEY]
        assert [kind for kind, _ in guard.rows(result.invocation_id)] == [
            "policy_decision", "tool_invocation_start", "tool_invocation_end"]


# 2. Secrets leak -------------------------------------------------------------------------------------------------

class TestSecretsLeak:
    @pytest.mark.parametrize("bad", [KEY + "\r\nX-Injected: 1", KEY + "\n", "\r" + KEY])
    async def test_credential_with_a_line_break_is_refused_when_loaded(self, rt: Any, tmp_path: Path, wire: str,
                                                                       bad: str) -> None:
        g = make_guard(rt, tmp_path, wire, environ={"TOOLC_USERS_KEY": bad})
        result = await g.rt.call_tool("openapi:users:listUsers", {"page_size": 1}, context=g.ctx())
        assert result.is_error and "TOOLC_USERS_KEY holds a line break" in (result.error or "")
        assert Wire.seen == []
        text = result.error + json.dumps(result.content) + g.audit_text()
        assert KEY not in text and "X-Injected" not in text
        g.router.audit.close()

    async def test_mcp_server_secret_with_a_line_break_starts_nothing(self, tmp_path: Path) -> None:
        marker = tmp_path / "started"
        server = ServerConfig(id="liar", command=(sys.executable, "-c", f"open({str(marker)!r}, 'w')"),
                              env={"API_TOKEN": "${LIAR_TOKEN}"})
        build = with_name_maps(make_build(guard_catalog(), openapi=[USERS_API], servers=[server], root=ROOT))
        with load_router(write_router(build, tmp_path / "gen")) as module:
            router = module.Router(audit_sink=module.SqliteAuditSink(tmp_path / "a.db"),
                                   environ={"LIAR_TOKEN": "tok-123456\nX: y", "TOOLC_ADMIN_TOKEN": ADMIN})
            assert module._tables.SECRET_ENV == ("LIAR_TOKEN", "TOOLC_ADMIN_TOKEN", "TOOLC_USERS_KEY")
            result = await router.call_tool("mcp:liar:echo", {"text": "x"},
                                             context=module.InvocationContext(**FROZEN))
            assert result.is_error and "LIAR_TOKEN holds a line break" in (result.error or "")
            assert not marker.exists()
            router.audit.close()

    async def test_errors_and_audit_rows_are_redacted(self, guard: Guard) -> None:
        # The API echoes the request headers (the credential) into a 500 error body.
        result = await guard.rt.call_tool("openapi:users:listUsers", {"page_size": 500}, context=guard.ctx())
        assert result.is_error and len(Wire.seen) == 1
        assert KEY not in json.dumps(result.content) and "[REDACTED]" in json.dumps(result.content)

        def leaky(tool: Any, arguments: dict[str, Any], result: Any) -> Any:
            raise RuntimeError("x" * 1995 + KEY + " and the admin token " + ADMIN)

        guard.router.register_postprocessor("openapi:users:*", leaky)
        result = await guard.rt.call_tool("openapi:users:listUsers", {"page_size": 1}, context=guard.ctx())
        assert result.is_error
        # Redacted first, then cut: not even a prefix of the secret is left at the cut.
        for text in (result.error, json.dumps(result.content), guard.audit_text()):
            assert not any(KEY[:n] in text for n in range(6, len(KEY) + 1))
            assert ADMIN not in text
        assert result.error.startswith("RuntimeError: " + "x" * 1985) and len(result.error) <= 2001

    async def test_a_gate_quoting_the_admin_token_is_redacted(self, guard: Guard) -> None:
        def nosy(tool: Any, context: Any) -> Any:
            return guard.rt.PolicyDecision(False, "nosy", f"token {context.admin_token} rejected")

        guard.router.register_gate(guard.rt.Gate("nosy", nosy))
        result = await guard.rt.call_tool("mcp:liar:echo", {"text": "x"}, context=guard.ctx())
        assert_refused(guard, result, "nosy", "token [REDACTED] rejected")
        assert ADMIN not in guard.audit_text()

    @pytest.mark.parametrize("cut", [0, 5, 11, 17])
    async def test_a_diagnostic_quoting_stderr_holds_no_piece_of_a_secret(self, monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path, cut: int) -> None:
        from compiler.sources.mcp_fetch import fetch_server
        from compiler.sources.mcp_transport import STDERR_TAIL_CHARS

        secret = "tok_" + "Q" * 28
        monkeypatch.setenv("GUARD_TOKEN", secret)
        # The server prints its token to stderr so that the tail's cut falls inside it, then dies before the handshake.
        script = ("import os, sys; t = os.environ['API_TOKEN']; "
                  f"sys.stderr.write('boot ' * 400 + t + 'z' * {STDERR_TAIL_CHARS - cut} + '\\n'); sys.exit(3)")
        server = ServerConfig(id="leaky", command=(sys.executable, "-c", script), env={"API_TOKEN": "${GUARD_TOKEN}"},
                              timeout_ms=20_000)
        outcome = await fetch_server(server, root=str(tmp_path))
        messages = " ".join(d.message for d in outcome.diagnostics)
        assert outcome.document is None and "stderr:" in messages
        assert not any(secret[n:n + 6] in messages for n in range(len(secret) - 5)), messages[-200:]

    def test_compiler_redacts_stderr_before_cutting_it(self) -> None:
        secret = "ghp_" + "Z" * 30
        server = ServerConfig(id="s", command=("srv",), env={"GITHUB_TOKEN": "${GH}"})
        connection = connection_for(server, root=".", environ={"GH": secret + "\r\nsecond-line-secret"})
        assert {secret, "second-line-secret"} <= set(connection.secrets)
        tail = StderrTail()
        try:
            for cut in range(0, 40, 7):  # whatever the cut point, no part of the secret survives
                tail.file.seek(0)
                tail.file.truncate()
                tail.file.write("noise " * 300 + "x" * cut + secret + "\r\nsecond-line-secret\n" + "y" * 1480)
                text = tail.tail(connection.redact)
                assert not any(secret[n:n + 8] in text for n in range(len(secret) - 8))
                assert "second-line-secret" not in text
        finally:
            tail.close()


# 3. Audit fails open ---------------------------------------------------------------------------------------------

def refusing_database(path: Path) -> Path:
    """A database that opens and has the table, but whose inserts are refused (a trigger that RAISEs)."""
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE task_audits (id INTEGER PRIMARY KEY AUTOINCREMENT, invocation_id TEXT NOT NULL,"
            " event_type TEXT NOT NULL, tool_id TEXT NOT NULL, task_id TEXT, project_id TEXT, mode TEXT,"
            " created_at REAL NOT NULL, payload TEXT NOT NULL);"
            "CREATE TRIGGER refuse BEFORE INSERT ON task_audits BEGIN SELECT RAISE(ABORT, 'audit refused'); END;")
    return path


_FILLER = ("INSERT INTO task_audits (invocation_id, event_type, tool_id, created_at, payload)"
           " VALUES ('', '', '', 0, '')")


class TestAuditFailsOpen:
    async def _every_call_refused(self, g: Guard) -> None:
        calls = [("openapi:users:listUsers", {"page_size": 1}), ("mcp:liar:echo", {"text": "x"}),
                 ("openapi:users:listUsers", {"page_size": 2})]
        for tool_id, arguments in calls:  # the first call included: no writer thread decides it later
            result = await g.rt.call_tool(tool_id, arguments, context=g.ctx())
            assert result.is_error and result.denied_by == "audit", result.error
        chat = {"id": "c", "function": {"name": g.name("openai-chat", "mcp:liar:echo"), "arguments": '{"text": "y"}'}}
        assert (await g.rt.call_openai_tool_call(chat, context=g.ctx())).denied_by == "audit"
        assert Wire.seen == [] and g.mcp_calls == []

    async def test_a_trigger_that_refuses_inserts(self, rt: Any, tmp_path: Path, wire: str) -> None:
        db = refusing_database(tmp_path / "refusing.db")
        g = make_guard(rt, tmp_path, wire, sink=rt.SqliteAuditSink(db))
        await self._every_call_refused(g)
        with sqlite3.connect(db) as connection:
            assert connection.execute("SELECT count(*) FROM task_audits").fetchone() == (0,)
        g.router.audit.close()

    async def test_a_table_that_is_a_view(self, rt: Any, tmp_path: Path, wire: str) -> None:
        db = tmp_path / "view.db"
        with sqlite3.connect(db) as connection:  # opens fine; `task_audits` cannot take an insert
            connection.execute("CREATE VIEW task_audits AS SELECT 1 AS id")
        g = make_guard(rt, tmp_path, wire, sink=rt.SqliteAuditSink(db))
        await self._every_call_refused(g)
        g.router.audit.close()

    async def test_a_full_disk(self, rt: Any, tmp_path: Path, wire: str) -> None:
        class FullDisk(rt.SqliteAuditSink):  # type: ignore[name-defined,misc]
            """The database may not grow (`max_page_count`), and tiny rows have taken every free byte."""

            def _open(self) -> sqlite3.Connection:
                connection: sqlite3.Connection = super()._open()
                pages = connection.execute("PRAGMA page_count").fetchone()[0]
                connection.execute(f"PRAGMA max_page_count = {pages}")
                with contextlib.suppress(sqlite3.OperationalError):  # "database or disk is full"
                    while True:
                        with connection:
                            connection.execute(_FILLER)
                return connection

        g = make_guard(rt, tmp_path, wire, sink=FullDisk(tmp_path / "full.db"))
        await self._every_call_refused(g)
        g.router.audit.close()
        with sqlite3.connect(tmp_path / "full.db") as connection:
            assert connection.execute("SELECT count(*) FROM task_audits WHERE invocation_id != ''").fetchone() == (0,)

    async def test_an_unopenable_database(self, rt: Any, tmp_path: Path, wire: str) -> None:
        (tmp_path / "a-directory.db").mkdir()
        g = make_guard(rt, tmp_path, wire, sink=rt.SqliteAuditSink(tmp_path / "a-directory.db"))
        await self._every_call_refused(g)

    async def test_start_is_committed_before_the_request_goes_out(self, guard: Guard) -> None:
        for n in range(1, 4):
            result = await guard.rt.call_tool("openapi:users:listUsers", {"page_size": n}, context=guard.ctx())
            assert not result.is_error
        # The loopback server read the audit table (another connection) as each request arrived.
        assert [request["audited_starts"] for request in Wire.seen] == [1, 2, 3]

    async def test_flush_after_close_returns(self, guard: Guard) -> None:
        await guard.rt.call_tool("mcp:liar:echo", {"text": "x"}, context=guard.ctx())
        guard.router.audit.close()
        await asyncio.wait_for(guard.router.flush(), timeout=60)  # a hang guard, not a timing assertion
        guard.router.audit.flush()
        result = await guard.rt.call_tool("mcp:liar:echo", {"text": "after close"}, context=guard.ctx())
        assert result.denied_by == "audit" and guard.mcp_calls == [("echo", {"text": "x"})]
        assert [kind for kind, _ in guard.rows()] == ["policy_decision", "tool_invocation_start",
                                                      "tool_invocation_end"]


# 4. Policy names -------------------------------------------------------------------------------------------------

class TestPolicyNames:
    @pytest.mark.parametrize("rule", ["deleteUser", "users:deleteUser", "openapi:users:deleteUser", "delete*"])
    async def test_a_deny_rule_catches_renamed_duplicates(self, guard: Guard, rule: str) -> None:
        guard.router.policy = guard.rt.policy.PolicyEngine(
            dataclasses.replace(guard.rt.router.POLICY, deny_tools=(rule,)), {}, {})
        for tool_id in ("openapi:users:deleteUser", "openapi:users:deleteUser_2"):
            result = await guard.rt.call_tool(tool_id, {"id": 1}, context=guard.ctx())
            assert_refused(guard, result, "disabled", "not allowed")
            for target in ("openai-chat", "anthropic"):
                name = guard.name(target, tool_id)
                call = ({"id": "c", "function": {"name": name, "arguments": '{"id": 1}'}} if target == "openai-chat"
                        else {"id": "a", "name": name, "input": {"id": 1}})
                entry = guard.rt.call_openai_tool_call if target == "openai-chat" else guard.rt.call_anthropic_tool_use
                assert_refused(guard, await entry(call, context=guard.ctx()), "disabled")

    async def test_provider_names_and_admin_lists(self, guard: Guard) -> None:
        provider_name = guard.name("gemini", "openapi:users:listUsers")
        guard.router.policy = guard.rt.policy.PolicyEngine(
            dataclasses.replace(guard.rt.router.POLICY, deny_tools=(provider_name,), admin_tools=("deleteUser",),
                                admin_min_risk=None), {}, guard.router._environ)
        result = await guard.rt.call_gemini_function_call({"name": provider_name, "args": {"page_size": 1}},
                                                          context=guard.ctx())
        assert_refused(guard, result, "disabled")
        result = await guard.rt.call_tool("openapi:users:deleteUser_2", {"id": 3}, context=guard.ctx(admin_token=None))
        assert_refused(guard, result, "admin_token", "requires an admin_token")
        allowed = await guard.rt.call_tool("openapi:users:deleteUser_2", {"id": 3}, context=guard.ctx())
        assert not allowed.is_error and [r["line"] for r in Wire.seen] == ["DELETE /admin/users/3"]

    async def test_annotations_cannot_lower_risk_of_an_untrusted_server(self, guard: Guard) -> None:
        tool = guard.rt.router.TOOLS["mcp:liar:delete_everything"]
        assert tool.risk == RiskLevel.CRITICAL and "fs.delete" in tool.side_effects  # despite readOnlyHint: true
        result = await guard.rt.call_tool("mcp:liar:delete_everything", {"scope": "all"},
                                          context=guard.ctx(admin_token=None))
        assert_refused(guard, result, "admin_token")
        result = await guard.rt.call_tool("mcp:liar:delete_everything", {"scope": "all"},
                                          context=guard.ctx(mode="planning"))
        assert_refused(guard, result, "mode", "side effects")

    def test_a_trusted_server_is_believed(self) -> None:
        trusted = {t.id: t for t in guard_catalog(trusted=True).tools}
        untrusted = {t.id: t for t in guard_catalog().tools}
        assert trusted["mcp:liar:delete_everything"].risk == RiskLevel.LOW
        assert untrusted["mcp:liar:delete_everything"].risk == RiskLevel.CRITICAL
        assert trusted["mcp:liar:echo"].risk == untrusted["mcp:liar:echo"].risk == RiskLevel.LOW

    @pytest.mark.parametrize(("name", "hints", "untrusted", "trusted"), [
        ("delete_everything", {"read_only_hint": True}, RiskLevel.CRITICAL, RiskLevel.LOW),
        ("purge_cache", {"destructive_hint": False, "read_only_hint": False}, RiskLevel.CRITICAL, RiskLevel.HIGH),
        ("drop_table", {"idempotent_hint": True}, RiskLevel.CRITICAL, RiskLevel.HIGH),
        ("list_items", {"destructive_hint": True}, RiskLevel.HIGH, RiskLevel.HIGH),  # raising is always believed
        ("notes", {"read_only_hint": False, "destructive_hint": False}, RiskLevel.MEDIUM, RiskLevel.MEDIUM),
    ])
    def test_annotations_only_raise_unless_trusted(self, name: str, hints: dict[str, bool], untrusted: RiskLevel,
                                                   trusted: RiskLevel) -> None:
        from compiler.ir import Annotations
        from compiler.pipeline import _recording_settings
        from compiler.policy import infer_risk

        annotations = Annotations(**hints)
        assert infer_risk(name, "", annotations)[0] == untrusted
        assert infer_risk(name, "", annotations, trusted=True)[0] == trusted
        plain_effects = set(infer_risk(name, "")[1])
        assert plain_effects <= set(infer_risk(name, "", annotations)[1])  # effects are never taken away either
        settings = _recording_settings(ServerConfig(id="s", command=("s",), trusted=True))
        assert settings is not None and settings.trusted

    async def test_malformed_arguments_are_refused_and_audited_not_raised(self, guard: Guard) -> None:
        for raw in ('{"id": ', "not json", b"\xff\xfe", "[]", "null"):
            name = guard.name("openai-chat", "openapi:users:deleteUser")
            result = await guard.rt.call_openai_tool_call({"id": "c", "function": {"name": name, "arguments": raw}},
                                                          context=guard.ctx())
            assert_refused(guard, result, "validation")
