"""Meaning is kept. Where a lowering reports no loss, the lowered schema accepts and rejects exactly what the source
does (hypothesis-generated instances, checked with `jsonschema`). For OpenAI strict, the lowered schema plus
`arguments_to_wire` accepts exactly the source's instances (nulls for omitted optionals, renamed keys undone)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from compiler.ir import Tool
from compiler.providers import codes
from compiler.providers.lower import TargetResult
from compiler.providers.namemap import UnknownToolName, arguments_to_wire
from compiler.sources.recording import read_recording
from tests.support.paths import FIXTURES
from tests.support.providers import catalog_of, config, lower, make_tool, parameters_of

NO_MEANING = {codes.DROPPED}  # annotations only ($schema, examples, x-*): no instance changes verdict
EDGE = sorted((FIXTURES / "providers" / "edge").glob("*.json"))


@cache
def mcp_tools() -> tuple[Tool, ...]:
    from compiler.infra.diagnostics import Diagnostics

    tools: list[Tool] = []
    for path in sorted((FIXTURES / "mcp").glob("*.json")):
        _, found = read_recording(json.loads(path.read_text()), source_id=path.stem, location=path.name,
                                  diagnostics=Diagnostics())
        tools.extend(found)
    for path in EDGE:
        case = json.loads(path.read_text())
        tools.append(make_tool(case["schema"], name=path.stem, source="edge"))
    return tuple(tools)


@cache
def lowered(target: str) -> TargetResult:
    if target == "gemini-json":
        return lower(catalog_of(*mcp_tools()), "gemini", config(gemini_schema="json-schema"))
    return lower(catalog_of(*mcp_tools()), target)


def keys_of(schema: Any) -> list[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(k for k in (node.get("properties") or {}) if isinstance(node.get("properties"), dict))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found) or ["x"]


def instances(schema: Any) -> st.SearchStrategy[Any]:
    """Objects built from the schema's own property names with values of every JSON type (valid and not)."""
    names = st.sampled_from([*keys_of(schema), "extra"])
    leaves = st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-2, 2, allow_nan=False) | \
        st.sampled_from(["", "a", "2024-01-01T00:00:00Z", "main", "/tmp/x", "https://x.y"])
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
                          max_leaves=8)
    return st.dictionaries(names, values, max_size=5)


def lossless(result: TargetResult) -> list[tuple[Tool, Any]]:
    lossy = {d.tool for d in result.diagnostics if d.code not in NO_MEANING}
    return [(item.tool, parameters_of(result.target, item.definition)) for item in result.lowered
            if item.tool.id not in lossy]


def _pairs(target: str) -> list[tuple[Tool, Any]]:
    pairs = lossless(lowered(target))
    assert pairs, target
    return pairs


@pytest.mark.parametrize("target", ["anthropic", "gemini-json"])
def test_lossless_lowerings_keep_the_verdict(target: str) -> None:
    pairs = _pairs(target)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        tool, params = data.draw(st.sampled_from(pairs))
        instance = data.draw(instances(tool.input_schema))
        source = Draft202012Validator(tool.input_schema).is_valid(instance)
        assert Draft202012Validator(params).is_valid(instance) == source, (tool.id, instance)

    check()


def _strict_items() -> list[tuple[str, Tool, Any]]:
    result = lowered("openai-chat")
    described = {d.tool for d in result.diagnostics if d.code in {codes.DESCRIBED, codes.ONE_OF, codes.ALL_OF}}
    return [(i.name, i.tool, parameters_of("openai-chat", i.definition)) for i in result.lowered
            if i.strict and i.tool.id not in described]


def test_openai_strict_round_trips_through_arguments_to_wire() -> None:
    """Soundness: whatever strict output the model may produce maps back to arguments the source accepts.
    Completeness: every source instance (declared keys only) is reachable: fill omitted optionals with null."""
    items = _strict_items()
    name_map = lowered("openai-chat").name_map()
    assert items

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        name, tool, params = data.draw(st.sampled_from(items))
        instance = data.draw(instances(tool.input_schema))
        if Draft202012Validator(params).is_valid(instance):
            tool_id, wire = arguments_to_wire("openai-chat", name, instance, name_map)
            assert tool_id == tool.id
            assert Draft202012Validator(tool.input_schema).is_valid(wire), (tool.id, instance, wire)
        if Draft202012Validator(tool.input_schema).is_valid(instance) and set(instance) <= set(params["properties"]):
            filled = {key: instance.get(key) for key in params["properties"]}
            if Draft202012Validator(params).is_valid(filled):
                assert arguments_to_wire("openai-chat", name, filled, name_map)[1] == \
                    {k: v for k, v in instance.items() if v is not None or k in (tool.input_schema.get("required") or [])}

    check()


def test_arguments_to_wire_undoes_nulls_renames_and_nesting() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"},
        "o": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}, "required": ["x"]},
        "xs": {"type": "array", "items": {"$ref": "#/$defs/I"}}},
        "$defs": {"I": {"type": "object", "properties": {"k": {"type": "string"}}}}}
    result = lower(catalog_of(make_tool(schema, name="t")), "openai-chat")
    name_map = result.name_map()
    args = {"a": "v", "b": None, "o": {"x": "1", "y": None}, "xs": [{"k": None}, {"k": "z"}]}
    assert Draft202012Validator(parameters_of("openai-chat", result.lowered[0].definition)).is_valid(args)
    assert arguments_to_wire("openai-chat", "t", args, name_map) == \
        ("mcp:srv:t", {"a": "v", "o": {"x": "1"}, "xs": [{}, {"k": "z"}]})

    claude = lower(catalog_of(make_tool({"type": "object", "properties": {"filter[id]": {"type": "string"}}},
                                        name="t")), "anthropic")
    assert arguments_to_wire("anthropic", "t", {"filter_id": "7"}, claude.name_map()) == \
        ("mcp:srv:t", {"filter[id]": "7"})
    with pytest.raises(UnknownToolName):
        arguments_to_wire("anthropic", "nope", {}, claude.name_map())
    with pytest.raises(ValueError):
        arguments_to_wire("gemini", "t", {}, claude.name_map())


def test_shared_definitions_keep_their_undo_in_every_tool() -> None:
    """Subtrees shared between tools are lowered once (memo): each tool's name map must still undo them."""
    defs = {"Addr": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                     "required": ["city"]}}
    tools = [make_tool({"type": "object", "properties": {"a": {"$ref": "#/$defs/Addr"}, "n": {"type": "integer"}},
                        "required": ["a"]}, name=f"t{i}") for i in range(3)]
    catalog = catalog_of(*tools, definitions=defs)
    for target in ("openai-chat", "openai-responses"):
        result = lower(catalog, target)
        name_map = result.name_map()
        for i in range(3):
            tool_id, wire = arguments_to_wire(target, f"t{i}", {"a": {"city": "x", "zip": None}, "n": None}, name_map)
            assert (tool_id, wire) == (f"mcp:srv:t{i}", {"a": {"city": "x"}})
        text = json.dumps([item.definition for item in result.lowered])
        assert "x-toolc" not in text


def test_all_of_members_with_optional_keys_merge_their_undo() -> None:
    schema = {"type": "object", "required": ["v"], "properties": {"v": {"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"c": {"type": "string"}}}]}}}
    result = lower(catalog_of(make_tool(schema, name="t")), "openai-chat")
    assert result.lowered[0].strict
    _, wire = arguments_to_wire("openai-chat", "t", {"v": {"a": "1", "b": None, "c": None}}, result.name_map())
    assert wire == {"v": {"a": "1"}}
