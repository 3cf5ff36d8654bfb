"""`toolc serve --transport http` as an OAuth 2.1 resource server (issue 25, callers): a project compiled with
`gateway.auth`, served as a subprocess; key pairs, JWKS and the authorization server (tests/support/oauth.py)
made here on loopback. A token lists and calls only the tools its scopes grant, on every route; every bad token
is refused with the right status and challenge; the caller is in every audit row; its token never goes
upstream; the official MCP client discovers the metadata and completes the flow."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import jwt
import pytest
import yaml

from tests.servers.inprocess import free_port
from tests.support.cli import run_toolc
from tests.support.loopback import Recorder, recording_api
from tests.support.oauth import Issuer, Keys, hmac_signed, issuer_server, sign, unsigned
from tests.support.paths import FIXTURES
from tests.support.serve import audit_rows, serve_args, serve_env, serving_http

READ = "pets.read"
TIME = "time"
BASE = "tools"
"""The scope every token needs (`required_scopes`)."""


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def issuer(keys: Keys) -> Iterator[str]:
    with issuer_server(keys) as url:
        yield url


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def resource(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


def write_project(folder: Path, issuer: str, resource: str) -> Path:
    project = {
        "name": "callers project",
        "output": "out",
        "mcp_servers": [
            {"id": "time", "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
             "recording": str(FIXTURES / "mcp" / "mcp-server-time.json")},
        ],
        "openapi": [{"id": "params", "path": str(FIXTURES / "openapi" / "params.yaml"),
                     "base_url": "${PARAMS_API_URL}/v1"}],
        "gateway": {"auth": {
            "issuer": issuer,
            "resource": resource,
            "jwks": f"{issuer}/jwks.json",
            "required_scopes": [BASE],
            "scopes": {READ: ["openapi:params:getPet", "listPets"], TIME: ["mcp:time:*"]},
            "claims": {"groups": {"clock-watchers": ["convert_time"]}},
        },
            "rate_limits": {"rules": [{"tools": "openapi:params:listPets", "calls": 1, "per": "hour"}]}},
    }
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    result = run_toolc("compile", "-c", path)
    assert result.exit_code == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, issuer: str, resource: str) -> Path:
    return write_project(tmp_path_factory.mktemp("callers"), issuer, resource)


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with recording_api() as url:
        yield url


@pytest.fixture(scope="module")
def served(project: Path, api: str, port: int) -> Iterator[str]:
    with serving_http(project, serve_env(api), port=port) as (url, _):
        yield url


@pytest.fixture
def token(keys: Keys, issuer: str, resource: str) -> str:
    return sign(keys, scope=f"{BASE} {READ}", aud=resource, iss=issuer)


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def call(url: str, name: str, arguments: Any, token: str) -> httpx2.Response:
    return httpx2.post(f"{url}/tools/{name}/call", content=json.dumps(arguments), timeout=60,
                       headers={"Content-Type": "application/json", **bearer(token)})


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The auth-params of a `WWW-Authenticate: Bearer ...` header."""
    scheme, _, params = response.headers["WWW-Authenticate"].partition(" ")
    assert scheme == "Bearer"
    return {key.strip(): value.strip('"') for key, _, value in
            (part.strip().partition("=") for part in params.split('", ')) if key}


# Protected Resource Metadata and challenges ---------------------------------------------------------------------

def test_metadata_is_served_at_both_well_known_paths_without_a_token(served: str, issuer: str,
                                                                   resource: str) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        answer = httpx2.get(served + path, timeout=30)
        assert answer.status_code == 200, path
        assert answer.json() == {"resource": resource, "authorization_servers": [issuer],
                                 "scopes_supported": [READ, TIME, BASE], "bearer_methods_supported": ["header"],
                                 "resource_name": "callers project"}


@pytest.mark.parametrize("route", ["GET /tools?provider=anthropic", "POST /tools/getPet/call", "POST /mcp"])
def test_no_token_is_401_with_the_metadata_url(served: str, route: str, project: Path) -> None:
    method, path = route.split(" ")
    answer = httpx2.request(method, served + path, content=b"{}", timeout=30,
                            headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert answer.status_code == 401
    assert challenge(answer) == {
        "resource_metadata": f"{served}/.well-known/oauth-protected-resource/mcp"}


def refused_tokens(keys: Keys, issuer: str, resource: str) -> dict[str, str]:
    good = {"scope": f"{BASE} {READ}", "aud": resource, "iss": issuer}
    now = 1_700_000_000
    confused = hmac_signed({**good, "sub": "mallory", "exp": now * 2}, keys.public_pem())
    return {
        "expired": sign(keys, **good, expires_in=-3600),
        "wrong audience": sign(keys, **{**good, "aud": "https://other.example/mcp"}),
        "wrong issuer": sign(keys, **{**good, "iss": "https://evil.example"}),
        "bad signature": sign(keys, **good, key=keys.stranger),
        "alg none": unsigned({**good, "sub": "mallory", "exp": now * 2}),
        "algorithm confusion (HS256 keyed with the public key)": confused,
        "no subject": sign(keys, **good, sub=None),
        "unknown kid": sign(keys, **good, kid="k9"),
        "not a JWT": "opaque-token-123",
    }


@pytest.mark.parametrize("case", ["expired", "wrong audience", "wrong issuer", "bad signature", "alg none",
                                  "algorithm confusion (HS256 keyed with the public key)", "no subject",
                                  "unknown kid", "not a JWT"])
def test_bad_tokens_are_401_invalid_token(served: str, keys: Keys, issuer: str, resource: str, case: str,
                                          project: Path) -> None:
    bad = refused_tokens(keys, issuer, resource)[case]
    Recorder.requests = []
    answer = call(served, "getPet", {"id": 1}, bad)
    assert answer.status_code == 401, case
    params = challenge(answer)
    assert params["error"] == "invalid_token" and params["resource_metadata"].endswith("/mcp")
    assert Recorder.requests == []  # nothing reached the API
    listing = httpx2.get(f"{served}/tools?provider=anthropic", headers=bearer(bad), timeout=30)
    assert listing.status_code == 401


def test_a_token_without_the_required_scope_is_403_naming_it(served: str, keys: Keys, issuer: str,
                                                             resource: str) -> None:
    answer = call(served, "getPet", {"id": 1}, sign(keys, scope=READ, aud=resource, iss=issuer))
    assert answer.status_code == 403
    assert challenge(answer)["error"] == "insufficient_scope" and challenge(answer)["scope"] == BASE


# One rule on every route ----------------------------------------------------------------------------------------

def test_get_tools_lists_only_the_granted_tools(served: str, token: str) -> None:
    names = {
        "anthropic": lambda tools: [tool["name"] for tool in tools],
        "openai-chat": lambda tools: [tool["function"]["name"] for tool in tools],
        "gemini": lambda tools: [d["name"] for group in tools for d in group["functionDeclarations"]],
    }
    for target, listed in names.items():
        answer = httpx2.get(f"{served}/tools?provider={target}", headers=bearer(token), timeout=30)
        assert answer.status_code == 200
        assert sorted(listed(answer.json())) == ["getPet", "listPets"], target


def test_the_flat_endpoint_calls_granted_tools_and_refuses_the_rest_with_the_scope(
        served: str, token: str, project: Path) -> None:
    Recorder.requests = []
    assert call(served, "getPet", {"id": 5}, token).status_code == 200
    refused = call(served, "get_current_time", {"timezone": "UTC"}, token)
    assert refused.status_code == 403
    assert refused.json()["content"][0]["text"].startswith("denied by caller: mcp:time:get_current_time is not "
                                                           "granted to caller 'alice'; it needs scope time")
    assert challenge(refused)["error"] == "insufficient_scope" and challenge(refused)["scope"] == TIME
    assert [request["path"] for request in Recorder.requests] == ["/v1/pets/5"]
    violation = [payload for _, kind, tool, payload in audit_rows(project)
                 if kind == "policy_violation" and tool == "mcp:time:get_current_time"][-1]
    assert violation["gate"] == "caller" and violation["caller"] == {"subject": "alice", "client_id": "cli-1"}


def test_a_claim_grants_tools_too(served: str, keys: Keys, issuer: str, resource: str) -> None:
    watcher = sign(keys, scope=BASE, aud=resource, iss=issuer, groups=["staff", "clock-watchers"])
    listing = httpx2.get(f"{served}/tools?provider=anthropic", headers=bearer(watcher), timeout=30)
    assert [tool["name"] for tool in listing.json()] == ["convert_time"]
    assert call(served, "getPet", {"id": 1}, watcher).status_code == 403


def test_discovery_finds_describes_and_calls_only_granted_tools(served: str, token: str) -> None:
    found = call(served, "toolc_search_tools", {"query": "time pet", "limit": 50}, token).json()
    assert sorted(tool["id"] for tool in json.loads(found["content"][0]["text"])) == [
        "openapi:params:getPet", "openapi:params:listPets"]
    hidden = call(served, "toolc_describe_tool", {"tool": "mcp:time:get_current_time"}, token)
    unknown = call(served, "toolc_describe_tool", {"tool": "mcp:time:no_such_tool"}, token)
    assert hidden.json()["content"][0]["text"] == "no tool 'mcp:time:get_current_time'"
    assert unknown.json()["isError"] is True and hidden.json()["isError"] is True
    shown = call(served, "toolc_describe_tool", {"tool": "openapi:params:getPet"}, token)
    assert shown.json()["structuredContent"]["id"] == "openapi:params:getPet"
    relayed = call(served, "toolc_call_tool", {"tool": "mcp:time:get_current_time",
                                               "arguments": {"timezone": "UTC"}}, token)
    assert relayed.json()["content"][0]["text"].startswith("denied by caller:")


def test_the_callers_token_never_goes_upstream_and_every_row_names_the_caller(
        served: str, token: str, project: Path) -> None:
    Recorder.requests = []
    answer = call(served, "getPet", {"id": 9}, token)
    assert answer.status_code == 200, answer.text
    [request] = Recorder.requests
    assert all(token not in value for value in request["headers"].values())
    assert request["headers"]["authorization"] == "Bearer bearer-for-params"  # the deployment's own credential
    invocation = answer.json()
    rows = [row for row in audit_rows(project) if row[2] == "openapi:params:getPet"]
    last = [payload for inv, _, _, payload in rows if inv == rows[-1][0]]
    assert len(last) == 3 and invocation["isError"] is False
    assert all(payload["caller"] == {"subject": "alice", "client_id": "cli-1"} for payload in last)


# The official MCP client ----------------------------------------------------------------------------------------

class _Storage:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


async def test_the_mcp_client_discovers_the_metadata_gets_a_token_and_sees_its_tools(
        served: str, issuer: str, resource: str, project: Path) -> None:
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    redirect: dict[str, str] = {}

    async def approve(authorization_url: str) -> None:
        async with httpx2.AsyncClient() as browser:  # the user's browser: the server approves at once
            answer = await browser.get(authorization_url)
        redirect.update(parse_qsl(urlsplit(answer.headers["Location"]).query))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirect["code"], state=redirect["state"])

    Issuer.requests.clear()
    Issuer.grantable = frozenset({BASE, TIME})  # whatever the client asks for, the user consents to these
    provider = OAuthClientProvider(
        server_url=resource,
        client_metadata=OAuthClientMetadata(client_name="tests", redirect_uris=["http://127.0.0.1:1/callback"],
                                            grant_types=["authorization_code"], response_types=["code"],
                                            scope=f"{BASE} {TIME}", token_endpoint_auth_method="none"),
        storage=_Storage(), redirect_handler=approve, callback_handler=callback)
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http, \
            streamable_http_client(resource, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(tool.name for tool in listed.tools) == ["convert_time", "get_current_time"]
        now = await session.call_tool("get_current_time", {"timezone": "UTC"})
        assert now.is_error is False
        refused = await session.call_tool("getPet", {"id": 1})
        assert refused.is_error is True
        assert refused.content[0].text.startswith("denied by caller: openapi:params:getPet is not granted")
    assert Issuer.requests[:4] == ["GET /.well-known/oauth-authorization-server", "POST /register",
                                   "GET /authorize", "POST /token"]
    issued = jwt.decode(Issuer.issued[-1], options={"verify_signature": False})
    assert issued["aud"] == resource  # RFC 8707: the client asked for this resource
    assert sorted(issued["scope"].split()) == [TIME, BASE]  # the client asked for more; the user consented to these
    agent_rows = [payload for _, _, tool, payload in audit_rows(project) if tool == "mcp:time:get_current_time"
                  and payload.get("caller", {}).get("subject") == "agent-7"]
    assert len(agent_rows) == 3  # decision, start, end


def test_an_mcp_session_belongs_to_the_caller_that_opened_it(served: str, token: str, keys: Keys, issuer: str,
                                                            resource: str) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    opened = httpx2.post(f"{served}/mcp", json=opening, headers={**headers, **bearer(token)}, timeout=30)
    assert opened.status_code == 200, opened.text
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    other = sign(keys, sub="mallory", scope=f"{BASE} {READ} {TIME}", aud=resource, iss=issuer)
    stolen = httpx2.post(f"{served}/mcp", json=listing, headers={**headers, **session, **bearer(other)}, timeout=30)
    assert stolen.status_code == 404  # as if the session did not exist
    own = httpx2.post(f"{served}/mcp", json=listing, headers={**headers, **session, **bearer(token)}, timeout=30)
    assert sorted(tool["name"] for tool in own.json()["result"]["tools"]) == ["getPet", "listPets"]


def test_toolc_serve_refuses_a_static_token_beside_oauth(project: Path, api: str) -> None:
    environ = serve_env(api, TOOLC_SERVE_TOKEN="a-static-token-1234567")
    started = subprocess.run([sys.executable, *serve_args(project, "--transport", "http", "--port", "1")],
                             env=environ, capture_output=True, text=True, timeout=120, cwd=project.parent)
    assert started.returncode == 2
    assert "TC680" in started.stderr and "gateway.auth" in started.stderr


def test_a_2026_07_28_request_lists_only_the_granted_tools(served: str, token: str) -> None:
    """The sessionless protocol era reaches the tools through another path in the SDK: the same rule holds."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", **bearer(token)}
    listing = httpx2.post(f"{served}/mcp", headers=headers, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    assert listing.status_code == 200, listing.text
    assert sorted(tool["name"] for tool in listing.json()["result"]["tools"]) == ["getPet", "listPets"]


def test_each_oauth_caller_has_its_own_rate_limit_bucket(served: str, keys: Keys, issuer: str,
                                                         resource: str) -> None:
    """`gateway.rate_limits` counts per caller: an OAuth caller is its token's subject (one call an hour each)."""
    alice, bob = (sign(keys, sub=who, scope=f"{BASE} {READ}", aud=resource, iss=issuer) for who in ("alice", "bob"))
    assert call(served, "listPets", {}, alice).status_code == 200
    limited = call(served, "listPets", {}, alice)
    assert limited.status_code == 429 and "caller 'alice'" in limited.json()["content"][0]["text"]
    assert call(served, "listPets", {}, bob).status_code == 200
