"""Shared definitions are bundled once per source (`codegen.stubs.bundling`), and the combined table the models are
generated from is the same as when every tool carried its whole bundle (the way it was built before)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.build import Build
from compiler.codegen.stubs.lenient import SplitDirections
from compiler.codegen.stubs.models import ModelRequest, combine
from compiler.codegen.stubs.patterns import drop_bad_patterns
from compiler.codegen.stubs.stub_packages import SourcePackage, package_names
from compiler.config import Config
from compiler.pipeline import adhoc_inputs, compile_project
from tests.support.synthetic import synthetic_openapi


def _build(tmp_path: Path, document: dict[str, Any]) -> Build:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    build = compile_project(Config(root=tmp_path, codegen=False), adhoc_inputs([path], tmp_path), targets=())
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics]
    return build


def _package(build: Build) -> SourcePackage:
    source = build.catalog.sources[0]
    tools = [tool for tool in build.catalog.tools if tool.source == source.id]
    return SourcePackage(build, source, tools, package_names(build.catalog.sources)[source.id])


def _whole_bundles(package: SourcePackage) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The reference: each tool model's whole bundle, rewritten for its direction (`codegen.stubs.lenient`), patterns
    dropped per tool, then combined."""
    requests = []
    patterns = []
    stubs = package.stubs()
    directions = SplitDirections(package.source.definitions, (s.tool.output_schema for s in stubs if s.output_key))
    for stub in stubs:
        schemas = [(stub.input_key, stub.tool.input_schema, "/inputSchema", directions.input)]
        if stub.output_key and stub.tool.output_schema is not None:
            schemas.append((stub.output_key, stub.tool.output_schema, "/outputSchema", directions.output))
        for key, schema, pointer, direction in schemas:
            bundled = package.build.resolver.bundle(dict(schema), package.build.catalog.definitions_for(stub.tool))
            cleaned, dropped = drop_bad_patterns(direction(bundled), pointer)
            patterns += [(bad.pointer, bad.pattern) for bad in dropped]
            requests.append(ModelRequest(key, cleaned, stub.tool.id, pointer))
    return combine(requests).schema, patterns


def _document_with_edge_cases() -> dict[str, Any]:
    """Shared definitions that cannot simply be shared: one points into another definition (the bundler lifts
    that target under a made-up name per tool), one is named like a tool model, one has a pattern no engine
    compiles, one is recursive."""
    schemas = {
        "Inner": {"type": "object", "properties": {"deep": {"type": "object", "properties": {
            "x": {"type": "integer"}}}}},
        "Pointing": {"type": "object", "properties": {
            "part": {"$ref": "#/components/schemas/Inner/properties/deep"}, "n": {"type": "integer"}}},
        "GetThingInput": {"type": "object", "properties": {"clash": {"type": "boolean"}}},
        "Bad": {"type": "object", "properties": {"code": {"type": "string", "pattern": "(unclosed"}}},
        "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {
            "$ref": "#/components/schemas/Node"}}, "bad": {"$ref": "#/components/schemas/Bad"}}},
    }

    def body(name: str) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": {
            "$ref": f"#/components/schemas/{name}"}}}}

    paths = {f"/things/{name.lower()}": {"post": {"operationId": f"post{name}", "requestBody": body(name),
                                                  "responses": {"200": {"description": "ok", "content": {
                                                      "application/json": {"schema": {
                                                          "$ref": "#/components/schemas/Node"}}}}}}}
             for name in ("Pointing", "Inner", "GetThingInput", "Node", "Bad")}
    paths["/thing"] = {"get": {"operationId": "getThing", "responses": {"200": {"description": "ok"}}}}
    return {"openapi": "3.0.3", "info": {"title": "edge", "version": "1"}, "paths": paths,
            "components": {"schemas": schemas}}


@pytest.mark.parametrize("document", [synthetic_openapi(60, oversize=True), _document_with_edge_cases()],
                         ids=["synthetic", "edge-cases"])
def test_shared_definitions_bundled_once_give_the_same_table(tmp_path: Path, document: dict[str, Any]) -> None:
    build = _build(tmp_path, document)
    package = _package(build)
    before = len(build.diagnostics)
    requests, combined = package.combined(package.stubs())
    expected, patterns = _whole_bundles(package)
    assert combined.schema == expected
    assert json.dumps(combined.schema) == json.dumps(expected)  # the same order too: the same generated bytes
    # a bad pattern in a shared definition is reported once, not once per tool that reaches it
    reported = [(d.pointer, d.code) for d in build.diagnostics.items[before:] if d.code == "TC611"]
    assert {pointer for pointer, _ in reported} <= {pointer for pointer, _ in patterns}
    # (Node, an output, reaches Bad: the pattern is in the inputs' strict copy only, `BadInput`)
    in_shared = [pointer for pointer, _ in reported if "/$defs/Bad/" in pointer or "/$defs/BadInput/" in pointer]
    assert len(in_shared) == (1 if "Bad" in build.catalog.sources[0].definitions else 0)
    assert len(in_shared) <= len([pointer for pointer, _ in patterns if "/$defs/Bad" in pointer])
    # each shared definition is introduced once; where none depends on a tool's own ones (the synthetic document),
    # no request carries a copy of one
    introduced = [name for request in requests for name in request.introduces]
    assert len(introduced) == len(set(introduced))
    if "Pointing" not in build.catalog.sources[0].definitions:
        assert introduced and set(introduced) <= set(build.catalog.sources[0].definitions)
        assert not any(request.schema.get("$defs") for request in requests)


def test_a_source_without_shared_definitions_is_unchanged(tmp_path: Path) -> None:
    document = {"openapi": "3.0.3", "info": {"title": "plain", "version": "1"}, "paths": {"/a": {"get": {
        "operationId": "getA", "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}}}
    package = _package(_build(tmp_path, document))
    requests, combined = package.combined(package.stubs())
    assert [r.introduces for r in requests] == [()]
    assert combined.schema == _whole_bundles(package)[0]
