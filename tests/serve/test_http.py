"""The flat-argument HTTP endpoint of `toolc serve --transport http` (seed 003): `POST /tools/{name}/call` puts the
model's flat arguments back into path, query, header, cookie and body with the presets merged, `GET /tools` hands
out the compiled provider files, and the server is safe by default (bearer token, loopback, body cap)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from tests.servers.inprocess import free_port
from tests.servers.real import require_everything
from tests.support.loopback import Recorder, recording_api
from tests.support.router import (
    BrokenAuditSink,
    load_router,
    make_build,
    probe_catalog,
    probe_server,
    write_router,
)
from tests.support.serve import (
    API_KEY,
    audit_rows,
    serve_args,
    serve_env,
    serving_http,
    write_project,
)

TOKEN = "t0ken-for-the-served-project"
MAX_BODY = 4096
TARGETS = ("anthropic", "gemini", "openai-chat", "openai-responses")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("served-http"), require_everything())


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with recording_api() as url:
        yield url


@pytest.fixture(scope="module")
def served(project: Path, api: str) -> Iterator[str]:
    environ = serve_env(api, TOOLC_SERVE_TOKEN=TOKEN)
    with serving_http(project, environ, "--max-body", str(MAX_BODY)) as (url, _):
        yield url


@pytest.fixture
def client(served: str) -> Iterator[httpx2.Client]:
    Recorder.requests = []
    with httpx2.Client(base_url=served, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        yield http


def call(client: httpx2.Client, name: str, arguments: Any, *, provider: str | None = None) -> httpx2.Response:
    query = f"?provider={provider}" if provider else ""
    return client.post(f"/tools/{quote(name, safe='')}/call{query}", content=json.dumps(arguments),
                       headers={"Content-Type": "application/json"})


def test_flat_arguments_reach_the_api_in_place_with_the_presets(client: httpx2.Client, project: Path) -> None:
    response = call(client, "updatePet", {"id_path": 42, "id": 43, "name": "Rex", "tags": ["a", "b"],
                                          "X-Trace-Id": "t-1"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["isError"] is False
    assert result["structuredContent"]["echo"] == {"path": "/v1/pets/42", "method": "PUT"}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    [put] = Recorder.requests
    assert (put["method"], put["path"]) == ("PUT", "/v1/pets/42")
    assert sorted(put["query"]) == [("dryRun", "true"), ("tags", "a,b")]  # dryRun: a preset
    assert put["headers"]["x-trace-id"] == "t-1"
    assert put["headers"]["cookie"] == "session=s-fixed"  # a preset
    assert put["headers"]["x-api-key"] == API_KEY
    assert put["body"] == {"id": 43, "name": "Rex"}
    assert "authorization" not in put["headers"]  # the server's own bearer token never goes upstream


def test_a_preset_cannot_be_overridden(client: httpx2.Client) -> None:
    response = call(client, "updatePet", {"id_path": 1, "id": 1, "name": "x", "session": "s-evil"})
    assert response.status_code == 422 and response.json()["isError"] is True
    assert "/session: unexpected argument" in response.json()["content"][0]["text"]
    assert Recorder.requests == []


def test_tool_names_by_id_mcp_name_and_provider_name(client: httpx2.Client) -> None:
    assert call(client, "openapi:params:getPet", {"id": 1}).status_code == 200
    assert call(client, "getPet", {"id": 2}).status_code == 200
    # OpenAI strict mode makes optional arguments required-but-nullable; the openai-chat name map drops the null.
    strict = {"id": 3, "X-Trace-Id": None}
    assert call(client, "getPet", strict).status_code == 422
    assert call(client, "getPet", strict, provider="openai-chat").status_code == 200
    time_call = call(client, "mcp:time:get_current_time", {"timezone": "UTC"})
    assert time_call.status_code == 200 and time_call.json()["structuredContent"]["timezone"] == "UTC"
    assert [r["path"] for r in Recorder.requests] == ["/v1/pets/1", "/v1/pets/2", "/v1/pets/3"]
    assert "x-trace-id" not in Recorder.requests[-1]["headers"]


def test_refusals_are_mcp_error_results_and_audited(client: httpx2.Client, project: Path) -> None:
    unknown = call(client, "no_such_tool", {})
    assert unknown.status_code == 404 and unknown.json()["isError"] is True
    denied = call(client, "get-env", {})
    assert denied.status_code == 403 and denied.json()["content"][0]["text"].startswith("denied by disabled:")
    malformed = client.post("/tools/getPet/call", content=b'{"id": ', headers={"Content-Type": "application/json"})
    assert malformed.status_code == 422 and "not valid JSON" in malformed.json()["content"][0]["text"]
    assert Recorder.requests == []
    rows = [(tool, payload["gate"]) for _, kind, tool, payload in audit_rows(project) if kind == "policy_violation"]
    assert rows[-3:] == [("no_such_tool", "disabled"), ("mcp:everything:get-env", "disabled"),
                         ("openapi:params:getPet", "validation")]


def test_get_tools_returns_the_compiled_provider_file(client: httpx2.Client, project: Path) -> None:
    for target in TARGETS:
        response = client.get("/tools", params={"provider": target})
        compiled = (project.parent / "out" / "schemas" / f"{target}.json").read_bytes()
        assert response.status_code == 200 and response.headers["content-type"] == "application/json"
        assert response.content == compiled and response.json() == json.loads(compiled)
    assert client.get("/tools", params={"provider": "nope"}).status_code == 404
    assert client.get("/tools").status_code == 400


def test_missing_or_wrong_token_is_refused(served: str) -> None:
    with httpx2.Client(base_url=served, timeout=30) as anonymous:
        assert anonymous.get("/tools", params={"provider": "anthropic"}).status_code == 401
        wrong = {"Authorization": f"Bearer {TOKEN[:-1]}x", "Content-Type": "application/json"}
        assert anonymous.post("/tools/getPet/call", content=b'{"id": 1}', headers=wrong).status_code == 401
        assert anonymous.post("/mcp", content=b"{}", headers=wrong).status_code == 401
    assert Recorder.requests == []


def test_oversized_body_and_non_json_calls_are_refused(client: httpx2.Client) -> None:
    big = {"id": 1, "name": "x" * MAX_BODY}
    assert call(client, "createPet", big).status_code == 413
    chunked = client.post("/tools/createPet/call", content=iter([b'{"name": "', b"x" * MAX_BODY, b'"}']),
                          headers={"Content-Type": "application/json"})  # no Content-Length to trust
    assert chunked.status_code == 413
    form = client.post("/tools/getPet/call", content=b"id=1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 400  # a cross-origin page could send this without a preflight
    assert client.get("/tools", params={"provider": "anthropic"}, headers={"Host": "evil.example"}).status_code == 421
    assert Recorder.requests == []


def test_non_loopback_bind_without_a_token_never_starts(project: Path, api: str) -> None:
    port = free_port()
    run = subprocess.run([sys.executable, *serve_args(project, "--transport", "http", "--host", "0.0.0.0",
                                                      "--port", str(port))],
                         env=serve_env(api), cwd=project.parent, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "error[TC680]" in run.stderr and "TOOLC_SERVE_TOKEN" in run.stderr  # a usage error (README: exit 2)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_token_rules(project: Path) -> None:
    with load_router(project.parent / "out" / "python"):
        from toolc_router import serve_http

        assert serve_http.bearer_token("127.0.0.1", {}) is None
        assert serve_http.bearer_token("127.0.0.2", {}) is None  # 127.0.0.0/8 is loopback
        assert serve_http.bearer_token("::1", {}) is None and serve_http.bearer_token("localhost", {}) is None
        for host in ("0.0.0.0", "192.168.1.20", "::", "example.test"):
            with pytest.raises(serve_http.ServeError):
                serve_http.bearer_token(host, {})
        assert serve_http.bearer_token("0.0.0.0", {"TOOLC_SERVE_TOKEN": TOKEN}) == TOKEN
        for weak in ("short", "has a space in it ok", "line\nbreak-and-long-enough"):
            with pytest.raises(serve_http.ServeError):
                serve_http.bearer_token("127.0.0.1", {"TOOLC_SERVE_TOKEN": weak})


def test_a_non_loopback_app_checks_the_token_in_process(project: Path) -> None:
    """The app built for 0.0.0.0, driven in-process (nothing is bound): the token is the only way in."""
    from starlette.testclient import TestClient

    with load_router(project.parent / "out" / "python"):
        from toolc_router import MemoryAuditSink, Router
        from toolc_router.serve_catalog import ServedCatalog
        from toolc_router.serve_http import create_app

        router = Router(audit_sink=MemoryAuditSink(), environ={})
        catalog = ServedCatalog(schemas_dir=project.parent / "out" / "schemas")
        app = create_app(router, catalog=catalog, host="0.0.0.0", token=TOKEN)
        with TestClient(app, base_url="http://203.0.113.7:8765") as http:
            assert http.get("/tools?provider=gemini").status_code == 401
            assert http.get("/tools?provider=gemini", headers={"Authorization": "Bearer nope"}).status_code == 401
            assert http.get("/tools?provider=gemini", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 401
            ok = http.get("/tools?provider=gemini", headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200 and ok.json() == json.loads(catalog.provider_file("gemini").read_bytes())
        assert router.audit.events == []


def test_shutdown_is_graceful_and_the_audit_complete(project: Path, api: str, tmp_path: Path) -> None:
    database = tmp_path / "audit.sqlite3"
    with serving_http(project, serve_env(api, TOOLC_AUDIT_DB=str(database))) as (url, process):
        response = httpx2.post(f"{url}/tools/getPet/call", content=b'{"id": 4}',
                               headers={"Content-Type": "application/json"}, timeout=60)
        assert response.status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    kinds = [kind for _, kind, _, _ in audit_rows(project, database)]
    assert kinds == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]


async def test_calls_in_flight_are_bounded(tmp_path: Path) -> None:
    """`max_calls` caps the calls running at once across both ways in; the others wait their turn (in-process)."""
    import asyncio

    with load_router(write_router(make_build(probe_catalog()), tmp_path)):
        from toolc_router import MemoryAuditSink, Router
        from toolc_router.serve_http import create_app

        router = Router(audit_sink=MemoryAuditSink(), environ={})
        server = probe_server()
        router.set_server_factory("probe", lambda: server)
        running, most = 0, 0

        async def hold(tool: Any, arguments: Any, result: Any) -> Any:
            nonlocal running, most
            running += 1
            most = max(most, running)
            for _ in range(20):  # yield to the loop so the other requests can pile up
                await asyncio.sleep(0)
            running -= 1
            return result

        router.register_postprocessor("mcp:probe:echo", hold)
        app = create_app(router, max_calls=2)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answers = await asyncio.gather(*(
                http.post("/tools/echo/call", json={"text": str(i)}) for i in range(6)))
        assert [a.status_code for a in answers] == [200] * 6
        assert [a.json()["structuredContent"] for a in answers] == [{"text": str(i)} for i in range(6)]
        assert most == 2
        await router.aclose()


async def test_a_call_the_audit_cannot_record_is_refused(tmp_path: Path) -> None:
    with load_router(write_router(make_build(probe_catalog()), tmp_path)):
        from toolc_router import Router
        from toolc_router.serve_http import create_app

        router = Router(audit_sink=BrokenAuditSink(), environ={})
        called: list[str] = []
        server = probe_server()
        router.set_server_factory("probe", lambda: called.append("connect") or server)
        transport = httpx2.ASGITransport(app=create_app(router))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.post("/tools/echo/call", json={"text": "x"})
        assert answer.status_code == 503 and answer.json()["isError"] is True
        assert "audit unavailable" in answer.json()["content"][0]["text"] and called == []


def test_a_loopback_app_accepts_its_own_address_and_no_other_host(project: Path) -> None:
    from starlette.testclient import TestClient

    with load_router(project.parent / "out" / "python"):
        from toolc_router import MemoryAuditSink, Router
        from toolc_router.serve_catalog import ServedCatalog
        from toolc_router.serve_http import create_app

        router = Router(audit_sink=MemoryAuditSink(), environ={})
        catalog = ServedCatalog(schemas_dir=project.parent / "out" / "schemas")
        app = create_app(router, catalog=catalog, host="127.0.0.2")
        with TestClient(app, base_url="http://127.0.0.2:8765") as http:
            assert http.get("/tools?provider=anthropic").status_code == 200
            assert http.get("/tools?provider=anthropic", headers={"Host": "evil.example:8765"}).status_code == 421
            evil = {"Origin": "http://evil.example"}
            assert http.get("/tools?provider=anthropic", headers=evil).status_code == 403
