"""Configuration at run time, not compile time (issue 21): the operator's environment points a compiled router at
another server, fills `${ENV}` presets and credential parameters, and a missing credential is refused by name.

Every call goes through a router generated from `fixtures/openapi/runtime_config.yaml` to a loopback server that
records the raw request; the tests assert the bytes on the wire (or that nothing was sent)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from compiler.config import Config, OpenApiConfig
from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.infra.loading import load_document
from compiler.ir import Catalog, McpBinding, Source, Tool
from compiler.pipeline import compile_project
from tests.servers.raw_http import RawRecorder, RawRequest
from tests.support.paths import FIXTURES
from tests.support.router import load_router, make_build, probe_server, write_router
from tests.support.wire import FROZEN, audited_as_refused, generated_router, read_catalog

DOCUMENT = FIXTURES / "openapi" / "runtime_config.yaml"
TOKEN = "oauth-token-7"
CREDENTIAL = {"TOOLC_CHAT_OAUTH": TOKEN}


def chat(**settings: Any) -> OpenApiConfig:
    return OpenApiConfig(id="chat", path="runtime_config.yaml", **settings)


@pytest.fixture
def recorder(servers: tuple[RawRecorder, RawRecorder]) -> Iterator[RawRecorder]:
    servers[0].clear()
    yield servers[0]
    servers[0].clear()


@pytest.fixture
def compiled(tmp_path: Path) -> Iterator[Any]:
    """A function that compiles the fixture with the given project-file settings and imports the router."""
    opened: list[Any] = []

    def compile_with(config: OpenApiConfig) -> Any:
        context = generated_router(tmp_path / f"gen{len(opened)}", load_document(DOCUMENT), "chat", config)
        opened.append(context)
        return context.__enter__()

    yield compile_with
    for context in reversed(opened):
        context.__exit__(None, None, None)


async def call(rt: Any, operation: str, arguments: dict[str, Any], environ: dict[str, str],
               database: Path | None = None) -> Any:
    sink = rt.SqliteAuditSink(database) if database is not None else rt.MemoryAuditSink()
    router = rt.Router(audit_sink=sink, environ=environ)
    try:
        return await router.call_tool(f"openapi:chat:{operation}", arguments, context=rt.InvocationContext(**FROZEN))
    finally:
        await router.aclose()
        router.audit.close()


def only(recorder: RawRecorder, result: Any) -> RawRequest:
    assert not result.is_error, result.error
    assert len(recorder.requests) == 1, [r.request_line for r in recorder.requests]
    return recorder.requests[0]


def echo_headers(request: RawRequest) -> bytes:
    """A server that answers with the request's header lines (one that echoes what it was sent)."""
    payload = json.dumps([line.decode("latin-1") for line in request.header_lines]).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(payload)).encode() + b"\r\n\r\n" + payload)


def query(request: RawRequest) -> list[tuple[str, str]]:
    return [(unquote(key), unquote(value)) for key, value in request.query_pairs]


class TestBaseUrlOverride:
    """`TOOLC_BASE_URL_<API>` overrides every server of the source at call time, an absolute one too."""

    async def test_the_environment_overrides_an_absolute_document_server(self, compiled: Any,
                                                                        recorder: RawRecorder) -> None:
        rt = compiled(chat())
        environ = {**CREDENTIAL, "TOOLC_BASE_URL_CHAT": recorder.url + "/staging"}
        request = only(recorder, await call(rt, "listMessages", {"channel": "c1"}, environ))
        assert request.request_line.startswith(b"GET /staging/messages?")
        assert ("channel", "c1") in query(request)

    async def test_an_operation_with_a_server_of_its_own_is_overridden_too(self, compiled: Any,
                                                                           recorder: RawRecorder) -> None:
        rt = compiled(chat())
        environ = {**CREDENTIAL, "TOOLC_BASE_URL_CHAT": recorder.url}
        request = only(recorder, await call(rt, "uploadFile", {"filename": "a.txt"}, environ))
        assert request.request_line == b"POST /uploads?filename=a.txt HTTP/1.1"

    async def test_the_environment_wins_over_the_project_files_base_url(self, compiled: Any,
                                                                        recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url="https://prod.example.invalid/api"))
        environ = {**CREDENTIAL, "TOOLC_BASE_URL_CHAT": recorder.url + "/mock"}
        request = only(recorder, await call(rt, "getStatus", {}, environ))
        assert request.request_line == b"GET /mock/status HTTP/1.1"

    @pytest.mark.parametrize("value", ["file:///etc/passwd", "javascript:alert(1)", "127.0.0.1:80", "http://",
                                       "http://127.0.0.1:9/x\r\nX-Evil: 1", "http://127.0.0.1:9/a b"])
    async def test_an_override_that_is_no_http_url_is_refused_by_name(self, compiled: Any, recorder: RawRecorder,
                                                                       value: str) -> None:
        rt = compiled(chat())
        result = await call(rt, "getStatus", {}, {**CREDENTIAL, "TOOLC_BASE_URL_CHAT": value})
        assert result.is_error and "TOOLC_BASE_URL_CHAT" in (result.error or ""), result.error
        assert recorder.requests == []


class TestEnvInPresets:
    """`${ENV}` in a preset expands at call time, exactly as in `base_url`; never in a model's argument."""

    async def test_a_preset_reference_is_expanded_on_the_wire_and_never_baked(self, compiled: Any,
                                                                              recorder: RawRecorder,
                                                                              tmp_path: Path) -> None:
        rt = compiled(chat(base_url=recorder.url, fixed_params={
            "listMessages": {"query": {"workspace": "${CHAT_WORKSPACE}"}, "header": {"X-Team": "${CHAT_TEAM}"}}}))
        environ = {**CREDENTIAL, "CHAT_WORKSPACE": "acme", "CHAT_TEAM": "blue"}
        request = only(recorder, await call(rt, "listMessages", {}, environ))
        assert ("workspace", "acme") in query(request)
        assert request.headers("x-team") == ["blue"]
        baked = (tmp_path / "gen0" / "toolc_router" / "_tables.json").read_text()
        assert "${CHAT_WORKSPACE}" in baked and "acme" not in baked

    async def test_an_unset_preset_variable_refuses_the_call_by_name(self, compiled: Any, recorder: RawRecorder,
                                                                     tmp_path: Path) -> None:
        rt = compiled(chat(base_url=recorder.url, fixed_params={
            "listMessages": {"query": {"workspace": "${CHAT_WORKSPACE}"}}}))
        result = await call(rt, "listMessages", {}, CREDENTIAL, tmp_path / "audit.db")
        assert result.is_error and "CHAT_WORKSPACE" in (result.error or ""), result.error
        assert recorder.requests == []
        assert audited_as_refused(tmp_path / "audit.db", result)

    async def test_a_models_argument_is_never_expanded(self, compiled: Any, recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url))
        request = only(recorder, await call(rt, "listMessages", {"channel": "${TOOLC_CHAT_OAUTH}"}, CREDENTIAL))
        assert ("channel", "${TOOLC_CHAT_OAUTH}") in query(request)
        assert TOKEN not in dict(query(request))["channel"]

    async def test_an_expanded_preset_value_is_redacted_like_a_credential(self, compiled: Any,
                                                                          recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url, fixed_params={
            "listMessages": {"header": {"X-Team": "${CHAT_TEAM}"}}}))
        assert "CHAT_TEAM" in rt._tables.SECRET_ENV
        recorder.respond = echo_headers
        try:
            result = await call(rt, "listMessages", {}, {**CREDENTIAL, "CHAT_TEAM": "team-secret-42"})
        finally:
            recorder.respond = None
        assert recorder.last.headers("x-team") == ["team-secret-42"]  # sent as it is
        text = json.dumps([result.content, result.structured])
        assert "team-secret-42" not in text and "[REDACTED]" in text  # the server's echo is redacted


class TestSecretLookingPresets:
    """A literal preset that looks like a secret is baked as written: the compile warns and says how to move it."""

    @staticmethod
    def warnings(settings: OpenApiConfig, tmp_path: Path) -> list[Any]:
        (tmp_path / "runtime_config.yaml").write_bytes(DOCUMENT.read_bytes())
        config = Config(root=tmp_path, openapi=(settings,), codegen=False, targets=("openai-chat",))
        build = compile_project(config)
        return [d for d in build.diagnostics if d.code == "TC111"]

    def test_a_secret_looking_literal_is_warned_with_the_way_out(self, tmp_path: Path) -> None:
        [warning] = self.warnings(chat(fixed_params={
            "listMessages": {"header": {"X-Api-Token": "tk-4f9a0c2e"}, "query": {"workspace": "acme"}}}), tmp_path)
        assert warning.severity is Severity.WARNING
        assert warning.pointer == "/openapi/chat/fixed_params/listMessages/header/X-Api-Token"
        assert "${X_API_TOKEN}" in warning.message and "environment" in warning.message
        assert "tk-4f9a0c2e" not in warning.message

    @pytest.mark.parametrize("value", ["sk_live_51HqLyjWDarjtT1zdp7dc", "Bearer abc.def.ghi", "ghp_16C7e42F292c6912E7"])
    def test_a_known_token_shape_is_warned_whatever_its_name(self, tmp_path: Path, value: str) -> None:
        [warning] = self.warnings(chat(fixed_params={"*": {"query": {"workspace": value}}}), tmp_path)
        assert "'*'" in warning.message or "every operation" in warning.message

    def test_a_reference_and_a_plain_value_are_not_warned(self, tmp_path: Path) -> None:
        assert self.warnings(chat(fixed_params={
            "listMessages": {"header": {"X-Api-Token": "${CHAT_TOKEN}"}, "query": {"workspace": "acme"}}}),
            tmp_path) == []


class TestSourceWidePresets:
    """`fixed_params: {"*": ...}` presets every operation of the source; an operation's own preset wins."""

    async def test_a_layered_header_goes_to_every_operation_and_an_own_preset_wins(self, compiled: Any,
                                                                                   recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url, fixed_params={
            "*": {"header": {"X-Org": "acme"}}, "getStatus": {"header": {"X-Org": "other"}}}))
        for operation, arguments in (("listMessages", {}), ("postMessage", {"text": "hi"}), ("uploadFile", {})):
            recorder.clear()
            assert only(recorder, await call(rt, operation, arguments, CREDENTIAL)).headers("x-org") == ["acme"]
        recorder.clear()
        assert only(recorder, await call(rt, "getStatus", {}, CREDENTIAL)).headers("x-org") == ["other"]

    async def test_a_flat_preset_pins_the_argument_wherever_an_operation_has_it(self, compiled: Any,
                                                                                recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url, fixed_params={"*": {"channel": "general"}}))
        tools = rt._tables.TOOLS
        assert tools["openapi:chat:listMessages"].fixed_params == {"query": {"channel": "general"}}
        assert tools["openapi:chat:postMessage"].fixed_params == {"body": {"channel": "general"}}
        assert tools["openapi:chat:uploadFile"].fixed_params == {}
        request = only(recorder, await call(rt, "postMessage", {"text": "hi"}, CREDENTIAL))
        assert json.loads(request.body) == {"text": "hi", "channel": "general"}
        recorder.clear()
        result = await call(rt, "postMessage", {"text": "hi", "channel": "random"}, CREDENTIAL)
        assert result.is_error and recorder.requests == []

    def test_a_source_wide_preset_naming_nothing_anywhere_is_an_error(self) -> None:
        diagnostics = Diagnostics()
        read_catalog(load_document(DOCUMENT), "chat", chat(fixed_params={"*": {"chanel": "general"}}), diagnostics)
        [error] = [d for d in diagnostics if d.code == "TC312"]
        assert error.severity is Severity.ERROR and "'chanel'" in error.message


class TestCredentialParameters:
    """A `token` parameter that duplicates the OAuth scheme, or a parameter under an API key's own key, is filled
    from the credential and never asked of the model."""

    def test_the_model_is_not_asked_for_the_credential(self) -> None:
        diagnostics = Diagnostics()
        catalog = read_catalog(load_document(DOCUMENT), "chat", chat(), diagnostics)
        for operation in ("listMessages", "postMessage", "listKeys"):
            schema = catalog.tool(f"openapi:chat:{operation}").input_schema
            assert "token" not in schema["properties"] and "X-API-Key" not in schema["properties"], operation
            assert "token" not in schema.get("required", []), operation
        assert [d.code for d in diagnostics if d.code == "TC319"] == ["TC319"]

    async def test_the_parameter_is_filled_from_the_credential(self, compiled: Any, recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url))
        request = only(recorder, await call(rt, "listMessages", {"channel": "c1"}, CREDENTIAL))
        assert [value for key, value in query(request) if key == "token"] == [TOKEN]
        assert request.headers("authorization") == [f"Bearer {TOKEN}"]
        recorder.clear()
        request = only(recorder, await call(rt, "postMessage", {"text": "hi"}, CREDENTIAL))
        assert request.headers("token") == [TOKEN]

    async def test_an_api_key_parameter_is_sent_once_as_the_credential(self, compiled: Any,
                                                                       recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url))
        request = only(recorder, await call(rt, "listKeys", {}, {"TOOLC_CHAT_APIKEY": "key-9"}))
        assert request.headers("x-api-key") == ["key-9"]

    @pytest.mark.parametrize("arguments", [{"token": "ATTACKER"}, {"channel": "c", "token": "ATTACKER"}])
    async def test_the_model_cannot_set_it(self, compiled: Any, recorder: RawRecorder, tmp_path: Path,
                                           arguments: dict[str, Any]) -> None:
        rt = compiled(chat(base_url=recorder.url))
        result = await call(rt, "listMessages", arguments, CREDENTIAL, tmp_path / "audit.db")
        assert result.is_error and recorder.requests == []
        assert audited_as_refused(tmp_path / "audit.db", result)

    def test_the_wire_refuses_it_like_any_unknown_argument(self, compiled: Any) -> None:
        rt = compiled(chat(base_url="http://127.0.0.1:9"))
        wire = __import__("toolc_router.wire", fromlist=["build_request"])
        spec = rt._tables.TOOLS["openapi:chat:listMessages"].http
        with pytest.raises(rt.RouterError, match="unknown argument"):
            wire.build_request(spec, "http://127.0.0.1:9", {"token": "ATTACKER"}, {}, {"oauth": TOKEN})


class TestMissingCredential:
    """An operation whose security has no credential set is refused with the variable named; where the document
    makes security optional the call is sent, and said so once."""

    async def test_a_missing_credential_is_refused_by_name(self, compiled: Any, recorder: RawRecorder,
                                                           tmp_path: Path) -> None:
        rt = compiled(chat(base_url=recorder.url))
        result = await call(rt, "listMessages", {"channel": "c1"}, {}, tmp_path / "audit.db")
        assert result.is_error and "TOOLC_CHAT_OAUTH" in (result.error or ""), result.error
        assert recorder.requests == []
        assert audited_as_refused(tmp_path / "audit.db", result)

    async def test_an_empty_credential_counts_as_missing(self, compiled: Any, recorder: RawRecorder) -> None:
        rt = compiled(chat(base_url=recorder.url))
        result = await call(rt, "listKeys", {}, {"TOOLC_CHAT_APIKEY": ""})
        assert result.is_error and "TOOLC_CHAT_APIKEY" in (result.error or ""), result.error
        assert recorder.requests == []

    async def test_optional_security_is_sent_anonymously_and_said_once(self, compiled: Any, recorder: RawRecorder,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
        rt = compiled(chat(base_url=recorder.url))
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                recorder.clear()
                request = only(recorder, await call(rt, "getStatus", {}, {}))
                assert request.headers("authorization") == []
        said = [r for r in caplog.records if "TOOLC_CHAT_OAUTH" in r.getMessage()]
        assert len(said) == 1 and "without" in said[0].getMessage()


class TestEnvironmentListing:
    """The compiled router lists every variable a deployment reads, with what each is for."""

    def test_env_example_lists_every_variable(self, compiled: Any, tmp_path: Path) -> None:
        compiled(chat(fixed_params={"*": {"header": {"X-Team": "${CHAT_TEAM}"}}}))
        text = (tmp_path / "gen0" / "toolc_router" / ".env.example").read_text()
        lines = {line.split("=", 1)[0].lstrip("# ") for line in text.splitlines() if "=" in line
                 and line.lstrip("# ").split("=", 1)[0].isupper()}
        assert {"TOOLC_BASE_URL_CHAT", "TOOLC_CHAT_OAUTH", "TOOLC_CHAT_APIKEY", "CHAT_TEAM", "TOOLC_ADMIN_TOKEN",
                "TOOLC_AUDIT_DB", "TOOLC_AUDIT_DSN"} <= lines, text
        assert "https://api.example.invalid/v1" in text  # what the override replaces
        assert "bearer token" in text.lower() and "X-API-Key" in text
        assert "query 'token'" in text and "header 'token'" in text  # the parameters the OAuth token fills


class TestEnvInMcpPresets:
    """An MCP tool's preset reads `${NAME}` on every call too; the model's arguments are never expanded."""

    async def test_an_mcp_preset_reference_reaches_the_server_expanded(self, tmp_path: Path) -> None:
        received: list[dict[str, str]] = []
        server = probe_server()

        @server.tool()
        def file_note(text: str, folder: str) -> str:
            received.append({"text": text, "folder": folder})
            return "filed"

        schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        tool = Tool(id="mcp:probe:file_note", source="probe", name="file_note", description="file a note",
                    input_schema=schema, binding=McpBinding(server="probe", tool_name="file_note"),
                    fixed_params={"folder": "${NOTE_FOLDER}"})
        catalog = Catalog(sources=(Source(id="probe", kind="mcp", location="probe"),), tools=(tool,))
        with load_router(write_router(make_build(catalog), tmp_path)) as rt:
            assert "NOTE_FOLDER" in rt._tables.SECRET_ENV
            for environ in ({"NOTE_FOLDER": "inbox-7"}, {}):
                router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=environ)
                router.set_server_factory("probe", lambda: server)
                result = await router.call_tool("mcp:probe:file_note", {"text": "${NOTE_FOLDER}"},
                                                context=rt.InvocationContext(**FROZEN))
                await router.aclose()
                if environ:
                    assert not result.is_error, result.error
                else:
                    assert result.is_error and "NOTE_FOLDER" in (result.error or ""), result.error
        assert received == [{"text": "${NOTE_FOLDER}", "folder": "inbox-7"}]
