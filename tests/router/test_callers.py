"""Callers in the generated router, in-process (issue 25): the token verifier's rules (algorithms, keys, rotation,
clock skew), the `caller` guard, the caller in audit rows (SQLite and PostgreSQL) and spans, the static token
beside OAuth, and `gateway.auth`'s diagnostics at compile time."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from compiler.codegen.router.callers import MISSING_JWKS, PRIVATE_JWKS, UNUSABLE_JWKS, caller_auth
from compiler.config import CallerAuthConfig, Config, GatewayConfig, config_from_data
from compiler.infra.diagnostics import CompilerError, Diagnostics
from tests.support.oauth import Keys, sign
from tests.support.pg_server import PgServer, postgres_or_skip
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router

ISSUER = "https://issuer.example"
RESOURCE = "https://tools.example/mcp"


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


def gateway(jwks: Any, **fields: Any) -> GatewayConfig:
    return GatewayConfig(auth=CallerAuthConfig(
        issuer=ISSUER, resource=RESOURCE, jwks=jwks,
        **{"scopes": {"notes.read": ["mcp:probe:echo"], "notes.write": ["*_note"]}, **fields}))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Path:
    build = make_build(probe_catalog(), router={"postgres": True})
    build.config = build.config.model_copy(update={"gateway": gateway(keys.jwks())})
    return write_router(build, tmp_path_factory.mktemp("callers"))


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


def token(keys: Keys, **claims: Any) -> str:
    return sign(keys, **{"scope": "notes.read", "aud": RESOURCE, "iss": ISSUER, **claims})


def verifier(rt: Any, **changes: Any) -> Any:
    import dataclasses

    from toolc_router._tables import GATEWAY_AUTH
    from toolc_router.access_tokens import AccessTokenVerifier

    return AccessTokenVerifier(dataclasses.replace(GATEWAY_AUTH, **changes))


def refused(rt: Any) -> type[Exception]:
    from toolc_router.access_tokens import TokenRefused

    return TokenRefused  # type: ignore[no-any-return]


# The verifier ---------------------------------------------------------------------------------------------------

async def test_a_valid_token_names_its_caller_and_the_tools_its_scopes_grant(rt: Any, keys: Keys) -> None:
    caller = await verifier(rt).caller(token(keys, scope="notes.read notes.write", sub="bob", client_id="app"))
    assert (caller.subject, caller.client_id) == ("bob", "app")
    assert caller.scopes == {"notes.read", "notes.write"} and caller.tools == ("mcp:probe:echo", "*_note")
    azp = await verifier(rt).caller(token(keys, client_id=None, azp="from-azp", scp=["x"], scope=None))
    assert azp.client_id == "from-azp" and azp.scopes == {"x"} and azp.tools == ()


async def test_a_verified_token_is_kept_until_it_expires(rt: Any, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolc_router import access_tokens

    decoded: list[str] = []
    decode = access_tokens.jwt.decode
    monkeypatch.setattr(access_tokens.jwt, "decode", lambda token, *a, **k: decoded.append(token) or decode(token, *a, **k))
    check = verifier(rt, leeway_s=0)
    kept = token(keys, expires_in=30)
    assert (await check.caller(kept)).subject == (await check.caller(kept)).subject == "alice"
    assert decoded == [kept]  # the signature checked once
    now = time.time()
    monkeypatch.setattr(access_tokens.time, "time", lambda: now + 31)  # past its exp: no longer kept
    await check.caller(kept)  # (PyJWT's own clock has not moved: the token still verifies)
    assert decoded == [kept, kept]  # checked again


async def test_clock_skew_is_bounded_by_the_leeway(rt: Any, keys: Keys) -> None:
    check = verifier(rt, leeway_s=30)
    assert (await check.caller(token(keys, expires_in=-10))).subject == "alice"
    with pytest.raises(refused(rt), match="expired"):
        await check.caller(token(keys, expires_in=-60))
    with pytest.raises(refused(rt), match="not valid yet"):
        await check.caller(token(keys, nbf=int(time.time()) + 120))


async def test_a_key_is_used_only_with_its_own_algorithm(rt: Any, keys: Keys) -> None:
    check = verifier(rt, algorithms=("RS256", "ES256", "PS256"))
    assert (await check.caller(token(keys, key=keys.ec, alg="ES256", kid="k2"))).subject == "alice"
    with pytest.raises(refused(rt), match="not a key for RS256"):  # the EC key's kid on an RSA-signed token
        await check.caller(token(keys, kid="k2"))
    with pytest.raises(refused(rt), match="algorithm"):  # k1 is published as RS256 only
        await check.caller(token(keys, alg="PS256"))
    signed = token(keys, key=keys.ec, alg="ES256", kid="k2")
    relabelled = _header({"alg": "ES384", "kid": "k2"}) + "." + signed.split(".", 1)[1]
    with pytest.raises(refused(rt), match="'ES384' is not accepted"):  # not in `algorithms`: no key looked at
        await check.caller(relabelled)


def _header(header: dict[str, Any]) -> str:
    import base64

    return base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()


async def test_a_jwks_url_is_cached_and_fetched_again_for_a_rotated_key(rt: Any, keys: Keys) -> None:
    from toolc_router import access_tokens
    from toolc_router.access_tokens import AccessTokenVerifier, KeySet

    rotated = Keys()
    published = [keys.jwks()]
    fetched: list[str] = []

    async def fetch(url: str) -> bytes:
        fetched.append(url)
        return json.dumps(published[-1]).encode()

    import dataclasses

    from toolc_router._tables import GATEWAY_AUTH

    spec = dataclasses.replace(GATEWAY_AUTH, jwks="https://issuer.example/jwks.json", jwks_kind="url")
    check = AccessTokenVerifier(spec, KeySet(spec, fetch))
    await check.caller(token(keys, jti="a"))
    await check.caller(token(keys, jti="b"))  # another token: its signature checked with the kept keys
    assert len(fetched) == 1  # cached
    new_key = {**rotated.jwks()["keys"][0], "kid": "k-new"}
    published.append({"keys": [*keys.jwks()["keys"], new_key]})
    check.keys._fetched_at -= access_tokens.REFETCH_S + 1  # the last fetch is older than the refetch interval
    assert (await check.caller(token(rotated, kid="k-new"))).subject == "alice"
    assert len(fetched) == 2  # an unknown kid fetched the set again
    with pytest.raises(refused(rt), match="kid"):
        await check.caller(token(rotated, kid="k-other"))
    assert len(fetched) == 2  # ... but not again within REFETCH_S: a flood of made-up kids cannot hammer the issuer


async def test_keys_fetched_before_serve_on_while_the_issuer_is_down(rt: Any, keys: Keys) -> None:
    import dataclasses

    import httpx2
    from toolc_router import access_tokens
    from toolc_router._tables import GATEWAY_AUTH
    from toolc_router.access_tokens import AccessTokenVerifier, KeySet, KeysUnavailable

    answers: list[Any] = [json.dumps(keys.jwks()).encode(), httpx2.ConnectError("down"), httpx2.ConnectError("down")]
    fetched: list[str] = []

    async def fetch(url: str) -> bytes:
        fetched.append(url)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    spec = dataclasses.replace(GATEWAY_AUTH, jwks="https://issuer.example/jwks.json", jwks_kind="url")
    check = AccessTokenVerifier(spec, KeySet(spec, fetch))
    await check.caller(token(keys, jti="1"))  # each its own token: a verified one is kept, its keys not asked for
    check.keys._fetched_at -= access_tokens.JWKS_TTL_S + 1  # the set is due to be fetched again
    assert (await check.caller(token(keys, jti="2"))).subject == "alice"  # the fetch failed: the old keys served
    assert (await check.caller(token(keys, jti="3"))).subject == "alice"  # and the next try waits REFETCH_S
    assert len(fetched) == 2
    cold = AccessTokenVerifier(spec, KeySet(spec, fetch))
    with pytest.raises(KeysUnavailable, match="ConnectError"):  # no keys yet: 503, not a refused token
        await cold.caller(token(keys, jti="4"))


async def test_a_jwks_file_is_read_when_the_server_starts(rt: Any, keys: Keys, tmp_path: Path) -> None:
    from toolc_router.access_tokens import KeysUnavailable

    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(keys.jwks()))
    assert (await verifier(rt, jwks=str(path), jwks_kind="file").caller(token(keys))).subject == "alice"
    with pytest.raises(KeysUnavailable, match="cannot read the JWKS file"):
        verifier(rt, jwks=str(tmp_path / "missing.json"), jwks_kind="file")
    symmetric = {"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "k1"}]}
    with pytest.raises(KeysUnavailable, match="no asymmetric signature key"):
        verifier(rt, jwks=json.dumps(symmetric), jwks_kind="inline")


# The guard, audit and spans -------------------------------------------------------------------------------------

def caller(rt: Any, *tools: str) -> Any:
    from toolc_router._types import Caller

    return Caller(subject="carol", client_id="agent-app", scopes=frozenset({"notes.read"}), tools=tools)


def context(rt: Any, **fields: Any) -> Any:
    return rt.InvocationContext(mode="execution", project_id="p", spec_frozen=True, spec_hash="h", **fields)


def probed(rt: Any, sink: Any) -> Any:
    router = rt.Router(audit_sink=sink, environ={})
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    return router


async def test_the_guard_refuses_tools_not_granted_and_every_row_names_the_caller(rt: Any) -> None:
    router = probed(rt, rt.MemoryAuditSink())
    who = context(rt, caller=caller(rt, "mcp:probe:echo"))
    assert (await router.call_tool("mcp:probe:echo", {"text": "hi"}, context=who)).is_error is False
    denied = await router.call_tool("mcp:probe:fetch_page", {"url": "https://x.test"}, context=who)
    assert denied.denied_by == "caller"
    assert denied.error == "denied by caller: mcp:probe:fetch_page is not granted to caller 'carol'"
    write = await router.call_tool("mcp:probe:write_note", {"text": "x"}, context=who)
    assert write.error.endswith("it needs scope notes.write")
    assert [event.event_type for event in router.audit.events] == [
        "policy_decision", "tool_invocation_start", "tool_invocation_end",
        "policy_decision", "policy_violation", "policy_decision", "policy_violation"]
    assert {json.dumps(event.payload["caller"]) for event in router.audit.events} == {
        '{"subject": "carol", "client_id": "agent-app"}'}
    anonymous = await router.call_tool("mcp:probe:fetch_page", {"url": "https://x.test"}, context=context(rt))
    assert anonymous.is_error is False and "caller" not in router.audit.events[-1].payload
    await router.aclose()


async def test_spans_carry_the_caller(rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    router = probed(rt, rt.MemoryAuditSink())
    await router.call_tool("mcp:probe:echo", {"text": "hi"}, context=context(rt, caller=caller(rt, "*")))
    await router.call_tool("mcp:probe:echo", {"text": "hi"}, context=context(rt))
    first, second = [s for s in memory.get_finished_spans() if s.instrumentation_scope.name == "toolc_router"]
    assert first.attributes["enduser.id"] == "carol" and first.attributes["toolc.caller.client_id"] == "agent-app"
    assert "enduser.id" not in second.attributes
    await router.aclose()


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from postgres_or_skip("the PostgreSQL audit tests")


async def test_postgres_rows_name_the_caller(rt: Any, pg: PgServer) -> None:
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.dsn(), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    sink = rt.audit_pg.PostgresAuditSink(pg.dsn(dbname=name))
    router = probed(rt, sink)
    who = context(rt, caller=caller(rt, "mcp:probe:echo"))
    await router.call_tool("mcp:probe:echo", {"text": "hi"}, context=who)
    await router.call_tool("mcp:probe:delete_note", {"note_id": "n"}, context=who)
    await router.aclose()
    sink.close()
    with psycopg.connect(pg.dsn(dbname=name)) as connection:
        rows = connection.execute("SELECT event_type, payload FROM task_audits ORDER BY id").fetchall()
    assert [kind for kind, _ in rows] == ["policy_decision", "tool_invocation_start", "tool_invocation_end",
                                          "policy_decision", "policy_violation"]
    payloads = [payload if isinstance(payload, dict) else json.loads(payload) for _, payload in rows]
    assert all(payload["caller"] == {"subject": "carol", "client_id": "agent-app"} for payload in payloads)


# The static token beside OAuth ---------------------------------------------------------------------------------

def test_oauth_needs_no_static_token_and_refuses_one_beside_it(rt: Any) -> None:
    from toolc_router._tables import GATEWAY_AUTH
    from toolc_router.serve_http import ServeError, bearer_token

    assert bearer_token("0.0.0.0", {}, GATEWAY_AUTH) is None  # callers bring their tokens: any bind may serve
    with pytest.raises(ServeError, match=r"gateway\.auth"):
        bearer_token("127.0.0.1", {"TOOLC_SERVE_TOKEN": "a-static-token-1234567"}, GATEWAY_AUTH)
    assert bearer_token("0.0.0.0", {"TOOLC_SERVE_TOKEN": "a-static-token-1234567"}) == "a-static-token-1234567"


# gateway.auth at compile time -----------------------------------------------------------------------------------

def baked(jwks: Any, root: Path = Path(".")) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    diagnostics = Diagnostics()
    config = Config(root=root, gateway=gateway(jwks))
    found = caller_auth(config, diagnostics)
    return found, [(d.code, d.pointer or "") for d in diagnostics]


def test_a_public_jwks_is_baked_and_private_or_unusable_ones_are_errors(keys: Keys, tmp_path: Path) -> None:
    public, problems = baked(keys.jwks())
    assert public is not None and problems == [] and json.loads(public["jwks"]) == keys.jwks()
    assert public["grants"] == [("scope", "notes.read", ("mcp:probe:echo",)), ("scope", "notes.write", ("*_note",))]
    private = {"keys": [{**keys.jwks()["keys"][0], "d": "c2VjcmV0"}]}
    assert baked(private) == (None, [(PRIVATE_JWKS, "/gateway/auth/jwks")])
    assert baked({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})[1] == [(PRIVATE_JWKS, "/gateway/auth/jwks")]
    assert baked({"nokeys": []})[1] == [(UNUSABLE_JWKS, "/gateway/auth/jwks")]
    (tmp_path / "broken.json").write_text("{")
    assert baked("broken.json", tmp_path)[1] == [(UNUSABLE_JWKS, "/gateway/auth/jwks")]
    missing, warned = baked("keys/jwks.json", tmp_path)
    assert missing is not None and missing["jwks_kind"] == "file" and warned == [(MISSING_JWKS, "/gateway/auth/jwks")]
    assert baked("https://issuer.example/jwks.json")[0]["jwks_kind"] == "url"  # type: ignore[index]


@pytest.mark.parametrize(("auth", "pointer", "message"), [
    ({"algorithms": ["HS256"]}, "/gateway/auth/algorithms", "asymmetric only"),
    ({"algorithms": ["none"]}, "/gateway/auth/algorithms", "asymmetric only"),
    ({"issuer": "http://issuer.example"}, "/gateway/auth/issuer", "https URL"),
    ({"leeway_s": 3600}, "/gateway/auth/leeway_s", "less than or equal to 300"),
    ({"scope": {}}, "/gateway/auth/scope", "did you mean 'scopes'"),
])
def test_bad_settings_are_located_config_errors(auth: dict[str, Any], pointer: str, message: str) -> None:
    data = {"gateway": {"auth": {"issuer": ISSUER, "resource": RESOURCE, "jwks": "jwks.json", **auth}}}
    with pytest.raises(CompilerError) as error:
        config_from_data(data, root=Path("."), source="toolc.yaml")
    [diagnostic] = error.value.diagnostics
    assert diagnostic.code == "TC110" and diagnostic.pointer == pointer and message in diagnostic.message


async def test_mcp_over_oauth_without_a_caller_serves_nothing(rt: Any, generated: Path) -> None:
    """A request that reaches the MCP server with OAuth on but no caller (no HTTP request behind it here) is taken
    for nobody: it lists no tool and calls none (fail closed), where without OAuth it would see them all."""
    from mcp import Client
    from toolc_router.serve_catalog import ServedCatalog
    from toolc_router.serve_mcp import mcp_server

    router = probed(rt, rt.MemoryAuditSink())
    catalog = ServedCatalog(schemas_dir=generated)
    async with Client(mcp_server(router, catalog, require_caller=True)) as guarded:
        assert (await guarded.list_tools()).tools == []
        refused = await guarded.call_tool("echo", {"text": "hi"})
        assert refused.is_error and refused.content[0].text.startswith("denied by caller:")
    async with Client(mcp_server(router, catalog)) as open_:
        assert len((await open_.list_tools()).tools) == 4
    await router.aclose()


async def test_discovery_through_a_provider_entry_point_answers_for_the_caller(rt: Any) -> None:
    router = probed(rt, rt.MemoryAuditSink())
    search = {"type": "tool_use", "id": "toolu_1", "name": "toolc_search_tools",
              "input": {"query": "echo note page", "limit": 10}}
    everyone = await router.call_anthropic_tool_use(search, context=context(rt))
    assert len(everyone.structured) == 4
    granted = await router.call_anthropic_tool_use(search, context=context(rt, caller=caller(rt, "mcp:probe:echo")))
    assert [tool["id"] for tool in granted.structured] == ["mcp:probe:echo"]
    await router.aclose()
