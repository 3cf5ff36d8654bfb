"""The OpenAPI tests' own checkers (`tests.support.openapi`) catch what they look for."""

from __future__ import annotations

from compiler.ir import Source
from tests.support.openapi import count_operations, dangling_refs, dialect_leftovers


def test_count_operations_ignores_non_methods_and_broken_items() -> None:
    document = {"paths": {"/a": {"get": {}, "parameters": [], "summary": "x", "trace": {}}, "/b": "broken"}}
    assert count_operations(document) == 2


def test_dangling_refs_and_leftovers_are_found() -> None:
    source = Source(id="s", kind="openapi", location="s", definitions={
        "A": {"type": "object", "properties": {"x-name": {"$ref": "#/$defs/B"}, "y": {"$ref": "#/$defs/A"}}},
    })
    assert dangling_refs(source, []) == ["definitions/A/properties/x-name: '#/$defs/B'"]
    leftovers = Source(id="s", kind="openapi", location="s", definitions={
        "A": {"nullable": True, "properties": {"x-ok": {"exclusiveMinimum": True, "x-bad": 1}}},
    })
    assert dialect_leftovers(leftovers, []) == [
        "definitions/A/nullable", "definitions/A/properties/x-ok/exclusiveMinimum",
        "definitions/A/properties/x-ok/x-bad",
    ]
