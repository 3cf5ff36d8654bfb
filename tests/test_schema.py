"""`compiler.schema`, the one JSON-Schema vocabulary: its tables and helpers, every stage agreeing on where the
subschemas are, and the inliner checked against jsonref (an independent implementation) on acyclic documents."""

from __future__ import annotations

from typing import Any

import jsonref
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.codegen.stubs.models import _walk as codegen_walk
from compiler.infra.diagnostics import Diagnostics
from compiler.providers.validate import iter_nodes
from compiler.refs import RefResolver
from compiler.schema import (
    DEFINITIONS,
    DYNAMIC,
    ITEMS,
    KEYWORDS,
    SCHEMA,
    SCHEMA_LIST,
    SCHEMA_MAP,
    IdentityMemo,
    map_subschemas,
    merge_all_of,
    subschemas,
)
from compiler.sources.openapi.schema_dialect import SchemaNormalizer


def test_the_vocabulary_knows_every_applicator() -> None:
    for key in ("dependencies", "dependentSchemas", "properties", "patternProperties"):
        assert KEYWORDS[key] == SCHEMA_MAP
    for key in ("contentSchema", "unevaluatedItems", "unevaluatedProperties", "propertyNames", "if", "then", "else",
                "not", "contains", "additionalProperties", "additionalItems"):
        assert KEYWORDS[key] == SCHEMA
    for key in ("prefixItems", "allOf", "anyOf", "oneOf"):
        assert KEYWORDS[key] == SCHEMA_LIST
    assert (KEYWORDS["items"], KEYWORDS["$defs"], KEYWORDS["$dynamicRef"]) == (ITEMS, DEFINITIONS, DYNAMIC)


def test_subschemas_and_map_subschemas_skip_data() -> None:
    node = {"properties": {"a": {"type": "string"}}, "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
            "items": [{"type": "integer"}], "contentSchema": {"type": "object"}, "enum": [{"$ref": "#/x"}],
            "$dynamicRef": "#meta"}
    steps = [step for step, _ in subschemas(node)]
    assert steps == [("properties", "a"), ("dependencies", "c"), ("items", 0), ("contentSchema", None)]
    marked = map_subschemas(node, lambda sub, step: {"at": list(step)})
    assert marked["dependencies"] == {"a": ["b"], "c": {"at": ["dependencies", "c"]}}
    assert marked["items"] == [{"at": ["items", 0]}] and marked["contentSchema"] == {"at": ["contentSchema", None]}
    assert marked["enum"] is node["enum"] and marked["$dynamicRef"] == "#meta"


def test_merge_all_of() -> None:
    node = {"description": "own", "properties": {"a": {"type": "string"}}, "required": ["a"],
            "allOf": [{"$ref": "#/$defs/B"}, {"properties": {"a": {"type": "integer"}, "c": {}}, "required": ["c"]}]}
    defs = {"#/$defs/B": {"description": "b", "type": "object", "properties": {"b": {}}, "required": ["b", "a"]}}
    merged = merge_all_of(node, lambda branch: defs.get(branch.get("$ref"), branch))
    assert merged == {"description": "own", "type": "object", "properties": {"a": {"type": "string"}, "b": {},
                                                                              "c": {}},
                      "required": ["a", "b", "c"]}
    assert merge_all_of({"allOf": [False]}, lambda branch: branch) == {"allOf": [False]}


def test_identity_memo_tells_equal_nodes_apart() -> None:
    memo: IdentityMemo[str] = IdentityMemo()
    a, b = {"type": "string"}, {"type": "string"}
    memo.put(a, "first")
    assert memo.get(a) == "first" and memo.get(b) is None and a in memo and b not in memo


# Every keyword that holds a subschema, with a reference under it: every stage must see that reference.
POSITIONS = [(key, kind) for key, kind in KEYWORDS.items() if kind not in (DYNAMIC, DEFINITIONS)]


def _holding(key: str, kind: int, sub: dict[str, Any]) -> dict[str, Any]:
    if kind in (SCHEMA, ITEMS):
        return {key: sub}
    if kind == SCHEMA_LIST:
        return {key: [sub]}
    return {key: {"x": sub}}


@pytest.mark.parametrize(("key", "kind"), POSITIONS)
def test_every_stage_finds_the_same_subschemas(key: str, kind: int) -> None:
    schema = {"type": "object", **_holding(key, kind, {"$ref": "#/$defs/T"})}
    defs = {"T": {"type": "string", "description": "target"}}
    resolver = RefResolver(Diagnostics())
    assert "$ref" not in str(resolver.inline(schema, defs)), "the resolver inlines it"
    assert any(node.get("$ref") == "#/$defs/T" for _, node in iter_nodes(schema)), "the validators visit it"
    assert "'$ref': '#/$defs/T'" in str(codegen_walk(schema, lambda ref: ref)), "codegen keeps it"
    assert "'$ref'" not in str(codegen_walk(schema, lambda ref: None)), "codegen rewrites it"
    document = {"components": {"schemas": {"T": {"type": "string"}}}}
    normalizer = SchemaNormalizer(document, swagger=False, source="doc", diagnostics=Diagnostics())
    normalizer.load_definitions()
    normalized, ok = normalizer.entry(_holding(key, kind, {"$ref": "#/components/schemas/T"}), "/x", "t")
    assert ok and "#/$defs/T" in str(normalized), "the OpenAPI reader rewrites it to the IR's reference"


# -- the inliner against jsonref ------------------------------------------------------------------------------

LEAVES = st.sampled_from([{"type": "string"}, {"type": "integer", "minimum": 0}, {"enum": ["a", "b"]},
                          {"type": "boolean", "description": "flag"}])


@st.composite
def acyclic_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A schema whose `$defs` form a DAG: definition i refers only to definitions before it."""
    defs: dict[str, Any] = {}

    def node(limit: int, depth: int) -> Any:
        choice = draw(st.integers(0, 4 if depth < 3 else 1))
        if choice == 0 or (choice == 1 and limit == 0):
            return draw(LEAVES)
        if choice == 1:
            return {"$ref": f"#/$defs/D{draw(st.integers(0, limit - 1))}"}
        if choice == 2:
            names = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True))
            return {"type": "object", "properties": {n: node(limit, depth + 1) for n in names}}
        if choice == 3:
            return {"type": "array", "items": node(limit, depth + 1)}
        return {"anyOf": [node(limit, depth + 1), node(limit, depth + 1)]}

    for index in range(draw(st.integers(0, 5))):
        defs[f"D{index}"] = node(index, 0)
    root = {"type": "object", "properties": {"p": node(len(defs), 0), "q": node(len(defs), 0)}}
    return {**root, "$defs": defs} if defs else root


@settings(max_examples=150, deadline=None)
@given(acyclic_documents())
def test_inline_matches_jsonref_on_acyclic_documents(document: dict[str, Any]) -> None:
    expected = jsonref.replace_refs(document, proxies=False, lazy_load=False)
    expected.pop("$defs", None)
    diagnostics = Diagnostics()
    assert RefResolver(diagnostics, max_depth=3).inline(document) == expected
    assert not diagnostics.has_errors
