"""Invalid and hostile OpenAPI input: always a located diagnostic with a TC3xx (or the resolver's TC2xx) code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.infra.loading import load_document
from compiler.sources.openapi import read_openapi
from tests.support.openapi import (
    CORPUS,
    FIXTURES,
    compile_file,
    count_operations,
    dangling_refs,
    skipped_tool_ids,
)

HOSTILE = FIXTURES / "hostile"


def _read(document: Any) -> tuple[list[str], Diagnostics]:
    diagnostics = Diagnostics()
    _, tools = read_openapi(document, source_id="h", location="h.yaml", diagnostics=diagnostics)
    return [tool.name for tool in tools], diagnostics


def _codes(diagnostics: Diagnostics, tool: str) -> list[str]:
    return [d.code for d in diagnostics if d.tool == f"openapi:h:{tool}"]


def test_missing_and_duplicate_operation_ids() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "operation-ids.yaml", source_id="h")
    assert [t.name for t in tools] == ["get_pets_petId", "removePet", "removePet_3", "removePet_4", "removePet_2",
                                       "head_other"]
    missing = [d for d in diagnostics if d.code == "TC303"]
    assert [(d.severity, d.tool, d.pointer) for d in missing] == [
        (Severity.INFO, "openapi:h:get_pets_petId", "/paths/~1pets~1{petId}/get"),
        (Severity.INFO, "openapi:h:head_other", "/paths/~1other/head"),
    ]
    duplicates = [d for d in diagnostics if d.code == "TC304"]
    assert [(d.severity, d.tool, d.pointer) for d in duplicates] == [
        (Severity.WARNING, "openapi:h:removePet_3", "/paths/~1animals~1{id}/delete"),
        (Severity.WARNING, "openapi:h:removePet_4", "/paths/~1animals~1{id}/put"),
    ]
    assert all(d.source == "operation-ids.yaml" for d in diagnostics)


def test_bad_references_skip_only_their_operation() -> None:
    source, tools, diagnostics = compile_file(HOSTILE / "bad-refs.yaml", source_id="h")
    assert sorted(t.name for t in tools) == ["fine", "usesBrokenDefinition"]
    assert skipped_tool_ids(diagnostics) == {f"openapi:h:{name}" for name in (
        "badParameterRef", "badSchemaRef", "badResponseRef", "parameterWithoutName", "parameterNotObject",
        "badSchemaType", "networkRef")}
    by_pointer = {d.pointer: d for d in diagnostics if d.code != "TC302"}
    assert by_pointer["/paths/~1a/get/parameters/0/$ref"].code == "TC307"
    assert by_pointer["/paths/~1b/post/requestBody/content/application~1json/schema/$ref"].code == "TC307"
    assert by_pointer["/paths/~1c/get/responses/200/$ref"].code == "TC307"
    assert by_pointer["/paths/~1f/get/parameters/0"].code == "TC306"
    assert by_pointer["/paths/~1g/get/parameters/0"].code == "TC306"
    assert by_pointer["/paths/~1h/get/parameters/0/schema"].code == "TC306"
    # The resolver refused the network ref while loading, never fetched it, and left a described `{}` in its
    # place: a warning there, and the operation whose body needs it is skipped, not compiled with a body any value
    # fits (the other operations compile).
    network = [d for d in diagnostics if d.code == "TC201"]
    assert network and network[0].severity is Severity.WARNING
    (skipped,) = [d for d in diagnostics if d.code == "TC302" and d.tool == "openapi:h:networkRef"]
    assert "its input needs $ref 'http://127.0.0.1:9/evil.json#/Pet'" in skipped.message
    # A broken ref inside a shared schema is reported once, at the schema; tools using it keep compiling.
    shared = by_pointer["/components/schemas/Broken/properties/ghost/$ref"]
    assert (shared.code, shared.tool) == ("TC307", "")
    assert source.definitions["Broken"] == {"type": "object", "properties": {"ghost": {}}}
    assert dangling_refs(source, tools) == []


def test_network_ref_without_resolver_is_reported_not_fetched() -> None:
    document = load_document(HOSTILE / "network-ref.yaml")
    names, diagnostics = _read(document)
    assert names == ["listPets"]
    reported = [d for d in diagnostics if d.code == "TC307"]
    assert [d.pointer for d in reported] == [
        "/components/schemas/Remote/$ref",
        "/paths/~1pets/post/requestBody/content/application~1json/schema/properties/pet/$ref",
    ]
    assert all("never fetches" in d.message for d in reported)
    assert _codes(diagnostics, "createPet") == ["TC307", "TC302"]


def test_network_ref_with_resolver_is_refused_at_load() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "network-ref.yaml", source_id="h")
    assert {d.code for d in diagnostics if d.severity is Severity.ERROR} == set()
    assert [d.pointer for d in diagnostics if d.code == "TC201"] == [
        "/components/schemas/Remote/$ref",
        "/paths/~1pets/post/requestBody/content/application~1json/schema/properties/pet/$ref",
    ]
    # Never fetched; what the lost ref costs is per tool: createPet's body needs it (skipped, not compiled with
    # a body any value fits), listPets only answers with it (kept, without an output schema).
    assert [t.name for t in tools] == ["listPets"] and tools[0].output_schema is None
    assert {(d.code, d.tool) for d in diagnostics if d.code in ("TC302", "TC318")} == {
        ("TC302", "openapi:h:createPet"), ("TC318", "openapi:h:listPets")}


def test_file_ref_outside_the_root_is_refused() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "external-outside-root.yaml", root=HOSTILE)
    assert [(d.code, d.severity) for d in diagnostics if d.code == "TC202"] == [("TC202", Severity.WARNING)]
    assert [(t.name, t.output_schema) for t in tools] == [("readSecrets", None)], "never read, only its output lost"
    names, without = _read(load_document(HOSTILE / "external-outside-root.yaml"))
    assert names == []
    assert [d.code for d in without] == ["TC307", "TC302"]


def test_path_items_and_operations_that_are_not_objects() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "path-items.yaml", source_id="h")
    assert [t.name for t in tools] == ["fine"]
    located = [(d.code, d.severity, d.tool, d.pointer) for d in diagnostics]
    assert located == [
        ("TC306", Severity.WARNING, "", "/paths/~1broken"),
        ("TC306", Severity.WARNING, "", "/paths/~1list"),
        ("TC306", Severity.WARNING, "openapi:h:get_op", "/paths/~1op/get"),
        ("TC302", Severity.WARNING, "openapi:h:get_op", "/paths/~1op/get"),
        ("TC306", Severity.WARNING, "openapi:h:badParameters", "/paths/~1params/parameters"),
        ("TC302", Severity.WARNING, "openapi:h:badParameters", "/paths/~1params/get"),
    ]


def test_missing_paths_and_unsupported_versions() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "no-paths.yaml")
    assert tools == []
    assert [(d.code, d.severity, d.pointer) for d in diagnostics] == [("TC301", Severity.ERROR, "/paths")]

    _, tools, diagnostics = compile_file(HOSTILE / "version-4.yaml")
    assert tools == []
    assert [(d.code, d.severity, d.pointer) for d in diagnostics] == [("TC301", Severity.ERROR, "/openapi")]
    assert "4.0.0" in diagnostics.items[0].message


@pytest.mark.parametrize("document", [
    [], "openapi: 3.0.0", None, {"info": {}}, {"swagger": "1.2", "paths": {}}, {"openapi": 3.0, "paths": {}},
    {"openapi": "3.0.0", "paths": []},
])
def test_not_openapi_documents(document: Any) -> None:
    names, diagnostics = _read(document)
    assert names == []
    assert [(d.code, d.severity) for d in diagnostics] == [("TC301", Severity.ERROR)]


def test_collision_renaming_never_reuses_a_name() -> None:
    _, tools, diagnostics = compile_file(HOSTILE / "collisions.yaml")
    collide, whole = tools
    assert list(collide.input_schema["properties"]) == [
        "id_path_2", "id_query", "id_header", "body", "id", "id_path"]
    assert "required" not in whole.input_schema
    assert list(whole.input_schema["properties"]) == ["body_query", "body"]
    assert [d.message for d in diagnostics if d.code == "TC305"] == [
        "path parameter 'id' is the argument 'id_path_2': its name is taken",
        "query parameter 'id' is the argument 'id_query': its name is taken",
        "header parameter 'id' is the argument 'id_header': its name is taken",
        "query parameter 'body' is the argument 'body_query': its name is taken",
    ]


def test_recursive_and_deep_schemas_do_not_crash() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    document = {
        "openapi": "3.0.0",
        "components": {"schemas": {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"},
                                   "Self": {"properties": {"next": {"$ref": "#/components/schemas/Self/properties/next"}}}}},
        "paths": {
            "/a": {"get": {"operationId": "loop", "responses": {"200": {"description": "",
                   "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}}}},
            "/b": {"post": {"operationId": "deep", "requestBody": {"content": {"application/json": {"schema": deep}}},
                            "responses": {}}},
            "/c": {"get": {"operationId": "selfPointer", "parameters": [{"$ref": "#/paths/~1c/get/parameters/0"}],
                           "responses": {}}},
        },
    }
    document["components"]["schemas"]["Deep"] = deep
    names, diagnostics = _read(document)
    assert names == ["loop"]
    too_deep = [d for d in diagnostics if d.pointer == "/components/schemas/Deep"]
    assert [(d.code, d.severity) for d in too_deep] == [("TC306", Severity.WARNING)]
    assert _codes(diagnostics, "deep") == ["TC302"]
    assert _codes(diagnostics, "selfPointer") == ["TC307", "TC302"]


OAS_SCHEMA_TESTS = sorted((CORPUS / "oai-examples").glob("oas-schema-tests-*/*/*.yaml"))


@pytest.mark.parametrize("path", OAS_SCHEMA_TESTS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_schema_test_documents_never_crash(path: Path) -> None:
    diagnostics = Diagnostics()
    document = load_document(path)
    _, tools = read_openapi(document, source_id="t", location=path.name, diagnostics=diagnostics)
    if isinstance(document, dict) and isinstance(document.get("paths"), dict):
        assert len(tools) + len(skipped_tool_ids(diagnostics)) == count_operations(document) or \
            document.get("openapi", "").startswith("3.2")
    assert all(d.code.startswith("TC3") and d.source == path.name for d in diagnostics)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["$ref", "type", "nullable", "items", "properties", "parameters", "in", "name", "schema",
                         "requestBody", "content", "responses", "allOf", "x-a", "get", "post", "operationId",
                         "application/json", "200", "default", "#/components/schemas/A", "A"]) | st.text(max_size=4),
        children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths=_json, components=_json, version=st.sampled_from(["2.0", "3.0.3", "3.1.0"]))
def test_arbitrary_documents_never_raise(paths: Any, components: Any, version: str) -> None:
    key = "swagger" if version == "2.0" else "openapi"
    document = {key: version, "paths": paths, "components": {"schemas": components}, "definitions": components}
    names, diagnostics = _read(document)
    assert all(d.code.startswith("TC3") for d in diagnostics)
    if isinstance(paths, dict):
        assert len(names) + len({d.tool for d in diagnostics if d.code == "TC302"}) == count_operations(document)
