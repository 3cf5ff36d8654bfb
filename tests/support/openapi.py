"""Shared checks for the OpenAPI source tests: load a document, count its operations independently, walk schemas."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Source, Tool
from compiler.refs import RefResolver, unescape_token
from compiler.sources.openapi import read_openapi
from tests.support.paths import ROOT

FIXTURES = ROOT / "fixtures" / "openapi"
CORPUS = ROOT / "fixtures" / "corpus"
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def load(path: Path, diagnostics: Diagnostics, root: Path | None = None) -> Any:
    return RefResolver(diagnostics).load_document(path, root=root, display=path.name)


def compile_file(path: Path, root: Path | None = None, **kwargs: Any) -> tuple[Source, list[Tool], Diagnostics]:
    diagnostics = Diagnostics()
    document = load(path, diagnostics, root)
    source, tools = read_openapi(document, source_id=kwargs.pop("source_id", path.stem), location=path.name,
                                 diagnostics=diagnostics, **kwargs)
    return source, tools, diagnostics


def count_operations(document: Mapping[str, Any]) -> int:
    """Operations counted without the reader's code: method keys of path items that are objects."""
    paths = document.get("paths") or {}
    return sum(1 for item in paths.values() if isinstance(item, dict) for key in item if key in METHODS)


def skipped_tool_ids(diagnostics: Diagnostics) -> set[str]:
    return {d.tool for d in diagnostics if d.code == "TC302"}


_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_SUBSCHEMA = {"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "items",
              "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}


def schema_nodes(schema: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object in `schema`, with its pointer; keywords only (property names are not keywords)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from schema_nodes(sub, f"{pointer}/{key}/{name}")
        elif key in _SUBSCHEMA:
            yield from schema_nodes(value, f"{pointer}/{key}")
        elif key in _LISTS and isinstance(value, list):
            for index, sub in enumerate(value):
                yield from schema_nodes(sub, f"{pointer}/{key}/{index}")


def all_schemas(source: Source, tools: list[Tool]) -> Iterator[tuple[str, Any]]:
    for name, definition in source.definitions.items():
        yield f"definitions/{name}", definition
    for tool in tools:
        yield f"{tool.id} input", tool.input_schema
        if tool.output_schema is not None:
            yield f"{tool.id} output", tool.output_schema


def dangling_refs(source: Source, tools: list[Tool]) -> list[str]:
    """Every `$ref` that does not name an entry of `source.definitions` as `#/$defs/<name>`."""
    bad = []
    for where, schema in all_schemas(source, tools):
        for pointer, node in schema_nodes(schema):
            ref = node.get("$ref")
            if ref is None:
                continue
            if not (isinstance(ref, str) and ref.startswith("#/$defs/")
                    and unescape_token(ref[len("#/$defs/"):]) in source.definitions):
                bad.append(f"{where}{pointer}: {ref!r}")
    return bad


def dialect_leftovers(source: Source, tools: list[Tool]) -> list[str]:
    """OpenAPI-only keywords that must not survive normalisation."""
    bad = []
    for where, schema in all_schemas(source, tools):
        for pointer, node in schema_nodes(schema):
            for key, value in node.items():
                if key in ("nullable", "example", "xml", "externalDocs") or key.startswith("x-") or (
                        key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool)) or (
                        key == "type" and value == "file"):
                    bad.append(f"{where}{pointer}/{key}")
    return bad
