"""OpenAI strict's schema-wide limits (`validate.strict_limits`), measured per distinct subtree and kept for the
family (`base.LimitMemo`): the same violations as counting every node of every schema, whatever is shared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.providers import validate
from compiler.providers.base import LimitMemo, type_set
from compiler.providers.validate import Violation, iter_nodes, strict_limits


def _plain_depth(node: Any, level: int = 1) -> int:
    if not isinstance(node, dict):
        return level - 1
    deepest = level
    for sub in (node.get("properties") or {}).values():
        deepest = max(deepest, _plain_depth(sub, level + 1))
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            deepest = max(deepest, _plain_depth(node[key], level + 1 if "object" in type_set(node[key]) else level))
    for branch in node.get("anyOf") or ():
        deepest = max(deepest, _plain_depth(branch, level))
    return deepest


def _plain(schema: dict[str, Any]) -> Iterator[Violation]:
    """The limits counted node by node, every occurrence walked (the oracle)."""
    properties = enum_values = chars = 0
    for at, node in iter_nodes(schema):
        keys = list(node.get("properties") or {})
        properties, chars = properties + len(keys), chars + sum(map(len, keys))
        values = node.get("enum") or []
        strings = [v for v in values if isinstance(v, str)]
        enum_values, chars = enum_values + len(values), chars + sum(map(len, strings))
        chars += len(node["const"]) if isinstance(node.get("const"), str) else 0
        if len(strings) > validate.STRICT_BIG_ENUM and sum(map(len, strings)) > validate.STRICT_BIG_ENUM_CHARS:
            yield Violation(at, "limit-big-enum", f"an enum of {len(strings)} strings over "
                            f"{validate.STRICT_BIG_ENUM_CHARS} chars")
    chars += sum(map(len, schema.get("$defs") or {}))
    depth = max(_plain_depth(root) for root in [schema, *(schema.get("$defs") or {}).values()])
    for name, value, limit in (("properties", properties, validate.STRICT_MAX_PROPERTIES),
                               ("enum-values", enum_values, validate.STRICT_MAX_ENUM_VALUES),
                               ("string-length", chars, validate.STRICT_MAX_STRING_TOTAL),
                               ("depth", depth, validate.STRICT_MAX_DEPTH)):
        if value > limit:
            yield Violation("", f"limit-{name}", f"{value} > {limit}")


_leaf = st.builds(lambda kind, enum, const: {"type": kind, **({"enum": enum} if enum else {}),
                                             **({"const": const} if const else {})},
                  st.sampled_from(["string", "integer", "object"]),
                  st.lists(st.text(max_size=60), max_size=300), st.text(max_size=20))


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    properties = st.dictionaries(st.text(max_size=30), inner, max_size=4)
    return (st.builds(lambda p: {"type": "object", "properties": p}, properties)
            | st.builds(lambda i, kind: {"type": kind, "items": i}, inner, st.sampled_from(["array", "object"]))
            | st.builds(lambda a: {"type": "object", "additionalProperties": a}, inner)
            | st.builds(lambda b: {"anyOf": b}, st.lists(inner, min_size=1, max_size=3))
            | st.builds(lambda shared: {"type": "object", "properties": {"a": shared, "b": shared}}, inner))


schemas = st.builds(lambda root, defs: {**root, **({"$defs": defs} if defs else {})},
                    st.recursive(_leaf, _extend, max_leaves=12).filter(lambda node: isinstance(node, dict)),
                    st.dictionaries(st.text(max_size=10), st.recursive(_leaf, _extend, max_leaves=4), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.lists(schemas, min_size=1, max_size=3))
def test_limits_measured_once_per_subtree_are_those_of_every_node(tools: list[dict[str, Any]]) -> None:
    """Tools measured one after another with one memo (as a family's are), sharing subtrees with each other."""
    memo = LimitMemo()
    shared = [*tools, {"type": "object", "properties": {f"t{i}": tool for i, tool in enumerate(tools)}}]
    for schema in shared:
        assert list(strict_limits(schema, memo)) == list(_plain(schema))


def test_limits_past_every_threshold_are_reported_in_order() -> None:
    big = {"type": "string", "enum": [f"{i:0>70}" for i in range(validate.STRICT_BIG_ENUM + 1)]}
    wide = {"type": "object", "properties": {f"p{i}": big for i in range(8)}}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = {"type": "object", "properties": {"d": deep}}
    schema = {"type": "object", "properties": {"wide": wide, "deep": deep}}
    found = list(strict_limits(schema, LimitMemo()))
    assert found == list(_plain(schema))
    assert {v.rule for v in found} == {"limit-big-enum", "limit-enum-values", "limit-string-length", "limit-depth"}
