"""Code mode's Python signatures from JSON Schema (`compiler/codegen/router/codemode.py`): what a type checker
holds a program to must accept every value the schema does, and read as people write Python."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.codegen.router.codemode import MAX_ANSWER_KEYS, annotation, answer_shape, function_entry
from compiler.ir import McpBinding, Tool

DEFS = {"user": {"type": "object", "properties": {"login": {"type": "string"}}},
        "loop": {"$ref": "#/$defs/loop"}}


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "string"}, "str"),
    ({"type": ["integer", "null"]}, "int | None"),
    ({"type": ["null", "string"]}, "str | None"),
    ({"enum": ["asc", "desc"]}, 'Literal["asc", "desc"]'),
    ({"enum": [str(n) for n in range(13)], "type": "string"}, "str"),
    ({"enum": [True, False]}, "Any"),
    ({"type": "array", "items": {"$ref": "#/$defs/user"}}, "list[dict[str, Any]]"),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "int | str"),
    ({"oneOf": [{"type": "integer"}, {}]}, "Any"),
    ({"$ref": "#/$defs/loop"}, "Any"),
    ({"$ref": "https://example.com/x.json"}, "Any"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "array",
      "items": {"type": "array", "items": {"type": "integer"}}}}}}, "list[list[list[list[list[Any]]]]]"),
    ({}, "Any"),
])
def test_annotations_accept_what_the_schema_does(schema: dict[str, Any], expected: str) -> None:
    assert annotation(schema, DEFS) == expected


def test_an_answer_lists_its_keys_required_first_and_counts_the_rest() -> None:
    properties = {f"k{n:02d}": {"type": "integer"} for n in range(20)}
    shape = answer_shape({"type": "array", "items": {"type": "object", "properties": properties,
                                                     "required": ["k19"]}}, {})
    assert shape.startswith("list of dict: k19 (int), k00 (int), k01 (int)")
    assert shape.endswith(f", and {20 - MAX_ANSWER_KEYS} more keys")
    assert answer_shape({"$ref": "#/$defs/user"}, DEFS) == "dict: login (str)"
    assert answer_shape(None, {}) == "the answer as JSON"


def test_arguments_are_keyword_only_python_names_mapped_to_the_wire() -> None:
    tool = Tool(id="mcp:s:t", source="s", name="t", description="Do it.\n\nReally.",
                input_schema={}, binding=McpBinding(server="s", tool_name="t"))
    schema = {"type": "object", "required": ["id", "class"], "properties": {
        "id": {"type": "integer", "description": "Which one."}, "class": {"type": "string"},
        "page-size": {"type": "integer"}, "filter": {}}}
    entry = function_entry(tool, "t", schema, {})
    assert entry["signature"] == ("async def t(*, class_: str, id_: int, filter_: Any = None, "
                                  "page_size: int | None = None) -> Any:")
    assert entry["params"] == {"class_": "class", "id_": "id", "filter_": "filter", "page_size": "page-size"}
    assert entry["doc"].splitlines()[:3] == ["Do it. Really.", "", "Tool id: mcp:s:t"]
    assert "    id_ (sent as 'id'): Which one." in entry["doc"]
