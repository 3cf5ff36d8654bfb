"""The fuzz target and its input strategies, shared by tests/test_hostile_limits.py (a short deterministic
slice) and bench/fuzz_loader.py (the long run).

One input is a document's bytes and a file suffix. `run_one` sends it through everything that reads a
document before any output is made: the loader (`loading.parse_document`), kind detection, the OpenAPI reader
or the MCP recording reader, the shared resolver (`bundle` and `inline` of every tool's schemas) and the
catalog's JSON encoding. Every problem must come back as a diagnostic: any other exception (RecursionError,
TypeError from orjson, ValueError from int(), ...) is a crash, what `toolc` would have reported as TC999.

Inputs are seeded from the repository's fixtures (real OpenAPI documents and MCP listings) and mutated two ways:
bytes (hostile YAML/JSON fragments spliced in: aliases, tags, deep brackets, long numbers, invalid UTF-8,
truncation) and structure (a subtree of the parsed seed replaced by generated JSON, written back as JSON or
YAML, sometimes with anchors and aliases).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml
from hypothesis import strategies as st

from compiler.infra.detect import detect_kind
from compiler.infra.diagnostics import CompilerError, Diagnostics
from compiler.infra.loading import parse_document
from compiler.infra.serialize import canonical_json, catalog_to_json
from compiler.ir import Catalog
from compiler.pipeline import build_catalog
from compiler.refs import RefResolver
from compiler.sources.openapi import read_openapi
from compiler.sources.recording import read_recording
from tests.support.paths import ROOT

SEED_DIRS = ("fixtures/openapi", "fixtures/corpus/oai-examples", "fixtures/mcp", "fixtures/listings",
             "fixtures/refs/refparser", "fixtures/providers", "fixtures/invalid")
SEED_MAX_BYTES = 40_000

HOSTILE = [
    b"&a [x, x, x]", b"*a", b"<<: *a", b"!!binary aGVsbG8=", b"!!python/object:os.system {}", b"!!set {a}",
    b"!!timestamp 2001-12-14", b"!vault x", b"? [a, b]\n: c", b"[" * 300, b"{" * 70, b"]" * 300, b"9" * 5000,
    b"1e999", b".inf", b".nan", b"\xff\xfe", b"\xed\xa0\x80", b"\x00", b"---\n", b"...\n", b"%YAML 1.1\n",
    b'"$ref": "#/components/schemas/A"', b'{"$ref": "#"}', b"$ref: '#/x'", b"~", b"2024-01-01", b"0x1F", b"'",
    b'"', b"\t", b"\r\n", b"- ", b": ", b"#",
]


@functools.cache
def seeds() -> tuple[tuple[bytes, str], ...]:
    found: list[tuple[bytes, str]] = []
    for folder in SEED_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".json", ".yaml", ".yml") and path.is_file() and path.stat().st_size <= SEED_MAX_BYTES:
                found.append((path.read_bytes(), path.suffix))
    return tuple(found)


def run_one(data: bytes, suffix: str) -> set[str]:
    """The diagnostic codes one document gets. Raises only when something crashed."""
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    try:
        document = parse_document(data, source="fuzz", suffix=suffix)
    except CompilerError as exc:
        return {exc.diagnostic.code}
    kind = detect_kind(document)
    if kind == "openapi":
        read = read_openapi(document, source_id="fuzz", location="fuzz", diagnostics=diagnostics)
    elif kind == "mcp-recording":
        read = read_recording(document, source_id="fuzz", location="fuzz", diagnostics=diagnostics)
    else:
        return {"TC104"}
    catalog: Catalog = build_catalog([read], diagnostics)
    for tool in catalog.tools:
        definitions = catalog.definitions_for(tool)
        for schema in (tool.input_schema, tool.output_schema):
            if schema is not None:
                canonical_json(resolver.bundle(dict(schema), definitions, tool=tool.id))
                canonical_json(resolver.inline(dict(schema), definitions, tool=tool.id))
    canonical_json(catalog_to_json(catalog))
    return diagnostics.codes()


@st.composite
def byte_mutants(draw: st.DrawFn) -> tuple[bytes, str]:
    data, suffix = draw(st.sampled_from(seeds()))
    buffer = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(buffer)))
        action = draw(st.sampled_from(("insert", "replace", "delete", "truncate", "repeat")))
        if action == "insert":
            buffer[at:at] = draw(st.sampled_from(HOSTILE) | st.binary(max_size=12))
        elif action == "replace":
            buffer[at:at + draw(st.integers(1, 16))] = draw(st.sampled_from(HOSTILE))
        elif action == "delete":
            del buffer[at:at + draw(st.integers(1, 64))]
        elif action == "truncate":
            del buffer[at:]
        else:
            buffer[at:at] = bytes(buffer[at:at + draw(st.integers(1, 32))]) * draw(st.integers(2, 50))
    return bytes(buffer), draw(st.sampled_from((suffix, suffix, ".json", ".yaml", "")))


_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) |
            st.text(max_size=20) | st.sampled_from(["#/components/schemas/A", "#/$defs/x", "#", "object",
                                                    "array", "string", "(unclosed[", "^a$"]))
_KEYS = st.sampled_from(["type", "properties", "items", "$ref", "allOf", "anyOf", "oneOf", "required",
                         "enum", "pattern", "schema", "parameters", "paths", "components", "schemas",
                         "additionalProperties", "name", "in", "tools", "inputSchema"]) | st.text(max_size=8)
JSON_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) |
                           st.dictionaries(_KEYS, inner, max_size=4), max_leaves=30)


def _deep(depth: int) -> Any:
    node: Any = {"type": "string"}
    for level in range(depth):
        node = {"type": "array", "items": node} if level % 2 else {"allOf": [node]}
    return node


def _paths(node: Any, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) of every value in `node`, breadth first, at most `limit`."""
    found: list[tuple[Any, Any]] = []
    queue = [node]
    while queue and len(found) < limit:
        current = queue.pop(0)
        items = current.items() if isinstance(current, dict) else enumerate(current)
        for key, value in items:
            found.append((current, key))
            if isinstance(value, dict | list):
                queue.append(value)
    return found


@st.composite
def tree_mutants(draw: st.DrawFn) -> tuple[bytes, str]:
    data, suffix = draw(st.sampled_from(seeds()))
    try:
        document = parse_document(data, source="seed", suffix=suffix)
    except CompilerError:
        document = {}
    if not isinstance(document, dict | list) or not document:
        document = {"openapi": "3.0.0", "paths": {}}
    if detect_kind(document) is None:  # a bare JSON Schema (the $ref fixtures): the body of one operation
        document = {"openapi": "3.1.0", "info": {"title": "fuzz", "version": "1"}, "paths": {"/p": {"post": {
            "operationId": "op", "requestBody": {"content": {"application/json": {"schema": document}}},
            "responses": {"200": {"description": "ok"}}}}}}
    places = _paths(document)
    for _ in range(draw(st.integers(1, 3))):
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        replacement = draw(JSON_VALUES | st.integers(0, 120).map(_deep) | st.just(2**64) | st.just(10**400))
        container[key] = replacement
    if draw(st.booleans()):
        try:
            return json.dumps(document, allow_nan=False).encode(), ".json"
        except (ValueError, RecursionError):
            return b"{}", ".json"
    anchors = draw(st.booleans())
    try:  # PyYAML writes shared subtrees as anchors and aliases; copying them keeps it from doing so
        text = yaml.safe_dump(document if anchors else json.loads(json.dumps(document)), sort_keys=False)
    except (ValueError, RecursionError, yaml.YAMLError):
        return b"{}", ".yaml"
    return text.encode(), ".yaml"


DOCUMENTS = byte_mutants() | tree_mutants()
