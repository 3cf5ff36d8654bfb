"""Issue 13's lowering details: descriptions cut at a boundary, Gemini's own loss codes, Claude input_examples,
and the strict transforms and their name-map shapes (compiler side; the router side is in providers/test_fit.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiler.providers import codes
from compiler.providers.descriptions import ELLIPSIS, cut
from compiler.providers.namemap import arguments_to_wire
from compiler.providers.registry import validate
from tests.support.paths import ROOT
from tests.support.providers import json_documents, lower_one


@given(st.text(alphabet=st.sampled_from("ab .\n"), max_size=300), st.integers(min_value=8, max_value=200))
@example(" aaaaaaaa", 8)  # the only break is leading white space: cutting there would leave nothing
def test_a_cut_description_fits_and_ends_at_a_boundary(text: str, limit: int) -> None:
    out = cut(text, limit)
    assert len(out) <= limit
    if out == text:
        return
    assert out.endswith(ELLIPSIS)
    kept = out[: -len(ELLIPSIS)]
    assert text.startswith(kept)
    rest = text[len(kept):]
    at_boundary = rest[:1].isspace() or kept[-1:] in (".", "!", "?")
    # Mid-word only when no word break follows the first word's start (a break in leading space would keep nothing).
    assert at_boundary or not any(char.isspace() for char in kept.lstrip())


def test_a_long_tool_description_is_cut_at_a_sentence_for_openai() -> None:
    description = "Lists things. " * 80 + "Tail without end"
    result = lower_one({"type": "object", "properties": {}}, "openai-chat", description=description)
    sent = result.lowered[0].definition["function"]["description"]
    assert len(sent) <= 1024 and sent.endswith("things." + ELLIPSIS)
    assert codes.DESCRIPTION_TRUNCATED in {d.code for d in result.diagnostics}


def test_gemini_reports_a_required_entry_naming_no_property() -> None:
    result = lower_one({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"]},
                       "gemini")
    assert result.lowered[0].definition["parameters"]["required"] == ["a"]
    (loss,) = [d for d in result.diagnostics if d.code == codes.GEMINI_REQUIRED_DROPPED]
    assert "ghost" in loss.message and loss.provider == "gemini"


def test_gemini_reports_a_pruned_recursion_under_its_own_code() -> None:
    from tests.support.providers import catalog_of, lower, make_tool

    tree = {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/node"}}}
    tool = make_tool({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}})
    result = lower(catalog_of(tool, definitions={"node": tree}), "gemini")
    found = {d.code for d in result.diagnostics}
    assert codes.GEMINI_RECURSION_PRUNED in found and codes.RECURSION_PRUNED not in found
    anthropic = {d.code for d in lower(catalog_of(tool, definitions={"node": tree}), "anthropic").diagnostics}
    assert codes.RECURSION_PRUNED in anthropic


def test_claude_input_examples_are_the_valid_document_examples() -> None:
    schema = {"type": "object", "required": ["name"], "examples": [{"name": "Rex"}, {"name": 3}],
              "properties": {"name": {"type": "string", "examples": ["Fido"]},
                             "age": {"type": "integer", "examples": ["old", 4]}}}
    result = lower_one(schema, "anthropic")
    definition = result.lowered[0].definition
    assert definition["input_examples"] == [{"name": "Rex"}, {"name": "Fido", "age": 4}]
    assert validate("anthropic", definition) == []
    (dropped,) = [d for d in result.diagnostics if d.code == codes.EXAMPLE_DROPPED]
    assert "does not validate" in dropped.message


def test_a_schema_is_checked_against_the_metaschema_once(monkeypatch: Any) -> None:
    """Tools that share a schema share its metaschema check (`examples._valid_schema`): the same examples kept, and
    a schema jsonschema refuses gives none, the first time and every time after."""
    from jsonschema import Draft202012Validator

    from compiler.providers import examples

    checked: list[Any] = []
    real = Draft202012Validator.check_schema
    monkeypatch.setattr(Draft202012Validator, "check_schema",
                        classmethod(lambda cls, schema: checked.append(schema) or real(schema)))
    schema = {"type": "object", "properties": {"unique-to-this-test": {"type": "string", "examples": ["a"]}}}
    first, second = (lower_one(schema, "anthropic", name=name).lowered[0].definition for name in ("one", "two"))
    assert first["input_examples"] == second["input_examples"] == [{"unique-to-this-test": "a"}]
    assert len(checked) == 1
    broken = {"type": "object", "minProperties": -1,  # the metaschema wants a non-negative integer
              "properties": {"unique-to-this-test": {"type": "string", "examples": ["a"]}}}
    for name in ("three", "four"):
        assert "input_examples" not in lower_one(broken, "anthropic", name=name).lowered[0].definition
    assert len(checked) == 2
    assert examples._valid_schema({"maximum": 2**70}) and examples._valid_schema({"maximum": 2**70})


def test_a_property_example_is_validated_once_for_every_tool_that_shares_the_property(monkeypatch: Any) -> None:
    """Composing an example from the properties' own checks each candidate against its property's schema once per
    distinct pair (`examples._valid`): the same example kept, a failing one skipped for the next, every time."""
    from compiler.providers import examples

    made: list[Any] = []
    real = examples._validates
    monkeypatch.setattr(examples, "_validates", lambda schema, value: made.append(value) or real(schema, value))
    schema = {"type": "object", "properties": {"unique-to-this-test-too": {"type": "integer", "examples": ["x", 7]}}}
    for name in ("one", "two", "three"):
        definition = lower_one(schema, "anthropic", name=name).lowered[0].definition
        assert definition["input_examples"] == [{"unique-to-this-test-too": 7}]
    assert made == ["x", 7]
    assert examples._valid({"maximum": 2**70}, 1) and examples._valid({"maximum": 2**70}, 1)


def test_the_definitions_validation_checks_its_examples_with_the_validator_that_chose_them() -> None:
    """`input_examples` and the definition's validation check the same examples against the same schema object,
    one validator between them (`examples.validator_for`); a schema it was not made for gets its own."""
    from compiler.providers import examples

    schema = {"type": "object", "properties": {"n": {"type": "integer", "examples": [3]}}}
    definition = lower_one(schema, "anthropic").lowered[0].definition
    chosen = examples.validator_for(definition["input_schema"])
    assert chosen.schema is definition["input_schema"] and definition["input_examples"] == [{"n": 3}]
    assert validate("anthropic", definition) == []
    assert examples.validator_for(definition["input_schema"]) is chosen
    wrong = {**definition, "input_examples": [{"n": "three"}]}
    assert [v.rule for v in validate("anthropic", wrong)] == ["input-examples"]
    other = {**definition, "input_schema": {**definition["input_schema"]}, "input_examples": [{"n": "three"}]}
    assert [v.rule for v in validate("anthropic", other)] == ["input-examples"]
    assert examples.validator_for(other["input_schema"]) is not chosen


def test_no_examples_no_key() -> None:
    result = lower_one({"type": "object", "properties": {"a": {"type": "string"}}}, "anthropic")
    assert "input_examples" not in result.lowered[0].definition


def test_the_two_lowering_gaps_stay_closed() -> None:
    """A nested ["object","null"] branch gets additionalProperties: false; a maxLength inside an anyOf branch stays
    strict (issue 13 measured both losing strict)."""
    nested = {"type": "object", "properties": {"a": {"anyOf": [
        {"type": ["object", "null"], "properties": {"x": {"type": "string"}}}, {"type": "string"}]}}}
    length = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string", "maxLength": 5},
                                                              {"type": "integer"}]}}}
    for schema in (nested, length):
        result = lower_one(schema, "openai-chat")
        assert result.lowered[0].strict, [d.message for d in result.diagnostics]
        assert validate("openai-chat", result.lowered[0].definition) == []
    branch = lower_one(nested, "openai-chat").lowered[0].parameters["properties"]["a"]["anyOf"][0]
    assert branch["additionalProperties"] is False


MAP_SCHEMA = {"type": "object", "required": ["spec"], "properties": {
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "spec": {"type": "object", "properties": {
        "env": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "value": {"type": "string"}, "secret": {"type": "boolean"}}, "required": ["value"]}},
        "raw": {"description": "any JSON"},
        "extra": {"type": "object"}}}}}

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)
keys = st.text(min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(labels=st.dictionaries(keys, st.text(max_size=8), max_size=4),
       env=st.dictionaries(keys, st.fixed_dictionaries({"value": st.text(max_size=5)},
                                                       optional={"secret": st.booleans()}), max_size=3),
       raw=json_values, extra=st.dictionaries(st.text(max_size=5), json_values, max_size=3))
def test_maps_and_free_form_values_round_trip_through_the_name_map(labels: dict[str, str], env: dict[str, Any],
                                                                   raw: Any, extra: dict[str, Any]) -> None:
    result = lower_one(MAP_SCHEMA, "openai-chat")
    lowered = result.lowered[0]
    assert lowered.strict and validate("openai-chat", lowered.definition) == []
    found = {d.code for d in result.diagnostics}
    assert {codes.MAP_ENTRIES, codes.JSON_ENCODED} <= found
    names = {"target": "openai-chat", "tools": {lowered.name: result.entries[lowered.name]}}

    def strict_env(value: dict[str, Any]) -> dict[str, Any]:
        return {"value": value["value"], "secret": value.get("secret")}  # strict sends every key; null = omitted

    sent = {"labels": [{"key": k, "value": v} for k, v in labels.items()],
            "spec": {"env": [{"key": k, "value": strict_env(v)} for k, v in env.items()],
                     "raw": json.dumps(raw), "extra": json.dumps(extra)}}
    _tool, wire = arguments_to_wire("openai-chat", lowered.name, sent, names)
    assert wire == {"labels": labels, "spec": {"env": env, "raw": raw, "extra": extra}}


def test_a_cut_description_stays_whole_in_the_catalog_and_the_stub() -> None:

    generated = ROOT / "generated"
    tools = json.loads((generated / "schemas/openai-chat.json").read_text())
    (sent,) = [t["function"]["description"] for t in tools if t["function"]["name"] == "sequentialthinking"]
    last = "Only set nextThoughtNeeded to false when truly done and a satisfactory answer is reached"
    assert sent.endswith("hypothesis" + ELLIPSIS) and last not in sent
    assert last in (generated / "python/sequential_thinking/tools.py").read_text()
    assert last in (generated / "catalog.json").read_text()


@settings(max_examples=150, deadline=None)
@given(json_documents)
def test_line_by_line_token_counts_equal_one_direct_count(value: Any) -> None:
    """`tokens.count_bytes` counts canonical JSON line by line (cached); that must be exactly one encode."""
    import bpe_openai

    from compiler.infra.serialize import canonical_json
    from compiler.providers import tokens

    data = canonical_json(value)
    direct = len(bpe_openai.get_encoding("o200k_base").encode_ordinary(data.decode()))
    assert tokens.count_bytes(data) == direct


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_documents, min_size=1, max_size=4), st.sampled_from([2, 4, 6]))
def test_a_placed_definition_is_counted_on_its_own_and_as_placed(definition: dict[str, Any], width: int) -> None:
    """`tokens.count_placed` reads the definition as `spans.place` leaves it (indented to the array's column by
    orjson itself): both counts equal direct encodes of the definition alone and of every line after the pad."""
    import bpe_openai

    from compiler.infra.serialize import canonical_json
    from compiler.providers import tokens

    encode = bpe_openai.get_encoding("o200k_base").encode_ordinary
    pad = b" " * width
    alone = canonical_json(definition)
    placed = alone[:-1].replace(b"\n", b"\n" + pad)
    padded = b"".join(pad + line + b"\n" for line in alone[:-1].split(b"\n"))
    assert tokens.count_placed(placed, pad) == (len(encode(alone.decode())), len(encode(padded.decode())))
