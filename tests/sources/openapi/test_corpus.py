"""The real corpus through `read_openapi`: GitHub, Stripe, Kubernetes and every OpenAPI example.

Each big document is read once per module (module-scoped fixtures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.ir import HttpBinding, Source, Tool
from compiler.sources.openapi import read_openapi
from tests.support.openapi import (
    CORPUS,
    compile_file,
    count_operations,
    dangling_refs,
    dialect_leftovers,
    load,
    skipped_tool_ids,
)

pytestmark = pytest.mark.slow

Compiled = tuple[Any, Source, list[Tool], Diagnostics]


def _compile(name: str) -> Compiled:
    path = CORPUS / "openapi" / f"{name}.json"
    diagnostics = Diagnostics()
    document = load(path, diagnostics)
    source, tools = read_openapi(document, source_id=name, location=path.name,
                                 diagnostics=diagnostics)
    return document, source, tools, diagnostics


@pytest.fixture(scope="module")
def github() -> Compiled:
    return _compile("github")


@pytest.fixture(scope="module")
def stripe() -> Compiled:
    return _compile("stripe")


@pytest.fixture(scope="module")
def kubernetes() -> Compiled:
    return _compile("kubernetes")


@pytest.fixture(params=["github", "stripe", "kubernetes"])
def big(request: pytest.FixtureRequest) -> Compiled:
    result: Compiled = request.getfixturevalue(request.param)
    return result


@pytest.mark.parametrize(("name", "expected"), [("github", 1223), ("stripe", 417), ("kubernetes", 1123)])
def test_every_operation_becomes_a_tool(name: str, expected: int, request: pytest.FixtureRequest) -> None:
    document, _, tools, diagnostics = request.getfixturevalue(name)
    assert count_operations(document) == expected
    assert len(tools) == expected
    assert len({tool.id for tool in tools}) == expected
    assert not skipped_tool_ids(diagnostics)
    assert diagnostics.count(Severity.ERROR) == 0, [d.render() for d in diagnostics if d.severity is Severity.ERROR]
    assert all(tool.id == f"openapi:{name}:{tool.name}" and tool.source == name for tool in tools)


def test_input_schemas_are_objects_and_every_ref_resolves(big: Compiled) -> None:
    _, source, tools, _ = big
    assert all(tool.input_schema["type"] == "object" for tool in tools)
    assert dangling_refs(source, tools) == []
    assert dialect_leftovers(source, tools) == []


def test_schemas_are_valid_json_schema_2020_12(big: Compiled) -> None:
    # Metaschema validation is slow (a minute for all of GitHub), so a fixed sample: every 40th definition and
    # every 50th tool. All of them pass; run with a step of 1 to check everything.
    _, source, tools, _ = big
    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    sample = tools[::50]
    schemas = [*list(source.definitions.values())[::40], *(t.input_schema for t in sample),
               *(t.output_schema for t in sample if t.output_schema is not None)]
    invalid = [error.message for schema in schemas for error in meta.iter_errors(schema)]
    assert invalid == []


def test_bindings_name_every_property(big: Compiled) -> None:
    _, _, tools, _ = big
    for tool in tools:
        assert isinstance(tool.binding, HttpBinding)
        names = [argument.name for argument in tool.binding.arguments]
        assert len(names) == len(set(names)), tool.id
        assert set(tool.input_schema["properties"]) == set(names), tool.id
        assert set(tool.input_schema.get("required", ())) <= set(names)
        path_names = {a.wire_name for a in tool.binding.arguments if a.location == "path"}
        assert all(f"{{{name}}}" in tool.binding.path for name in path_names), tool.id


def test_shared_schemas_are_definitions_not_copies(github: Compiled, stripe: Compiled, kubernetes: Compiled) -> None:
    for document, source, tools, _ in (github, stripe, kubernetes):
        shared = document.get("definitions") or document["components"]["schemas"]
        assert set(shared) <= set(source.definitions)
        # No per-tool closures: definitions once, tools refer to them. Kubernetes repeats its long shared
        # parameter descriptions in each flat input schema (one shared object in memory), hence the 3x bound;
        # a closure per tool would be orders of magnitude more.
        size = sum(len(orjson.dumps([t.input_schema, t.output_schema])) for t in tools)
        size += len(orjson.dumps(dict(source.definitions)))
        assert size < 3 * len(orjson.dumps(document))


def test_github_details(github: Compiled) -> None:
    _, source, tools, diagnostics = github
    assert source.info["openapi"] == "3.0.3"
    assert source.info["servers"] == ["https://api.github.com"]
    by_name = {tool.name: tool for tool in tools}
    tool = by_name["repos/get"]
    assert isinstance(tool.binding, HttpBinding)
    assert (tool.binding.method, tool.binding.path, tool.binding.base_url) == ("GET", "/repos/{owner}/{repo}",
                                                                               "https://api.github.com")
    assert tool.input_schema["required"] == ["owner", "repo"]
    assert tool.output_schema == {"$ref": "#/$defs/full-repository"}
    webhooks = [d for d in diagnostics if d.code == "TC308"]
    assert len(webhooks) == 1 and "webhook" in webhooks[0].message


def test_stripe_form_bodies(stripe: Compiled) -> None:
    _, source, tools, _ = stripe
    posts = [t for t in tools if isinstance(t.binding, HttpBinding) and t.binding.method == "POST"]
    assert posts
    content_types = {t.binding.body_content_type for t in posts if isinstance(t.binding, HttpBinding)}
    assert "application/x-www-form-urlencoded" in content_types
    deep = [a for t in posts if isinstance(t.binding, HttpBinding) for a in t.binding.arguments
            if a.location == "body" and a.style == "deepObject"]
    assert deep, "form encodings carry their style into the binding"
    assert source.info["openapi"] == "3.0.0"


def test_kubernetes_swagger(kubernetes: Compiled) -> None:
    _, source, tools, diagnostics = kubernetes
    assert source.info["swagger"] == "2.0"
    assert "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps" in source.definitions
    renamed = [d for d in diagnostics if d.code == "TC305"]
    assert renamed and all(d.severity is Severity.INFO for d in renamed)
    create = next(t for t in tools if t.name == "createCoreV1Namespace")
    assert isinstance(create.binding, HttpBinding)
    assert create.binding.body_content_type == "application/json"
    assert {"metadata", "spec"} <= set(create.input_schema["properties"])


def test_output_is_deterministic(stripe: Compiled) -> None:
    _, source, tools, _ = stripe
    _, again_source, again_tools, _ = _compile("stripe")
    assert again_tools == tools
    assert orjson.dumps(dict(again_source.definitions)) == orjson.dumps(dict(source.definitions))


# -- the OpenAPI examples ---------------------------------------------------------------------------------------

EXAMPLES = CORPUS / "oai-examples"
SEPARATE = {"swagger.json", "swagger.yaml"}


def _example_documents() -> list[Path]:
    found = []
    for version in ("v2.0", "v3.0", "v3.1"):
        for path in sorted((EXAMPLES / version).rglob("*")):
            if path.suffix not in (".json", ".yaml"):
                continue
            if "petstore-separate" in path.parts and path.name not in SEPARATE:
                continue  # the pieces of petstore-separate are reached through its swagger file
            found.append(path)
    return found


@pytest.mark.parametrize("path", _example_documents(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_compiles(path: Path) -> None:
    root = path.parent.parent if "petstore-separate" in path.parts else None
    source, tools, diagnostics = compile_file(path, root=root)
    document = load(path, Diagnostics(), root)
    assert diagnostics.count(Severity.ERROR) == 0, [d.render() for d in diagnostics]
    assert len(tools) + len(skipped_tool_ids(diagnostics)) == count_operations(document)
    assert not skipped_tool_ids(diagnostics), [d.render() for d in diagnostics]
    assert all(tool.input_schema["type"] == "object" for tool in tools)
    assert dangling_refs(source, tools) == []
    assert dialect_leftovers(source, tools) == []


def test_examples_were_found() -> None:
    names = {str(p.relative_to(EXAMPLES)) for p in _example_documents()}
    assert len(names) == 32
    assert "v2.0/yaml/petstore-separate/spec/swagger.yaml" in names
    assert "v3.1/webhook-example.json" in names


def test_external_files_become_definitions() -> None:
    base = EXAMPLES / "v2.0" / "yaml" / "petstore-separate"
    source, tools, diagnostics = compile_file(base / "spec" / "swagger.yaml", root=base)
    assert [t.name for t in tools] == ["findPets", "addPet", "find pet by id", "deletePet"]
    assert set(source.definitions) == {"Pet", "NewPet"}  # Error only in `default`, unused next to a 200
    find = tools[0]
    assert find.output_schema == {"type": "array", "items": {"$ref": "#/$defs/Pet"}}
    assert find.input_schema["properties"]["limit"] == {
        "type": "integer", "format": "int32", "description": "maximum number of results to return"}
    assert not [d for d in diagnostics if d.severity is not Severity.INFO]
