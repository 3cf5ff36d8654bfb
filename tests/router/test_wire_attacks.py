"""Attacks on the router's wire, one class per bullet of issue 10 that the wire owns: presets leak, query and cookie
smuggling, path traversal, wrong host, wrong wire format. Each call goes through the generated router to loopback
servers that record the raw request (request line, header lines, body bytes); each test asserts exactly what reached
the wire (nothing, or the encoded value) and what the caller and the audit table saw."""

from __future__ import annotations

import importlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import pytest

from compiler.config import OpenApiConfig
from compiler.infra.diagnostics import Diagnostics, Severity
from tests.servers.raw_http import RawRecorder
from tests.support.wire import (
    API_KEY,
    CREDENTIALS,
    FROZEN,
    SESSION,
    audited_as_refused,
    generated_router,
    read_catalog,
    wire_document,
)
from tests.support.wire import (
    WireHarness as Wire,
)

PRESETS = {
    "listItems": {"query": {"tenant": "acme"}, "header": {"X-Org": "acme-org"}},
    "createCharge": {"currency": "eur"},
}


@pytest.fixture(scope="module")
def rt(servers: tuple[RawRecorder, RawRecorder], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    document = wire_document(servers[0].url, servers[1].url)
    config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params=PRESETS)
    with generated_router(tmp_path_factory.mktemp("wire"), document, config=config) as module:
        yield module


@pytest.fixture
async def wire(rt: Any, servers: tuple[RawRecorder, RawRecorder], tmp_path: Path) -> AsyncIterator[Wire]:
    harness = Wire(rt, tmp_path / "audit.db", servers, source="wire", environ=CREDENTIALS, api_key=API_KEY,
                   session=SESSION)
    yield harness
    await harness.aclose()


class TestPresetsLeak:
    async def test_layered_header_and_query_presets_are_sent_once(self, wire: Wire) -> None:
        request = wire.one(await wire.call("listItems", {"q": "x"}))
        assert request.headers("x-org") == ["acme-org"]  # a layered header preset is applied, not dropped
        assert [p for p in request.query_pairs if p[0] == "tenant"] == [("tenant", "acme")]

    @pytest.mark.parametrize("arguments", [
        {"tenant": "evil"},
        {"X-Org": "evil"},
        {"filter": {"tenant": "evil"}},
        {"filter": {"TENANT": "x", "tenant": "evil"}},
    ])
    async def test_no_argument_overrides_or_duplicates_a_preset(self, wire: Wire, arguments: dict[str, Any]) -> None:
        wire.refused(await wire.call("listItems", arguments))

    async def test_preset_arguments_leave_the_model_schema(self, rt: Any) -> None:
        tools = importlib.import_module("toolc_router._tables").TOOLS
        catalog = read_catalog(wire_document("http://h:1", "http://h:2"), "wire",
                               OpenApiConfig(id="wire", path="wire.yaml", fixed_params=PRESETS))
        assert "tenant" not in catalog.tool("openapi:wire:listItems").input_schema["properties"]
        assert tools["openapi:wire:listItems"].fixed_params == PRESETS["listItems"]
        assert tools["openapi:wire:createCharge"].fixed_params == {"body": {"currency": "eur"}}

    async def test_a_flat_body_preset_is_final(self, wire: Wire) -> None:
        request = wire.one(await wire.call("createCharge", {"amount": 5}))
        assert parse_qsl(request.body.decode()) == [("amount", "5"), ("currency", "eur")]
        wire.refused(await wire.call("createCharge", {"amount": 5, "currency": "usd"}))
        wire.refused(await wire.call("createCharge", {"amount": 5, "extra": {"currency": "usd"}}), "refused")

    async def test_a_whole_body_preset_and_a_styled_one_keep_their_wire_format(
            self, servers: tuple[RawRecorder, RawRecorder], tmp_path: Path) -> None:
        document = wire_document(servers[0].url, servers[1].url)
        config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params={
            "putNote": {"body": "pinned text"}, "listItems": {"ids": [1, 2], "query": {"tenant": "acme"}}})
        with generated_router(tmp_path, document, config=config) as rt:
            router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=CREDENTIALS)
            context = rt.InvocationContext(**FROZEN)
            servers[0].clear()
            assert not (await router.call_tool("openapi:wire:putNote", {}, context=context)).is_error
            assert servers[0].last.body == b"pinned text"
            assert (await router.call_tool("openapi:wire:putNote", {"body": "mine"}, context=context)).is_error
            assert not (await router.call_tool("openapi:wire:listItems", {}, context=context)).is_error
            assert sorted(p for p in servers[0].last.query_pairs if p[0] in ("ids", "tenant")) == [
                ("ids", "1|2"), ("tenant", "acme")]  # the pinned parameter keeps its pipeDelimited style
            assert len(servers[0].requests) == 2
            await router.aclose()

    def test_pinning_a_renamed_argument_is_an_error_listing_the_candidates(self) -> None:
        diagnostics = Diagnostics()
        config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params={"setOwner": {"owner": "me"}})
        catalog = read_catalog(wire_document("http://h:1", "http://h:2"), "wire", config, diagnostics)
        [error] = [d for d in diagnostics if d.code == "TC316"]
        assert error.severity is Severity.ERROR
        assert "'owner' (body 'owner')" in error.message and "'owner_query' (query 'owner')" in error.message
        assert "owner_query" in catalog.tool("openapi:wire:setOwner").input_schema["properties"]

    @pytest.mark.parametrize(("preset", "code", "words"), [
        ({"nope": 1}, "TC312", "names no argument"),
        ({"path": {"other": "x"}}, "TC317", "no variable {other}"),
        ({"query": {"api_key": "mine"}}, "TC317", "credential"),
        ({"cookie": {"sid": "mine"}}, "TC317", "credential"),
        ({"header": {"X-Org": "a\r\nX-Evil: 1"}}, "TC317", "CR or LF"),
    ])
    def test_a_preset_that_cannot_be_applied_is_an_error(self, preset: dict[str, Any], code: str,
                                                         words: str) -> None:
        diagnostics = Diagnostics()
        config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params={"getFile": preset})
        read_catalog(wire_document("http://h:1", "http://h:2"), "wire", config, diagnostics)
        [error] = [d for d in diagnostics if d.code == code]
        assert error.severity is Severity.ERROR and words in error.message, error.message

    def test_a_renamed_twin_can_be_pinned_by_location(self) -> None:
        diagnostics = Diagnostics()
        config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params={"setOwner": {"query": {"owner": "me"}}})
        catalog = read_catalog(wire_document("http://h:1", "http://h:2"), "wire", config, diagnostics)
        tool = catalog.tool("openapi:wire:setOwner")
        assert "owner_query" not in tool.input_schema["properties"] and "owner" in tool.input_schema["properties"]
        assert tool.fixed_params == {"query": {"owner": "me"}}
        assert not [d for d in diagnostics if d.severity is Severity.ERROR]


class TestQueryAndCookieSmuggling:
    @pytest.mark.parametrize("spread", [
        {"api_key": "ATTACKER"},
        {"tenant": "evil"},
        {"q": "other"},
        {"api_key[x]": "ATTACKER"},
        {"deep[color]": "red"},
    ])
    async def test_an_object_query_argument_cannot_make_another_parameters_key(self, wire: Wire,
                                                                                 spread: dict[str, str]) -> None:
        wire.refused(await wire.call("listItems", {"filter": spread}), "refused")

    async def test_free_keys_of_an_object_argument_go_out_encoded(self, wire: Wire) -> None:
        request = wire.one(await wire.call("listItems", {"filter": {"size": "a&b=c", "sort": "#x+y"}}))
        assert ("size", "a%26b%3Dc") in request.query_pairs and ("sort", "%23x%2By") in request.query_pairs

    @pytest.mark.parametrize(("value", "encoded"), [
        ("a&tenant=evil", "a%26tenant%3Devil"),
        ("x&api_key=ATTACKER", "x%26api_key%3DATTACKER"),
        ("#frag", "%23frag"),
        ("1+1 = 2", "1%2B1%20%3D%202"),
        ("%26", "%2526"),
        ("a/b?c;d.e", "a%2Fb%3Fc%3Bd.e"),
    ])
    async def test_query_values_cannot_split_keys(self, wire: Wire, value: str, encoded: str) -> None:
        request = wire.one(await wire.call("listItems", {"q": value}))
        assert [p for p in request.query_pairs if p[0] == "q"] == [("q", encoded)]
        assert sorted(request.query_keys) == ["api_key", "q", "tenant"]

    @pytest.mark.parametrize("value", [{"tenant": "evil"}, ["a", "b"], {"api_key": "x"}])
    async def test_an_object_where_the_schema_says_string_is_refused(self, wire: Wire, value: Any) -> None:
        wire.refused(await wire.call("listItems", {"q": value}))

    @pytest.mark.parametrize("entry", ["openai", "anthropic", "gemini"])
    async def test_every_provider_entry_point_is_held_to_the_same_wire(
            self, entry: str, servers: tuple[RawRecorder, RawRecorder], tmp_path_factory: pytest.TempPathFactory,
            tmp_path: Path) -> None:
        from anthropic.types import ToolUseBlock
        from google.genai import types as gemini
        from openai.types.chat import ChatCompletionMessageFunctionToolCall
        from openai.types.chat.chat_completion_message_function_tool_call import Function

        document = wire_document(servers[0].url, servers[1].url)
        config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params=PRESETS)
        with generated_router(tmp_path, document, config=config, name_maps=True) as rt:
            maps = importlib.import_module("toolc_router._tables").NAME_MAPS
            target = {"openai": "openai-chat", "anthropic": "anthropic", "gemini": "gemini"}[entry]
            [name] = [n for n, e in maps[target].items() if e.tool_id == "openapi:wire:listItems"]
            router = rt.Router(audit_sink=rt.SqliteAuditSink(tmp_path / "audit.db"), environ=CREDENTIALS)
            context = rt.InvocationContext(**FROZEN)
            for arguments, sent in (({"filter": {"api_key": "ATTACKER"}}, False),
                                    ({"q": "a&tenant=evil", "pref": "x; sid=ATTACKER"}, True)):
                servers[0].clear()
                if entry == "openai":
                    call = ChatCompletionMessageFunctionToolCall(id="c1", type="function", function=Function(
                        name=name, arguments=json.dumps(arguments)))
                    result = await router.call_openai_tool_call(call, context=context)
                elif entry == "anthropic":
                    block = ToolUseBlock(id="t1", name=name, input=arguments, type="tool_use")
                    result = await router.call_anthropic_tool_use(block, context=context)
                else:
                    part = gemini.Part(function_call=gemini.FunctionCall(id="g1", name=name, args=arguments))
                    result = await router.call_gemini_function_call(part, context=context)
                router.audit.flush()
                assert result.is_error is not sent, result.error
                if not sent:
                    assert servers[0].requests == [] and audited_as_refused(tmp_path / "audit.db", result)
                    continue
                request = servers[0].last
                assert ("q", "a%26tenant%3Devil") in request.query_pairs
                assert [p for p in request.query_pairs if p[0] in ("tenant", "api_key")] == [
                    ("tenant", "acme"), ("api_key", API_KEY)]
                assert sorted(request.cookies) == [("pref", "x%3B%20sid%3DATTACKER"), ("sid", SESSION)]
            await router.aclose()
            router.audit.close()

    @pytest.mark.parametrize(("value", "encoded"), [
        ("x; sid=ATTACKER", "x%3B%20sid%3DATTACKER"),
        ("a,b", "a%2Cb"),
        ('"quoted" \\', "%22quoted%22%20%5C"),
    ])
    async def test_cookie_values_cannot_add_cookies(self, wire: Wire, value: str, encoded: str) -> None:
        request = wire.one(await wire.call("listItems", {"pref": value}))
        assert [c for c in request.cookies if c[0] == "pref"] == [("pref", encoded)]
        assert sorted(name for name, _ in request.cookies) == ["pref", "sid"]

    @pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "nul\x00", "caf\u00e9"])
    async def test_header_values_with_control_characters_are_refused(self, wire: Wire, value: str) -> None:
        wire.refused(await wire.call("listItems", {"X-Note": value}), "header")

    async def test_cookie_values_with_line_breaks_are_encoded_not_sent_raw(self, wire: Wire) -> None:
        request = wire.one(await wire.call("listItems", {"pref": "a\r\nX-Evil: 1"}))
        assert "x-evil" not in request.header_names
        assert ("pref", "a%0D%0AX-Evil%3A%201") in request.cookies


class TestPathTraversal:
    # `../meta` and friends used to go out encoded (`..%2Fmeta`); a proxy that decodes `%2F` before normalising
    # (nginx with a URI in `proxy_pass`) or an application that decodes twice reaches `/meta` with them, so they
    # are refused too (tests/router/test_redteam.py::TestPathEncodings has the rest).
    @pytest.mark.parametrize("name", ["..", ".", "", "../meta", "..%2Fmeta", "%2E%2E", "a/../../b"])
    async def test_dot_segments_and_empty_values_are_refused(self, wire: Wire, name: str) -> None:
        wire.refused(await wire.call("getFile", {"name": name}), "refused" if name else "empty")

    @pytest.mark.parametrize(("name", "segment"), [
        ("a/b", "a%2Fb"),
        ("x?y#z", "x%3Fy%23z"),
        ("...", "..."),
    ])
    async def test_other_values_stay_one_encoded_segment(self, wire: Wire, name: str, segment: str) -> None:
        request = wire.one(await wire.call("getFile", {"name": name}))
        assert request.raw_path == f"/root/files/{segment}"
        assert unquote(segment) == name

    @pytest.mark.parametrize("label", [["."], [""], []])  # `.` + `.`, `.` + ``: dot segments
    async def test_label_style_cannot_make_a_dot_segment(self, wire: Wire, label: list[str]) -> None:
        result = await wire.call("pathStyles", {"label": label, "matrix": {"r": 1}, "simple": {"a": "x"}})
        wire.refused(result)


class TestWrongHost:
    @pytest.mark.parametrize(("operation", "server", "prefix"), [
        ("rootServer", 0, "/root/hosts/root"),
        ("pathItemServer", 1, "/path-item/hosts/path-item"),
        ("operationServer", 0, "/operation/hosts/operation"),
        ("getMeta", 0, "/root/meta"),
    ])
    async def test_each_operation_goes_to_its_own_server(self, wire: Wire, operation: str, server: int,
                                                          prefix: str) -> None:
        request = wire.one(await wire.call(operation, {}))
        recorder = (wire.primary, wire.secondary)[server]
        assert recorder.requests == [request]
        assert request.raw_path == prefix

    async def test_the_project_base_url_wins_for_every_operation(self, servers: tuple[RawRecorder, RawRecorder],
                                                                 tmp_path: Path) -> None:
        document = wire_document(servers[0].url, servers[1].url)
        config = OpenApiConfig(id="wire", path="wire.yaml", base_url=servers[1].url + "/override")
        with generated_router(tmp_path, document, config=config) as rt:
            router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=CREDENTIALS)
            for operation in ("rootServer", "pathItemServer", "operationServer"):
                servers[1].clear()
                result = await router.call_tool(f"openapi:wire:{operation}", {},
                                                context=rt.InvocationContext(**FROZEN))
                assert not result.is_error, result.error
                assert servers[1].last.raw_path.startswith("/override/hosts/")
            await router.aclose()

    async def test_relative_servers_resolve_against_the_run_time_origin(self, servers: tuple[RawRecorder, RawRecorder],
                                                                        tmp_path: Path) -> None:
        document = wire_document(servers[0].url, servers[1].url)
        document["servers"] = [{"url": "/v2"}]
        document["paths"]["/hosts/path-item"]["servers"] = [{"url": "/pi"}]
        with generated_router(tmp_path, document) as rt:
            tables = importlib.import_module("toolc_router._tables")
            assert tables.HTTP_APIS["wire"].base_url == "${TOOLC_BASE_URL_WIRE}/v2"
            environ = {**CREDENTIALS, "TOOLC_BASE_URL_WIRE": servers[1].url}
            router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=environ)
            for operation, prefix in (("rootServer", "/v2/hosts/root"), ("pathItemServer", "/pi/hosts/path-item")):
                servers[1].clear()
                result = await router.call_tool(f"openapi:wire:{operation}", {},
                                                context=rt.InvocationContext(**FROZEN))
                assert not result.is_error, result.error
                assert servers[1].last.raw_path == prefix
            unset = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=CREDENTIALS)
            result = await unset.call_tool("openapi:wire:rootServer", {}, context=rt.InvocationContext(**FROZEN))
            assert result.is_error and "TOOLC_BASE_URL_WIRE" in (result.error or "")
            await router.aclose()

    def test_swagger_2_host_base_path_and_scheme(self) -> None:
        document = {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "api.example.test:8443",
                    "basePath": "/v2", "schemes": ["https", "http"],
                    "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}}}
        catalog = read_catalog(document, "swag", OpenApiConfig(id="swag", path="swag.yaml"))
        assert catalog.tool("openapi:swag:listPets").binding.base_url == "https://api.example.test:8443/v2"  # type: ignore[union-attr]

    def test_a_server_variable_outside_its_enum_is_reported_and_replaced(self) -> None:
        document = wire_document("http://h:1", "http://h:2")
        variable = document["paths"]["/hosts/operation"]["get"]["servers"][0]["variables"]["port"]
        variable["default"] = "9"
        diagnostics = Diagnostics()
        catalog = read_catalog(document, "wire", OpenApiConfig(id="wire", path="wire.yaml"), diagnostics)
        [warning] = [d for d in diagnostics if d.code == "TC315"]
        assert "'9' is not in its enum" in warning.message
        binding = catalog.tool("openapi:wire:operationServer").binding
        assert binding.base_url == f"http://127.0.0.1:{variable['enum'][0]}/operation"  # type: ignore[union-attr]


class TestWrongWireFormat:
    async def test_form_body_follows_its_encoding(self, wire: Wire) -> None:
        request = wire.one(await wire.call("createCharge", {
            "amount": 100, "metadata": {"key1": "abc", "k&2": "x=y"},
            "items": [{"price": "p_1", "quantity": 2}, {"price": "p_2"}], "expand": ["customer", "invoice"]}))
        assert request.headers("content-type") == ["application/x-www-form-urlencoded"]
        assert request.body.decode().split("&") == [
            "amount=100", "metadata[key1]=abc", "metadata[k%262]=x%3Dy", "items[0][price]=p_1",
            "items[0][quantity]=2", "items[1][price]=p_2", "expand[0]=customer", "expand[1]=invoice",
            "currency=eur"]

    async def test_query_styles(self, wire: Wire) -> None:
        request = wire.one(await wire.call("listItems", {
            "deep": {"color": "red", "tags": ["a", "b"]}, "ids": [1, 2, 3], "point": {"x": 1, "y": 2},
            "where": {"name": "a&b"}}))
        pairs = request.query_pairs
        assert ("deep[color]", "red") in pairs and ("deep[tags][0]", "a") in pairs and ("deep[tags][1]", "b") in pairs
        assert ("ids", "1|2|3") in pairs
        assert ("point", "x,1,y,2") in pairs  # form, explode false: one key
        assert ("where", "%7B%22name%22%3A%22a%26b%22%7D") in pairs  # JSON content, percent-encoded

    async def test_header_object_and_path_styles(self, wire: Wire) -> None:
        request = wire.one(await wire.call("listItems", {"X-Dims": {"w": 3, "h": 4}}))
        assert request.headers("x-dims") == ["w=3,h=4"]
        request = wire.one(await wire.call("pathStyles", {
            "label": ["a", "b c"], "matrix": {"r": 1, "g": 2}, "simple": {"a": "x", "b": "y/z"}}))
        assert request.raw_path == "/root/styles/.a,b%20c/;r=1;g=2/a,x,b,y%2Fz"

    async def test_multipart_body_has_parts_and_a_boundary(self, wire: Wire) -> None:
        request = wire.one(await wire.call("upload", {"file": "bytes\x00here", "note": "*hi*", "meta": {"k": "v"}}))
        [content_type] = request.headers("content-type")
        assert content_type.startswith("multipart/form-data; boundary=")
        boundary = content_type.split("boundary=", 1)[1].encode()
        parts = [part for part in request.body.split(b"--" + boundary) if part.strip(b"-\r\n")]
        heads = {part.split(b"\r\n\r\n", 1)[0].strip(): part.split(b"\r\n\r\n", 1)[1][:-2] for part in parts}
        assert heads == {
            b'Content-Disposition: form-data; name="file"; filename="file"\r\n'
            b"Content-Type: application/octet-stream": b"bytes\x00here",
            b'Content-Disposition: form-data; name="note"\r\nContent-Type: text/markdown': b"*hi*",
            b'Content-Disposition: form-data; name="meta"\r\nContent-Type: application/json': b'{"k":"v"}',
        }

    async def test_a_required_body_without_required_properties_is_sent(self, wire: Wire) -> None:
        request = wire.one(await wire.call("createConfig", {}))
        assert request.body == b"{}" and request.headers("content-type") == ["application/json"]

    async def test_an_optional_bodys_required_properties_stay_required(self, wire: Wire) -> None:
        catalog = read_catalog(wire_document("http://h:1", "http://h:2"), "wire",
                               OpenApiConfig(id="wire", path="wire.yaml"))
        schema = catalog.tool("openapi:wire:setOwner").input_schema
        assert schema["required"] == ["id"]  # the body is optional ...
        assert schema["dependentRequired"] == {"owner": ["label"], "label": ["owner"], "note": ["owner", "label"]}
        wire.refused(await wire.call("setOwner", {"id": 1, "note": "n"}))  # the validator or the serializer says so
        request = wire.one(await wire.call("setOwner", {"id": 1}))
        assert request.body == b""
        request = wire.one(await wire.call("setOwner", {"id": 1, "owner": "o", "label": "l", "owner_query": "q"}))
        assert json.loads(request.body) == {"owner": "o", "label": "l"} and ("owner", "q") in request.query_pairs

    async def test_patch_with_an_object_goes_out_as_a_merge_patch(self, wire: Wire) -> None:
        request = wire.one(await wire.call("patchConfig", {"body": {"spec": {"replicas": 2}}}))
        assert request.headers("content-type") == ["application/merge-patch+json"]
        assert json.loads(request.body) == {"spec": {"replicas": 2}}

    async def test_text_body(self, wire: Wire) -> None:
        request = wire.one(await wire.call("putNote", {"body": "line 1\nline 2"}))
        assert request.body == b"line 1\nline 2" and request.headers("content-type") == ["text/plain"]
        wire.refused(await wire.call("putNote", {"body": {"not": "text"}}))
