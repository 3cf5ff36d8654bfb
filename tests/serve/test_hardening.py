"""`toolc serve` under attack and under load (issue 22), against the real served process on loopback: a name that
means two tools, JSON and text built to crash the decoder, wire-level refusals, a child server's stderr, sockets
that never send a byte or trickle a body, and a flood of MCP sessions. Loops are bounded and stop by themselves."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
import yaml
from mcp import Client

from tests.support.cli import run_toolc
from tests.support.loopback import Recorder, recording_api
from tests.support.paths import FIXTURES, SERVERS
from tests.support.router import load_router
from tests.support.serve import audit_rows, serve_env, serving_http

CANARY = "canary-token-7f3a9c1e55"
API_KEY = "k-hardened-123456"
DEEP = 5000
"""Nesting that makes Python's recursive `json` raise RecursionError."""


def edge_recording() -> dict[str, Any]:
    """What `toolc record` writes for `edge_stdio.py secret` (its one tool, `echo`, whose description echoes the
    server's token: recorded as its placeholder, which the router puts back before comparing with the pins)."""
    tool = {"name": "echo", "description": "Echo. Configured with token ${CANARY_TOKEN}.",
            "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
    return {"server": "edge-secret",
            "initialize": {"capabilities": {"tools": {"listChanged": False}}, "protocolVersion": "2025-11-25",
                           "serverInfo": {"name": "edge-secret", "version": "1.0.0"}},
            "tools_list_pages": [{"tools": [tool]}], "tools": [tool]}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(project file, compile's stderr) of the hardening fixture and a stdio server that logs a secret."""
    folder = tmp_path_factory.mktemp("hardened")
    recording = folder / "edge.json"
    recording.write_text(json.dumps(edge_recording()))
    project = {
        "name": "hardened", "output": "out",
        "mcp_servers": [{"id": "edge", "command": [sys.executable, str(SERVERS / "edge_stdio.py"), "secret"],
                         "env": {"CANARY_TOKEN": "${CANARY_TOKEN}"}, "secrets": ["CANARY_TOKEN"],
                         "recording": str(recording)}],
        # The operations' word `purge` would raise them to critical (admin token): the author says what they are.
        "openapi": [{"id": "cache", "path": str(FIXTURES / "openapi" / "hardening.yaml"),
                     "base_url": "${HARD_API_URL}/v1", "risk": {"purge.cache": "low", "purge_cache": "high"}}],
    }
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    result = run_toolc("compile", "-c", path)
    assert result.exit_code == 0, result.stderr
    return path, result.stderr


@pytest.fixture(scope="module")
def project(compiled: tuple[Path, str]) -> Path:
    return compiled[0]


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with recording_api() as url:
        yield url


def environ(api: str) -> dict[str, str]:
    return serve_env(api, HARD_API_URL=api, TOOLC_CACHE_APIKEY=API_KEY, CANARY_TOKEN=CANARY)


@pytest.fixture(scope="module")
def served(project: Path, api: str) -> Iterator[str]:
    with serving_http(project, environ(api)) as (url, _):
        yield url


@pytest.fixture
def client(served: str) -> Iterator[httpx2.Client]:
    Recorder.requests = []
    with httpx2.Client(base_url=served, timeout=60) as http:
        yield http


def call(client: httpx2.Client, name: str, body: bytes | Any, *, provider: str | None = None) -> httpx2.Response:
    query = f"?provider={provider}" if provider else ""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"/tools/{quote(name, safe='')}/call{query}", content=content,
                       headers={"Content-Type": "application/json"})


def violations(project: Path) -> list[tuple[str, str]]:
    return [(tool, payload["gate"]) for _, kind, tool, payload in audit_rows(project) if kind == "policy_violation"]


def started(project: Path) -> list[str]:
    return [tool for _, kind, tool, _ in audit_rows(project) if kind == "tool_invocation_start"]


# 2. One name, two tools ------------------------------------------------------------------------------------------


def test_a_name_that_means_two_tools_is_refused_never_guessed(client: httpx2.Client, project: Path,
                                                                compiled: tuple[Path, str]) -> None:
    assert "warning[TC640]: served name 'purge_cache' means 2 tools" in compiled[1]
    listed = client.get("/tools", params={"provider": "openai-chat"}).json()
    shown = {tool["function"]["name"]: tool["function"]["description"] for tool in listed}
    assert shown["purge_cache"].startswith("Show the purge status")  # the read-only GET, to OpenAI

    refused = call(client, "purge_cache", {})
    assert refused.status_code == 409 and refused.json()["isError"] is True
    assert "names 2 tools (openapi:cache:purge.cache, openapi:cache:purge_cache)" in refused.json()["content"][0]["text"]
    assert Recorder.requests == []  # the destructive POST /cache/purge was not sent
    assert violations(project)[-1] == ("purge_cache", "name")

    assert call(client, "purge_cache", {}, provider="openai-chat").status_code == 200
    assert call(client, "openapi:cache:purge_cache", {}).status_code == 200
    assert call(client, "purge.cache", {}).status_code == 200  # its MCP name, which nothing else has
    assert [(r["method"], r["path"]) for r in Recorder.requests] == [
        ("GET", "/v1/cache/status"), ("POST", "/v1/cache/purge"), ("GET", "/v1/cache/status")]


# 3. Unaudited crashes ---------------------------------------------------------------------------------------------


def test_a_deep_json_string_in_a_free_form_argument_is_refused(client: httpx2.Client, project: Path) -> None:
    deep = "[" * DEEP + "]" * DEEP
    refused = call(client, "addNote", {"text": "x", "meta": deep}, provider="openai-chat")
    assert refused.status_code == 422, refused.text
    assert "nested deeper than 64 levels" in refused.json()["content"][0]["text"]
    assert violations(project)[-1] == ("openapi:cache:addNote", "validation")
    fine = call(client, "addNote", {"text": "x", "meta": '{"a": "[[[["}'}, provider="openai-chat")
    assert fine.status_code == 200, fine.text
    assert [r["body"] for r in Recorder.requests] == [{"text": "x", "meta": {"a": "[[[["}}]


def test_deep_arguments_to_discovery_are_refused_and_audited(project: Path) -> None:
    with load_router(project.parent / "out" / "python"):
        import asyncio

        from toolc_router import InvocationContext, MemoryAuditSink, Router

        context = InvocationContext(spec_frozen=True, spec_hash="sha256:served", project_id="served")
        router = Router(audit_sink=MemoryAuditSink(), environ={}, default_context=context)
        arguments = json.dumps({"tool": "openapi:cache:addNote", "arguments": "[" * DEEP + "]" * DEEP})
        tool_call = {"id": "c1", "function": {"name": "toolc_call_tool", "arguments": arguments}}
        result = asyncio.run(router.call_openai_tool_call(tool_call))
        assert result.is_error and result.denied_by == "validation"
        assert "/arguments: nested deeper than 64 levels" in (result.error or "")
        kinds = [(event.event_type, event.payload.get("gate")) for event in router.audit.events]
        assert kinds == [("policy_decision", "validation"), ("policy_violation", "validation")]


def test_a_lone_surrogate_key_is_422_not_500(client: httpx2.Client, project: Path) -> None:
    refused = call(client, "addNote", b'{"text": "x", "\\ud800": 1}')
    assert refused.status_code == 422, refused.text
    assert "unexpected argument" in refused.json()["content"][0]["text"]
    assert violations(project)[-1] == ("openapi:cache:addNote", "validation")
    assert Recorder.requests == []


def test_invalid_utf8_is_refused_not_replaced(client: httpx2.Client, project: Path) -> None:
    refused = call(client, "addNote", b'{"text": "caf\xe9"}')
    assert refused.status_code == 422, refused.text
    assert "not valid UTF-8 (byte 13)" in refused.json()["content"][0]["text"]
    assert violations(project)[-1] == ("openapi:cache:addNote", "validation")
    assert Recorder.requests == []


# 8 (part). Wire-level refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arguments", "gate", "why"), [
    ({"name": ".."}, "wire", "dot segment"),
    ({"name": "a", "X-Note": "line\r\nX-Evil: 1"}, "wire", "X-Note"),
    # A parameter declared under the API key's own name carries the credential: hidden from the model and filled
    # by the router (TC319), so the model's value is refused before the wire even sees it.
    ({"name": "a", "x-api-key": "mine"}, "validation", "/x-api-key: unexpected argument"),
])
def test_wire_refusals_are_violations_not_calls(client: httpx2.Client, project: Path, arguments: dict[str, Any],
                                                gate: str, why: str) -> None:
    before = len(started(project))
    refused = call(client, "getFile", arguments)
    assert refused.status_code == 422, refused.text
    text = refused.json()["content"][0]["text"]
    assert text.startswith(f"denied by {gate}:") and why in text, text
    assert violations(project)[-1] == ("openapi:cache:getFile", gate)
    assert len(started(project)) == before and Recorder.requests == []
    assert call(client, "getFile", {"name": "a.txt", "X-Note": "fine"}).status_code == 200


# 7. A secret on stderr --------------------------------------------------------------------------------------------


def test_a_child_servers_stderr_is_redacted(project: Path, api: str) -> None:
    with tempfile.TemporaryFile() as log:
        with serving_http(project, environ(api), log=log) as (url, _):
            answer = httpx2.post(f"{url}/tools/echo/call", content=b'{"text": "hi"}',
                                 headers={"Content-Type": "application/json"}, timeout=60)
            assert answer.status_code == 200  # the server started (and logged its token)
        log.seek(0)
        stderr = log.read().decode(errors="replace")
    assert "edge: using token [REDACTED]" in stderr
    assert CANARY not in stderr


# 4. Slow connections ----------------------------------------------------------------------------------------------


def silent_sockets(url: str, count: int) -> list[socket.socket]:
    port = int(url.rsplit(":", 1)[1])
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def closed_by_server(sock: socket.socket, within_s: float) -> bytes | None:
    """What the server sent before closing `sock` within `within_s` seconds, or None if it kept it open."""
    sock.settimeout(within_s)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


def test_silent_sockets_cannot_stall_the_calls(project: Path, api: str) -> None:
    """64 sockets that never send a byte (the default connection cap) made every call answer 503."""
    with serving_http(project, environ(api)) as (url, _):
        held = silent_sockets(url, 80)
        try:
            with httpx2.Client(base_url=url, timeout=30) as http:
                for _ in range(5):
                    answer = call(http, "purge.cache", {})
                    assert answer.status_code == 200, answer.text
        finally:
            for sock in held:
                sock.close()


def test_every_stage_of_a_connection_has_a_deadline(project: Path, api: str) -> None:
    head = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    with tempfile.TemporaryFile() as log:
        with serving_http(project, environ(api), "--head-timeout", "1", "--body-timeout", "1",
                          log=log) as (url, _):
            silent, partial, trickle, mcp_trickle = silent_sockets(url, 4)
            partial.sendall(b"POST /tools/addNote/call HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            trickle.sendall(b"POST /tools/addNote/call HTTP/1.1\r\n" + head + b"Content-Length: 100\r\n\r\n{")
            mcp_trickle.sendall(b"POST /mcp HTTP/1.1\r\n" + head + b"Content-Length: 100\r\n\r\n{")
            # Each socket is closed by the server's 1 s deadlines (without them it would stay open: the wait
            # below gives up after 5 s and the assertion fails). How soon is bench/bench_hostile.py's to report.
            assert closed_by_server(silent, 5) == b""
            for sock in (partial, trickle, mcp_trickle):
                assert (closed_by_server(sock, 5) or b"").startswith(b"HTTP/1.1 408 ")
            for sock in (silent, partial, trickle, mcp_trickle):
                sock.close()
            with httpx2.Client(base_url=url, timeout=30) as http:
                assert call(http, "purge.cache", {}).status_code == 200
        log.seek(0)
        assert b"Traceback" not in log.read()  # a body cut short is no error worth a traceback per request


class _Transport(asyncio.Transport):
    """Just enough of a socket's transport for the protocol: it records being ended (aborted or closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.ended = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 8765) if name in ("sockname", "peername") else default

    def is_closing(self) -> bool:
        return self.ended

    def abort(self) -> None:
        self.ended = True

    def close(self) -> None:
        self.ended = True


async def test_a_client_that_never_reads_its_response_is_dropped(project: Path) -> None:
    """A response whose writes stall (the client reads nothing) holds its connection only `write_timeout`
    (in-process: loopback socket buffers take megabytes to fill)."""
    from uvicorn.server import ServerState

    with load_router(project.parent / "out" / "python"):
        from toolc_router.serve_limits import GuardedH11Protocol, ServeConfig

        config = ServeConfig(lambda scope, receive, send: None, max_connections=4, write_timeout=0.05)
        config.load()
        protocol = GuardedH11Protocol(config, ServerState(), {})
        transport = _Transport()
        protocol.connection_made(transport)
        protocol.pause_writing()
        protocol.resume_writing()  # writes moved again in time: kept
        await asyncio.sleep(0.1)
        assert not transport.ended
        protocol.pause_writing()
        await asyncio.sleep(0.1)
        assert transport.ended
        protocol.connection_lost(None)


# 5. Session floods ------------------------------------------------------------------------------------------------


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "flood", "version": "1"}}}


async def test_a_session_flood_cannot_starve_new_clients(project: Path, api: str) -> None:
    cap = 16
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with serving_http(project, environ(api), "--max-sessions", str(cap)) as (url, _):
        async with Client(f"{url}/mcp", mode="legacy", read_timeout_seconds=60) as early, \
                httpx2.AsyncClient(base_url=url, timeout=30, headers=headers) as http:
            assert not (await early.call_tool("purge.cache", {})).is_error
            flood = []
            for _ in range(100):
                opened = await http.post("/mcp", json=INITIALIZE)
                assert opened.status_code == 200 and opened.headers.get("mcp-session-id")
                flood.append(opened.headers["mcp-session-id"])
            # The session used before the flood outlived it (never-used sessions are evicted first) ...
            assert not (await early.call_tool("purge.cache", {})).is_error
            # ... and the table stayed within its cap: the oldest flood sessions are gone.
            alive = [sid for sid in flood if (await ping(http, sid)).status_code == 200]
            assert 0 < len(alive) < cap and alive == flood[-len(alive):]
            # Requests that open no session (no `initialize`; a 2026-07-28 body without its version header) evict
            # nothing, even with early the idlest session now.
            modern_meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": {}}
            for index in range(50):
                params = {"_meta": modern_meta} if index % 2 else {}
                junk = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                                                     "params": params})
                assert junk.status_code == 400
                if params:  # answered as the 2026-07-28 protocol says (its version header is missing), sessionless
                    assert junk.json()["error"]["code"] == -32020 and "mcp-session-id" not in junk.headers
            assert not (await early.call_tool("purge.cache", {})).is_error
            assert [(await ping(http, sid)).status_code for sid in alive] == [200] * len(alive)
        # A new handshake-era client gets in, as does a 2026-07-28 one (which holds no session at all).
        async with Client(f"{url}/mcp", mode="legacy", read_timeout_seconds=60) as late:
            assert not (await late.call_tool("purge.cache", {})).is_error
        async with Client(f"{url}/mcp", read_timeout_seconds=60) as modern:
            assert modern.protocol_version == "2026-07-28"
            assert not (await modern.call_tool("purge.cache", {})).is_error


async def ping(http: httpx2.AsyncClient, session_id: str) -> httpx2.Response:
    return await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                           headers={"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
