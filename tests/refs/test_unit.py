"""bundle / inline semantics: siblings, names, lifting, memo across tools, dialects, determinism."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import BAD_POINTER, UNSUPPORTED, RefResolver, defs_ref, resolve_pointer

ODD_NAMES = ["a~b", "a/b", "50%", "with space", "ünï😀", "a~1b", "%41"]


def test_special_characters_in_definition_names() -> None:
    defs = {name: {"type": "string", "title": name} for name in ODD_NAMES}
    schema = {"type": "object", "properties": {name: {"$ref": defs_ref(name)} for name in ODD_NAMES}}
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    bundled = resolver.bundle(schema, defs)
    inlined = resolver.inline(schema, defs)
    assert not diagnostics.items
    assert sorted(bundled["$defs"]) == sorted(ODD_NAMES)
    for name in ODD_NAMES:
        ref = bundled["properties"][name]["$ref"]
        assert resolve_pointer(bundled, ref) == {"type": "string", "title": name}
        assert inlined["properties"][name] == {"type": "string", "title": name}
    validator = jsonschema.Draft202012Validator(bundled)
    assert validator.is_valid({"a/b": "x"}) and not validator.is_valid({"ünï😀": 1, "%41": 2})


def test_siblings_are_kept() -> None:
    defs = {"Pet": {"type": "object", "description": "a pet", "properties": {"name": {"type": "string"}}}}
    schema = {
        "properties": {
            "annotated": {"$ref": "#/$defs/Pet", "description": "the owner's pet", "default": {}},
            "asserted": {"$ref": "#/$defs/Pet", "required": ["name"], "description": "must be named"},
        }
    }
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    bundled = resolver.bundle(schema, defs)
    assert bundled["properties"]["annotated"] == schema["properties"]["annotated"]  # 2020-12: kept as is
    inlined = resolver.inline(schema, defs)
    assert inlined["properties"]["annotated"] == {
        **defs["Pet"],
        "description": "the owner's pet",
        "default": {},
    }
    assert inlined["properties"]["asserted"] == {
        "required": ["name"],
        "description": "must be named",
        "allOf": [defs["Pet"]],
    }
    assert not diagnostics.items
    for result in (bundled, inlined):
        validator = jsonschema.Draft202012Validator(result)
        assert validator.is_valid({"asserted": {"name": "rex"}})
        assert not validator.is_valid({"asserted": {}})


def test_draft7_ignores_assertion_siblings_but_keeps_annotations() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"S": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/S", "maxLength": 1, "description": "kept"}},
    }
    resolver = RefResolver(Diagnostics())
    assert resolver.bundle(schema)["properties"]["a"] == {"$ref": "#/$defs/S", "description": "kept"}
    assert resolver.inline(schema)["properties"]["a"] == {"type": "string", "description": "kept"}


def test_bundle_keeps_only_reached_definitions_and_lifts_other_pointers() -> None:
    defs = {"Used": {"$ref": "#/$defs/Deep"}, "Deep": {"type": "integer"}, "Unused": {"type": "null"}}
    schema = {
        "definitions": {"Local": {"type": "boolean"}},
        "properties": {
            "a": {"$ref": "#/$defs/Used"},
            "b": {"$ref": "#/definitions/Local"},
            "c": {"$ref": "#/properties/a"},
            "d": {"$ref": "#"},
        },
    }
    bundled = RefResolver(Diagnostics()).bundle(schema, defs)
    assert sorted(bundled["$defs"]) == ["Deep", "Local", "Used", "properties_a", "root"]
    assert "definitions" not in bundled and "definitions" not in bundled["$defs"]["root"]
    assert bundled["properties"]["c"] == {"$ref": "#/$defs/properties_a"}
    validator = jsonschema.Draft202012Validator(bundled)
    assert validator.is_valid({"a": 1, "b": True, "c": 2, "d": {"a": 3}})
    assert not validator.is_valid({"d": {"c": "x"}})


def test_memo_is_shared_across_tools_and_results_are_deterministic() -> None:
    defs = {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}}, "B": {"type": "string"}}
    resolver = RefResolver(Diagnostics())
    first = resolver.bundle({"$ref": "#/$defs/A"}, defs)
    second = resolver.bundle({"properties": {"x": {"$ref": "#/$defs/A"}}}, defs)
    assert first["$defs"]["A"] is second["$defs"]["A"]  # shared, read-only
    assert json.dumps(first["$defs"]) == json.dumps(second["$defs"])
    fresh = RefResolver(Diagnostics()).bundle({"properties": {"x": {"$ref": "#/$defs/A"}}}, defs)
    assert json.dumps(fresh, sort_keys=False) == json.dumps(second, sort_keys=False)
    # a tool's own $defs shadow shared names: the memo is not used and its own definition wins
    shadow = resolver.inline({"$defs": {"B": {"type": "integer"}}, "$ref": "#/$defs/A"}, defs)
    assert shadow["properties"]["b"] == {"type": "integer"}
    assert resolver.inline({"$ref": "#/$defs/A"}, defs)["properties"]["b"] == {"type": "string"}


def test_bad_pointer_and_dynamic_ref() -> None:
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    resolver.bundle(
        {"properties": {"a": {"$ref": "#/$defs/Nope"}, "b": {"$dynamicRef": "#meta"}}}, source="src", tool="t"
    )
    assert [(d.code, d.pointer, d.source, d.tool) for d in diagnostics] == [
        (BAD_POINTER, "/properties/a/$ref", "src", "t"),
        (UNSUPPORTED, "/properties/b/$dynamicRef", "src", "t"),
    ]


def test_embedded_resources_and_anchors() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "#pos"}},
        "$defs": {
            "item": {
                "$id": "item.json",
                "type": "array",
                "items": {"$ref": "#/$defs/x"},
                "$defs": {"x": {"type": "integer"}},
            },
            "p": {"$anchor": "pos", "minimum": 0},
        },
    }
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    for result in (resolver.bundle(schema), resolver.inline(schema)):
        validator = jsonschema.Draft202012Validator(result)
        assert validator.is_valid({"a": [1, 2], "b": 3})
        assert not validator.is_valid({"a": ["x"]}) and not validator.is_valid({"b": -1})
    assert not diagnostics.items


# -- property: inline(bundle(s)) means what inline(s) means ----------------------------------------------

_LEAVES = st.sampled_from(
    [
        {"type": "integer"},
        {"type": "string"},
        {"minimum": 3},
        {"maxLength": 2},
        {"enum": [1, "a", None]},
        True,
        {"type": "array", "items": {"type": "integer"}},
    ]
)


def _schema_tree(names: list[str]) -> st.SearchStrategy[Any]:
    if not names:
        base: st.SearchStrategy[Any] = _LEAVES
    else:
        refs = st.sampled_from(names).map(lambda n: {"$ref": defs_ref(n)})
        base = st.one_of(_LEAVES, refs, refs.map(lambda r: {**r, "description": "d", "minimum": 1}))
    return st.recursive(
        base,
        lambda kids: st.one_of(
            st.builds(lambda a, b: {"anyOf": [a, b]}, kids, kids),
            st.builds(lambda a: {"type": "object", "properties": {"p": a}}, kids),
            st.builds(lambda a, b: {"allOf": [a, b]}, kids, kids),
        ),
        max_leaves=5,
    )


@st.composite
def _acyclic(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    defs: dict[str, Any] = {}
    for i in range(draw(st.integers(0, 4))):
        defs[f"D{i}"] = draw(_schema_tree(list(defs)))  # refers only to earlier ones: acyclic
    return draw(_schema_tree(list(defs))), defs


_INSTANCES = [None, 0, 2, 5, "", "abc", [], [1], ["x"], {}, {"p": 1}, {"p": "zz"}, {"p": {"p": 4}}, True]


@settings(max_examples=60, deadline=None)
@given(_acyclic())
def test_inline_of_bundle_equals_inline(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, defs = case
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    direct = resolver.inline(schema, defs)
    bundled = resolver.bundle(schema, defs)
    via_bundle = resolver.inline(bundled)
    assert not diagnostics.items
    original = jsonschema.Draft202012Validator(
        {**schema, "$defs": defs} if isinstance(schema, dict) else schema
    )
    for instance in _INSTANCES:
        verdict = original.is_valid(instance)
        assert jsonschema.Draft202012Validator(direct).is_valid(instance) is verdict
        assert jsonschema.Draft202012Validator(bundled).is_valid(instance) is verdict
        assert jsonschema.Draft202012Validator(via_bundle).is_valid(instance) is verdict


def test_lost_refs_follow_definitions_through_chains_and_cycles() -> None:
    """A lost `$ref` reaches every schema that uses it, however far along the `$defs` and around cycles, and no
    schema that does not; each definition is read once."""
    from compiler.refs.walker import LostRefs, refusal

    lost = refusal({"$ref": "gone.yaml#/X"}, "gone.yaml#/X")
    definitions = {"A": {"$ref": "#/$defs/B"}, "B": {"properties": {"x": lost}},
                   "C": {"type": "string", "default": {"description": "toolc: $ref 'no' could not be resolved"}},
                   "D": {"items": {"$ref": "#/$defs/E"}}, "E": {"anyOf": [{"$ref": "#/$defs/D"}, {"$ref": "#/$defs/A"}]},
                   "F": {"items": {"$ref": "#/$defs/F"}}}
    found = LostRefs(definitions)
    assert found.of({"$ref": "#/$defs/A"}) == found.of({"$ref": "#/$defs/D"}) == "'gone.yaml#/X'"
    assert found.of({"properties": {"c": {"$ref": "#/$defs/C"}, "f": {"$ref": "#/$defs/F"}}}) is None
    assert found.of({"type": "object", "properties": {"own": lost}}) == "'gone.yaml#/X'"


def test_inlining_the_same_schema_again_reports_what_a_fresh_walk_would() -> None:
    """The resolver keeps its last inlining (a tool's targets that inline ask one after another): asked again, it
    gives the same result and reports again what a walk reports every time (a cut budget), not what it reports
    once per tool (a pruned recursion)."""
    defs = {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"},
                                                       "a": {"type": "string"}, "b": {"type": "string"}}}}
    schema = {"type": "object", "properties": {"head": {"$ref": "#/$defs/Node"}, "tail": {"$ref": "#/$defs/Node"}}}
    other = {"type": "object", "properties": {"x": {"$ref": "#/$defs/Node"}}}

    def calls(between: bool) -> tuple[list[Any], list[tuple[str, str, str]]]:
        sink = Diagnostics()
        resolver = RefResolver(sink, max_depth=2, node_budget=12)
        results = [resolver.inline(schema, defs, source="s", tool="t")]
        if between:
            resolver.inline(other, defs, source="s", tool="u")
        results.append(resolver.inline(schema, defs, source="s", tool="t"))
        return results, [(d.code, d.pointer, d.message) for d in sink if d.tool == "t"]

    (first, again), kept = calls(between=False)
    (fresh_first, fresh_again), walked = calls(between=True)
    assert again is first and fresh_again is not fresh_first  # the second ask was not walked again
    assert again == fresh_again == first
    assert kept == walked
    codes = [code for code, _pointer, _message in kept]
    assert codes == ["TC205", "TC207", "TC207"]  # the recursion pruned once per tool; the budget cut every walk
