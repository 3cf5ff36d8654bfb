"""Documents as their authors write them: operations, parameter lists, responses and request bodies given as
`$ref`s to files in subfolders (which the specification does not allow everywhere, and every common bundler
follows), and the same layout with references that cannot be followed (issue 21)."""

from __future__ import annotations

from typing import Any

from compiler.infra.diagnostics import Severity
from compiler.ir import HttpBinding, Tool
from tests.support.openapi import FIXTURES, compile_file, dangling_refs

MULTIFILE = FIXTURES / "multifile" / "openapi.yaml"
HOSTILE = FIXTURES / "multifile-hostile" / "api" / "openapi.yaml"


def _compiled(path: Any) -> tuple[dict[str, Tool], Any, Any]:
    source, tools, diagnostics = compile_file(path, source_id="multifile")
    assert dangling_refs(source, tools) == []
    return {tool.name: tool for tool in tools}, source, diagnostics


def _wire(tool: Tool) -> list[tuple[str, str, bool]]:
    assert isinstance(tool.binding, HttpBinding)
    return [(argument.name, argument.location, argument.required) for argument in tool.binding.arguments]


def test_every_operation_by_ref_is_a_tool_with_its_names_parameters_and_responses() -> None:
    tools, source, diagnostics = _compiled(MULTIFILE)
    assert [d.render() for d in diagnostics if d.severity >= Severity.WARNING] == []
    assert sorted(tools) == ["auth_revoke", "createPet", "deletePet", "getPet", "listPets", "searchPets"]

    revoke = tools["auth_revoke"]  # `get: {$ref: resources/auth/auth_revoke_get.yml}`
    assert revoke.description == "Revokes a token.\n\nRevokes the caller's token; every later call with it fails."
    assert revoke.extra["tags"] == ["auth"]
    assert revoke.input_schema["properties"] == {
        "token": {"type": "string", "description": "The token to revoke."},  # a parameter file two folders up
        "test": {"type": "boolean", "description": "Only pretend to revoke."},
    }
    assert revoke.input_schema["required"] == ["token"]
    assert _wire(revoke) == [("token", "query", True), ("test", "query", False)]
    assert revoke.output_schema == {"type": "object", "properties": {"ok": {"type": "boolean"},
                                                                     "revoked": {"type": "boolean"}},
                                    "required": ["ok"]}

    listing = tools["listPets"]  # path item by `$ref`; `parameters: {$ref: ../parameters/paging.yaml}`, a list
    assert _wire(listing) == [("limit", "query", False), ("cursor", "query", False)]
    assert listing.input_schema["properties"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 100,
                                                           "description": "At most this many items."}
    assert listing.output_schema == {"type": "array", "items": {"$ref": "#/$defs/pet"}}

    create = tools["createPet"]  # requestBody, its `content` map, the `responses` map and a media type by `$ref`
    assert create.input_schema["properties"] == {"name": {"type": "string", "description": "The pet's name."},
                                                 "tag": {"type": "string"}}
    assert create.input_schema["required"] == ["name"]
    assert _wire(create) == [("name", "body", True), ("tag", "body", False)]
    assert create.output_schema == {"$ref": "#/$defs/pet"}

    get = tools["getPet"]  # the path item's `parameters` list by `$ref`, merged with the operation's own
    assert _wire(get) == [("petId", "path", True), ("fields", "query", False)]
    assert get.input_schema["properties"]["petId"] == {"type": "integer", "format": "int64",
                                                       "description": "The pet's id."}
    assert get.output_schema == {"$ref": "#/$defs/pet"}
    assert _wire(tools["deletePet"]) == [("petId", "path", True)]

    search = tools["searchPets"]  # a body schema file whose own `$ref` is relative to its folder
    assert _wire(search) == [("query", "body", True), ("limit", "body", False)]
    assert search.output_schema is not None

    pet = source.definitions["pet"]  # `$ref`s inside the files resolve relative to THEIR folder
    assert pet["required"] == ["id", "name"]
    assert pet["properties"]["owner"] == {"$ref": "#/$defs/owner"}
    assert source.definitions["owner"]["properties"] == {"name": {"type": "string"}, "email": {"type": "string"}}


def test_operations_whose_refs_cannot_be_followed_are_located_diagnostics_never_empty_tools() -> None:
    tools, _, diagnostics = _compiled(HOSTILE)
    assert list(tools) == ["fine"]
    assert _wire(tools["fine"]) == [("q", "query", True)]

    located = {(d.code, d.source, d.pointer) for d in diagnostics}
    # outside the root folder: refused by the resolver, never read
    assert ("TC202", "openapi.yaml", "/paths/~1outside/get/$ref") in located
    assert ("TC307", "openapi.yaml", "/paths/~1outside/get") in located
    # a file that does not exist, for the operation and for a parameter list inside an operation file
    assert ("TC204", "openapi.yaml", "/paths/~1missing/get/$ref") in located
    assert ("TC204", "ops/missing_params.yaml", "/parameters/$ref") in located
    # a network reference: never fetched
    assert ("TC201", "openapi.yaml", "/paths/~1network/get/$ref") in located
    # a cycle of operation files: reported where the operation is
    [loop] = [d for d in diagnostics if d.code == "TC307" and d.pointer == "/paths/~1loop/get/$ref"]
    assert "circular" in loop.message and "ops_loop_a.yaml" in loop.message

    skipped = {d.tool for d in diagnostics if d.code == "TC302"}
    assert skipped == {"openapi:multifile:get_outside", "openapi:multifile:get_loop", "openapi:multifile:get_network",
                       "openapi:multifile:get_missing", "openapi:multifile:missingParams"}
    assert not any("secret" in d.message for d in diagnostics)


def test_a_swagger_path_item_by_ref_and_its_responses_by_ref() -> None:
    tools, _, diagnostics = _compiled(FIXTURES / "multifile-swagger" / "api.yaml")
    assert [d.render() for d in diagnostics if d.severity >= Severity.WARNING] == []
    assert _wire(tools["listPets"]) == [("limit", "query", False)]
    assert tools["listPets"].output_schema == {"type": "array", "items": {"type": "string"}}
