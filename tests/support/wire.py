"""Shared helpers of the router wire tests: the wire fixture pointed at loopback servers, a generated router for an
OpenAPI document (with its project-file settings), calls through it (`WireHarness`, `call_once`), and what the audit
table recorded."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from compiler.config import OpenApiConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.ir import Catalog
from compiler.sources.openapi import read_openapi
from tests.servers.raw_http import RawRecorder, RawRequest
from tests.support.paths import FIXTURES
from tests.support.router import load_router, make_build, with_name_maps, write_router

WIRE = FIXTURES / "openapi" / "wire.yaml"
API_KEY = "SECRET-KEY-1"
SESSION = "sess-2"
CREDENTIALS = {"TOOLC_WIRE_QUERYKEY": API_KEY, "TOOLC_WIRE_SESSIONCOOKIE": SESSION}
FROZEN = {"mode": "execution", "project_id": "proj", "spec_frozen": True, "spec_hash": "sha256:abc"}


def wire_document(primary: str, secondary: str) -> dict[str, Any]:
    """The wire fixture with its server variable defaults turned into loopback ports: `"1"` → `primary`'s port,
    `"2"` → `secondary`'s (URLs `http://127.0.0.1:<port>`)."""
    document = copy.deepcopy(load_document(WIRE))
    ports = {"1": primary.rsplit(":", 1)[1], "2": secondary.rsplit(":", 1)[1]}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("url"), str) and isinstance(node.get("variables"), dict):
                port = node["variables"].get("port")
                if isinstance(port, dict):
                    port["default"] = ports[port["default"]]
                    if "enum" in port:
                        port["enum"] = [ports.get(str(item), str(item)) for item in port["enum"]]
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(document)
    return document


def read_catalog(document: dict[str, Any], source_id: str, config: OpenApiConfig,
                 diagnostics: Diagnostics | None = None) -> Catalog:
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    source, tools = read_openapi(document, source_id=source_id, location=f"{source_id}.yaml",
                                 diagnostics=diagnostics, config=config)
    return Catalog(sources=(source,), tools=tuple(sorted(tools, key=lambda t: t.id)))


@contextlib.contextmanager
def generated_router(folder: Path, document: dict[str, Any], source_id: str = "wire",
                     config: OpenApiConfig | None = None, *, name_maps: bool = False) -> Iterator[Any]:
    """Compile `document` into a router in `folder` and import it (the compile must be free of errors); with
    `name_maps`, the providers' real name maps are baked in too (the provider entry points route by them)."""
    config = config if config is not None else OpenApiConfig(id=source_id, path=f"{source_id}.yaml")
    diagnostics = Diagnostics()
    catalog = read_catalog(document, source_id, config, diagnostics)
    errors = [d.render() for d in diagnostics if d.severity.name == "ERROR"]
    assert not errors, errors
    build = make_build(catalog, openapi=[config])
    if name_maps:
        build = with_name_maps(build)
    with load_router(write_router(build, folder)) as module:
        yield module


def audit_events(database: Path, invocation_id: str) -> list[tuple[str, dict[str, Any]]]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        rows = connection.execute("SELECT event_type, payload FROM task_audits WHERE invocation_id = ? ORDER BY id",
                                  (invocation_id,)).fetchall()
    return [(kind, json.loads(payload)) for kind, payload in rows]


def audited_as_refused(database: Path, result: Any) -> bool:
    """The audit shows the call did not succeed: a denial, or an end event with status error."""
    events = audit_events(database, result.invocation_id)
    kinds = [kind for kind, _ in events]
    if "policy_violation" in kinds or any(kind.endswith("denied") or "denial" in kind for kind in kinds):
        return True
    ends = [payload for kind, payload in events if kind == "tool_invocation_end"]
    return bool(ends) and all(payload.get("status") != "success" for payload in ends)


def assert_refused(sent: list[Any], database: Path, result: Any, *words: str) -> None:
    """Nothing reached the wire; the caller got an error (naming `words`); the audit shows no success."""
    assert sent == [], [r.request_line for r in sent]
    assert result.is_error, result
    for word in words:
        assert word in (result.error or ""), result.error
    assert audited_as_refused(database, result)


class WireHarness:
    """One generated router with a fresh audit database, in front of two recording servers (`primary`, where the
    document's servers point, and `secondary`): what a call sent, and the checks every attack test makes on it."""

    def __init__(self, rt: Any, database: Path, servers: tuple[RawRecorder, RawRecorder], *, source: str,
                 environ: dict[str, str], api_key: str, session: str) -> None:
        self.rt, self.database, self.source = rt, database, source
        self.primary, self.secondary = servers
        self.api_key, self.session = api_key, session
        self.router = rt.Router(audit_sink=rt.SqliteAuditSink(database), environ=environ)
        self.context = rt.InvocationContext(**FROZEN)

    def reset(self) -> None:
        for server in (self.primary, self.secondary):
            server.clear()
            server.respond = None

    async def call(self, operation: str, arguments: Any) -> Any:
        self.reset()
        result = await self.router.call_tool(f"openapi:{self.source}:{operation}", arguments, context=self.context)
        self.router.audit.flush()
        return result

    @property
    def sent(self) -> list[RawRequest]:
        return self.primary.requests + self.secondary.requests

    def refused(self, result: Any, *words: str) -> None:
        """Nothing reached either server; the caller got an error (naming `words`); the audit shows no success."""
        assert_refused(self.sent, self.database, result, *words)

    def one(self, result: Any) -> RawRequest:
        """Exactly one request went out, carrying each credential once with its value; the end is audited."""
        assert not result.is_error, result.error
        assert len(self.sent) == 1, [r.request_line for r in self.sent]
        request = self.sent[0]
        keys = [(k, unquote(v)) for k, v in request.query_pairs if unquote(k).lower() == "api_key"]
        assert keys == [("api_key", self.api_key)]
        assert [c for c in request.cookies if c[0].lower() == "sid"] == [("sid", self.session)]
        kinds = [kind for kind, _ in audit_events(self.database, result.invocation_id)]
        assert kinds == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]
        return request

    async def aclose(self) -> None:
        self.reset()
        await self.router.aclose()
        self.router.audit.close()


def call_once(rt: Any, tool_id: str, arguments: Any, environ: dict[str, str]) -> Any:
    """One call through a fresh router with an in-memory audit, from synchronous code (the property tests)."""
    async def run() -> Any:
        router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=environ)
        try:
            return await router.call_tool(tool_id, arguments, context=rt.InvocationContext(**FROZEN))
        finally:
            await router.aclose()

    return asyncio.run(run())
