"""Hand-written fixtures: flattening, bindings, bodies, dialect conversion, config, detection."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from compiler.config import OpenApiConfig
from compiler.infra.detect import detect_kind
from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.ir import HttpArgument, HttpBinding, PartialOutputBinding, RiskLevel, SecurityScheme, Tool
from compiler.sources.openapi import operations, read_openapi
from tests.support.openapi import FIXTURES, compile_file, dangling_refs, dialect_leftovers


def _tools(name: str, **kwargs: Any) -> tuple[dict[str, Tool], Any, Diagnostics]:
    source, tools, diagnostics = compile_file(FIXTURES / name, **kwargs)
    assert dangling_refs(source, tools) == []
    assert dialect_leftovers(source, tools) == []
    for schema in [*source.definitions.values(), *(t.input_schema for t in tools)]:
        Draft202012Validator.check_schema(schema)
    return {tool.name: tool for tool in tools}, source, diagnostics


def _binding(tool: Tool) -> HttpBinding:
    assert isinstance(tool.binding, HttpBinding)
    return tool.binding


BEARER = SecurityScheme(name="bearer", type="http", scheme="bearer")
API_KEY = SecurityScheme(name="apiKey", type="apiKey", location="header", param_name="X-API-Key")


def test_params_flattened_schema_and_binding() -> None:
    tools, source, diagnostics = _tools("params.yaml", source_id="params")
    tool = tools["updatePet"]
    assert tool.id == "openapi:params:updatePet"
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "id_path": {"type": "integer", "description": "The pet's id"},
            "X-Trace-Id": {"type": "string", "description": "Correlation id echoed in logs"},
            "dryRun": {"type": "boolean", "default": False},
            "tags": {"type": "array", "items": {"type": "string"}},
            "session": {"type": "string"},
            "id": {"type": "integer", "description": "The new id"},
            "name": {"type": "string"},
        },
        "required": ["id_path", "session", "id", "name"],
        "additionalProperties": False,
    }
    binding = _binding(tool)
    # Partial: its 204 answers with no body, so no output schema can promise every answer.
    assert binding == PartialOutputBinding(
        method="PUT",
        path="/pets/{id}",
        base_url="https://eu.example.test/v1",
        arguments=(
            HttpArgument("id_path", "id", "path", required=True, style="simple", explode=False, kind="integer"),
            HttpArgument("X-Trace-Id", "X-Trace-Id", "header", style="simple", explode=False, kind="string"),
            HttpArgument("dryRun", "dryRun", "query", style="form", explode=True, kind="boolean"),
            HttpArgument("tags", "tags", "query", style="form", explode=False, kind="array"),
            HttpArgument("session", "session", "cookie", required=True, style="form", explode=True, kind="string"),
            HttpArgument("id", "id", "body", required=True, kind="integer"),
            HttpArgument("name", "name", "body", required=True, kind="string"),
        ),
        body_content_type="application/json",
        body_required=True,
        security=((API_KEY,), ()),
    )
    assert tool.description == "Update a pet\n\nReplaces the pet's name and id."
    assert tool.title == "Update a pet"
    assert tool.output_schema == {"$ref": "#/$defs/Pet"}  # 204 has no JSON, 200 (a $ref response) does
    assert (tool.risk, tool.side_effects) == (RiskLevel.HIGH, ("network.http", "remote.write"))
    renamed = [d for d in diagnostics if d.code == "TC305"]
    assert [(d.severity, d.tool, d.pointer) for d in renamed] == [
        (Severity.INFO, "openapi:params:updatePet", "/paths/~1pets~1{id}/put")]
    assert source.info == {"title": "Params fixture", "version": "1.0", "openapi": "3.0.3",
                           "servers": ["https://eu.example.test/v1"]}
    assert set(source.definitions) == {"NewPet", "Pet"}


def test_params_other_operations() -> None:
    tools, _, diagnostics = _tools("params.yaml")
    get_pet = tools["getPet"]
    assert get_pet.input_schema["required"] == ["id"]
    assert get_pet.output_schema == {"$ref": "#/$defs/Pet"}  # `default`, as there is no 2xx
    assert _binding(get_pet).security == ((BEARER,),)  # the document's security
    assert _binding(get_pet).body_content_type is None
    assert (get_pet.risk, get_pet.side_effects) == (RiskLevel.LOW, ("network.http",))

    list_pets = tools["listPets"]
    assert list_pets.description == "List pets"  # summary == description: once
    assert list_pets.output_schema == {"type": "array", "items": {"$ref": "#/$defs/Pet"}}  # 200 before 201

    # A requestBody $ref, required: the body's required properties are required.
    create = tools["createPet"]
    assert create.input_schema["properties"] == {"name": {"type": "string"}, "tag": {"type": ["string", "null"]}}
    assert create.input_schema["required"] == ["name"]

    # An optional body: none of its properties is required; `+json` counts as JSON; `2XX` is a 2xx.
    touch = tools["touchPets"]
    assert "required" not in touch.input_schema
    assert _binding(touch).body_content_type == "application/merge-patch+json"
    assert [a.required for a in _binding(touch).arguments] == [False, False]
    assert touch.output_schema == {"type": "object", "properties": {"touched": {"type": "integer"}}}
    assert not [d for d in diagnostics if d.tool == touch.id]


def test_non_object_form_and_raw_bodies() -> None:
    tools, _, diagnostics = _tools("params.yaml")
    batch = tools["createPets"]
    assert batch.input_schema["properties"] == {"body": {"type": "array", "items": {"$ref": "#/$defs/NewPet"}}}
    assert batch.input_schema["required"] == ["body"]
    assert _binding(batch).arguments == (HttpArgument("body", "body", "body", required=True, whole_body=True, kind="array"),)
    assert batch.output_schema is None

    form = tools["uploadPhoto"]
    assert _binding(form).body_content_type == "application/x-www-form-urlencoded"
    assert _binding(form).arguments[1:] == (
        HttpArgument("caption", "caption", "body", required_in_body=True, kind="string"),  # optional body, required field
        HttpArgument("labels", "labels", "body", style="deepObject", explode=True, kind="array"),
    )
    assert form.input_schema["required"] == ["id"]  # the body is optional

    raw = tools["putRaw"]
    assert _binding(raw).body_content_type == "application/octet-stream"
    assert raw.input_schema["properties"]["body"] == {"type": "string"}
    assert any(d.code == "TC309" and d.tool == raw.id for d in diagnostics)


def test_swagger_body_form_and_collection_formats() -> None:
    tools, source, diagnostics = _tools("swagger-body.yaml")
    add = tools["addPet"]
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"], "examples": ["Rex"]},
            "owner": {"$ref": "#/$defs/Person"},
            "x-internal": {"type": "string"},  # a property name, not an extension keyword
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    binding = _binding(add)
    assert (binding.base_url, binding.body_content_type) == ("https://api.example.test/v2", "application/json")
    assert binding.security == ((SecurityScheme(name="basicAuth", type="http", scheme="basic"),),)

    listing = _binding(tools["listPets"])
    assert listing.security == ((SecurityScheme(name="key", type="apiKey", location="query",
                                                 param_name="api_key"),),)
    assert [(a.name, a.style, a.explode) for a in listing.arguments] == [
        ("limit", "form", True), ("tags", "form", True), ("fields", "pipeDelimited", False)]
    assert tools["listPets"].input_schema["properties"]["limit"] == {"type": "integer", "exclusiveMinimum": 0}
    assert tools["listPets"].output_schema == {"type": "array", "items": {"$ref": "#/$defs/Pet"}}

    upload = tools["uploadImage"]
    assert _binding(upload).body_content_type == "multipart/form-data"
    assert upload.input_schema["properties"]["file"] == {"type": "string", "format": "binary"}
    assert upload.input_schema["required"] == ["petId", "file"]

    rename = tools["renamePets"]
    assert _binding(rename).arguments[-1] == HttpArgument("body", "body", "body", whole_body=True, kind="array")
    assert rename.input_schema["required"] == ["petId"]

    assert source.definitions["Person"]["discriminator"] == {"propertyName": "kind"}
    assert "x-go-name" not in source.definitions["Person"]
    dropped = [d for d in diagnostics if d.code == "TC310"]
    assert len(dropped) == 1 and "2 `x-`" in dropped[0].message  # x-go-name and x-nullable, once per source
    assert source.info["swagger"] == "2.0" and source.info["servers"] == ["https://api.example.test/v2"]


def test_oas30_nullable_and_keyword_conversion() -> None:
    _, source, diagnostics = _tools("nullable-30.yaml")
    thing = source.definitions["Thing"]
    assert thing == {
        "type": "object",
        "properties": {
            "note": {"type": ["string", "null"], "examples": ["hello"]},
            "colour": {"type": ["string", "null"], "enum": ["red", "green", None]},
            "tag": {"description": "The tag, if any", "anyOf": [{"$ref": "#/$defs/Tag"}, {"type": "null"}]},
            "either": {"anyOf": [{"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]},
            "anything": {},
            "ratio": {"type": "number", "maximum": 1, "exclusiveMinimum": 0},
            "x-literal-property": {"type": "string"},
        },
    }
    validator = Draft202012Validator({**thing, "$defs": dict(source.definitions)})
    assert validator.is_valid({"note": None, "colour": None, "tag": None, "either": None, "ratio": 0.5})
    assert not validator.is_valid({"ratio": 0})
    assert not validator.is_valid({"colour": "blue"})
    assert any(d.code == "TC310" for d in diagnostics)


def test_oas31_type_lists_lifted_pointers_and_webhooks() -> None:
    tools, source, diagnostics = _tools("types-31.yaml")
    assert source.definitions["Node"]["properties"]["name"] == {"type": ["string", "null"]}
    assert tools["getNode"].output_schema == {"$ref": "#/$defs/Node", "description": "The node"}
    # A pointer into a shared schema is lifted once under a name derived from the pointer, then flattened.
    assert source.definitions["Node_properties_meta"] == source.definitions["Node"]["properties"]["meta"]
    patch = tools["patchMeta"]
    assert list(patch.input_schema["properties"]) == ["name", "created"]
    assert _binding(patch).base_url == "/relative/api"  # relative server URLs are kept
    hooks = [d for d in diagnostics if d.code == "TC308"]
    assert [d.message for d in hooks] == ["ignored 1 webhook(s): requests the API makes are not tools"]


def test_config_selection_fixed_params_and_base_url() -> None:
    config = OpenApiConfig(path="params.yaml", base_url="http://localhost:8080", allow_tools=("*Pet", "list*"),
                           deny_tools=("getPet",), fixed_params={"updatePet": {"session": "s3cret", "nope": 1}})
    tools, _, diagnostics = _tools("params.yaml", config=config)
    assert sorted(tools) == ["createPet", "listPets", "updatePet"]
    update = tools["updatePet"]
    assert update.fixed_params == {"cookie": {"session": "s3cret"}}  # by location and wire name
    assert "session" not in update.input_schema["properties"]
    assert "session" not in update.input_schema["required"]
    assert any(a.name == "session" for a in _binding(update).arguments)  # still bound on the wire (its style)
    assert all(_binding(t).base_url == "http://localhost:8080" for t in tools.values())
    unknown = [d for d in diagnostics if d.code == "TC312"]
    assert len(unknown) == 1 and "'nope'" in unknown[0].message and unknown[0].severity is Severity.ERROR
    assert any(d.code == "TC311" and "5 operation(s)" in d.message for d in diagnostics)


def test_disabled_source_reads_nothing() -> None:
    tools, _, diagnostics = _tools("params.yaml", config=OpenApiConfig(path="params.yaml", enabled=False))
    assert tools == {}
    assert [d.code for d in diagnostics] == ["TC311"]


def test_reading_is_deterministic() -> None:
    first = compile_file(FIXTURES / "params.yaml")
    second = compile_file(FIXTURES / "params.yaml")
    assert first[1] == second[1]
    assert first[0] == second[0]
    assert [d.render() for d in first[2]] == [d.render() for d in second[2]]


@pytest.mark.parametrize(("document", "kind"), [
    ({"openapi": "3.1.0"}, "openapi"),
    ({"swagger": "2.0"}, "openapi"),
    ({"tools_list_pages": []}, "mcp-recording"),
    ({"tools": [{"name": "x"}]}, "mcp-recording"),
    ({"tools": "not a list"}, None),
    ({"info": {}}, None),
    ([{"openapi": "3.0.0"}], None),
    ("openapi", None),
])
def test_detect_kind(document: Any, kind: str | None) -> None:
    assert detect_kind(document) == kind


def test_document_without_location_details_still_reads() -> None:
    diagnostics = Diagnostics()
    source, tools = read_openapi({"openapi": "3.0.0", "paths": {"/": {"get": {}}}}, source_id="m", location="m",
                                 diagnostics=diagnostics)
    assert [t.name for t in tools] == ["get"]
    assert tools[0].input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert source.info == {"title": None, "version": None, "openapi": "3.0.0", "servers": []}
    assert [d.code for d in diagnostics] == ["TC303"]


def test_reserved_headers_and_operation_servers() -> None:
    document = {
        "openapi": "3.0.3",
        "servers": [{"url": "https://api.example.test"}],
        "paths": {
            "/a": {
                "servers": [{"url": "https://{env}.example.test", "variables": {"env": {"default": "staging"}}}],
                "get": {"operationId": "pathServer", "parameters": [
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    {"name": "authorization", "in": "header", "schema": {"type": "string"}},
                    {"name": "X-Custom", "in": "header", "schema": {"type": "string"}}]},
                "put": {"operationId": "operationServer", "servers": [{"url": "http://localhost:9"}]},
            },
            "/b": {"get": {"operationId": "documentServer"}},
        },
    }
    diagnostics = Diagnostics()
    _, tools = read_openapi(document, source_id="s", location="s", diagnostics=diagnostics)
    urls = {t.name: _binding(t).base_url for t in tools}
    assert urls == {"pathServer": "https://staging.example.test", "operationServer": "http://localhost:9",
                    "documentServer": "https://api.example.test"}
    assert list(tools[0].input_schema["properties"]) == ["X-Custom"]
    assert [(d.code, d.severity) for d in diagnostics] == [("TC314", Severity.INFO)]
    assert "ignored 2 header parameter(s)" in diagnostics.items[0].message


def test_swagger_without_host_and_unknown_security_scheme() -> None:
    document = {"swagger": "2.0", "basePath": "/api", "security": [{"missing": []}],
                "paths": {"/a": {"get": {"operationId": "a"}}, "/b": {"get": {"operationId": "b"}}}}
    diagnostics = Diagnostics()
    _, tools = read_openapi(document, source_id="s", location="s", diagnostics=diagnostics)
    assert [_binding(t).base_url for t in tools] == ["/api", "/api"]
    assert [_binding(t).security for t in tools] == [((),), ((),)]
    unknown = [d for d in diagnostics if d.code == "TC313"]
    assert len(unknown) == 1 and unknown[0].severity is Severity.WARNING and unknown[0].pointer == "/security/0"


def test_success_statuses_that_disagree_on_the_body_mark_the_output_partial(tmp_path: Path) -> None:
    widget = {"type": "object", "properties": {"id": {"type": "integer"}}}
    json_body = {"content": {"application/json": {"schema": widget}}}
    operations = {
        "same": {"200": {"description": "ok", **json_body}, "201": {"description": "made", **json_body}},
        "none": {"201": {"description": "made", **json_body}, "204": {"description": "nothing"}},
        "other": {"200": {"description": "ok", **json_body},
                  "202": {"description": "queued", "content": {"application/json": {"schema": {"type": "string"}}}}},
        "broken": {"200": {"description": "ok", **json_body}, "201": {"$ref": "#/components/responses/Gone"}},
    }
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://x.test"}],
                "paths": {f"/{name}": {"get": {"operationId": name, "responses": responses}}
                          for name, responses in operations.items()}}
    path = tmp_path / "statuses.json"
    path.write_text(json.dumps(document))
    _, tools, diagnostics = compile_file(path, tmp_path)
    partial = {tool.name: isinstance(_binding(tool), PartialOutputBinding) for tool in tools}
    assert partial == {"same": False, "none": True, "other": True, "broken": True}
    assert all(tool.output_schema is not None for tool in tools)  # the IR keeps the first 2xx body's schema
    assert not [d for d in diagnostics if d.tool == "openapi:statuses:broken"]  # asked quietly, not reported


def test_only_two_success_bodies_or_more_are_encoded_to_compare(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Most operations answer one success status: there is nothing to compare, so nothing is encoded."""
    encoded: list[Any] = []

    def counted(value: Any, **options: Any) -> str:
        encoded.append(value)
        return json.dumps(value, **options)

    monkeypatch.setattr(operations, "json", SimpleNamespace(dumps=counted))
    body = {"content": {"application/json": {"schema": {"type": "integer"}}}}
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://x.test"}],
                "paths": {"/one": {"get": {"operationId": "one", "responses": {"200": {"description": "ok", **body}}}},
                          "/two": {"get": {"operationId": "two", "responses": {"200": {"description": "ok", **body},
                                                                               "201": {"description": "made", **body}}}}}}
    path = tmp_path / "statuses.json"
    path.write_text(json.dumps(document))
    _, tools, _ = compile_file(path, tmp_path)
    assert {tool.name: isinstance(_binding(tool), PartialOutputBinding) for tool in tools} == {"one": False, "two": False}
    assert encoded == [{"type": "integer"}, {"type": "integer"}]  # the two bodies of `two`
