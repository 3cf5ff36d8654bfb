"""Output models are never stricter than their JSON Schema (issue 21, design decision 11).

The property: for schemas built from every construct where the generator's models were stricter than the
schema (tuple `items`, untyped nodes, `format`, lengths and patterns, number bounds, `additionalProperties`,
`patternProperties`, discriminators, nullability, shared definitions also used by inputs), every value
jsonschema accepts (Draft 2020-12, `format` not asserted, as the router validates) is accepted by the output
model the stubs return. The models come from the real path: `SourcePackage` (bundling, the lenient rewrite,
datamodel-code-generator) over a source whose shared definitions both inputs and outputs reach.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from compiler.build import Build
from compiler.codegen.stubs.stub_packages import SourcePackage
from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Catalog, McpBinding, Source, Tool
from compiler.refs import RefResolver
from tests.support.codegen import same_json

NAMES = ("id", "name", "from", "model_config", "a-b", "x1", "items", "type")
PATTERNS = ("^[a-z]+$", "^ab", "[0-9]{2}", "^\\w+$")
FORMATS = ("date-time", "date", "uuid", "uri", "email", "int64", "byte", "binary", "ipv4")
SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(-1e6, 1e6, allow_nan=False) | st.text(
    max_size=8)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
_counter = itertools.count()


# -- schemas --------------------------------------------------------------------------------------------------

def _string() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 4), "maxLength": st.integers(4, 10), "pattern": st.sampled_from(PATTERNS),
        "format": st.sampled_from(FORMATS)})


def _integer() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just("integer")}, optional={
        "minimum": st.integers(-5, 0), "maximum": st.integers(1, 100), "multipleOf": st.sampled_from([1, 2, 5]),
        "format": st.sampled_from(["int32", "int64"]), "exclusiveMinimum": st.integers(-10, -6)})


def _number() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just("number")}, optional={
        "minimum": st.floats(-5, 0), "maximum": st.floats(1, 100), "format": st.sampled_from(["float", "double"])})


def _leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        _string(), _integer(), _number(), st.just({"type": "boolean"}), st.just({"type": "null"}), st.just({}),
        st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=3, unique=True).map(lambda e: {"enum": e}),
        st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(lambda e: {"enum": [*e, None]}),
        st.sampled_from([{"const": "fixed"}, {"const": 3}]),
        st.sampled_from([{"$ref": "#/$defs/Shared"}, {"$ref": "#/$defs/Tree"}]),
    )


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _object(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
        node: dict[str, Any] = {"properties": {name: draw(inner) for name in names}}
        if draw(st.booleans()):
            node["type"] = "object"  # else untyped: the schema admits any non-object too
        required = draw(st.lists(st.sampled_from(names), unique=True))
        if required:
            node["required"] = required
        extra = draw(st.sampled_from(["absent", "false", "true", "schema", "pattern"]))
        if extra != "absent":
            node["additionalProperties"] = {"false": False, "true": True, "schema": {"type": "integer"},
                                            "pattern": True}[extra]
        if extra == "pattern":
            node["patternProperties"] = {"^p": {"type": "string"}}
        if draw(st.booleans()):
            node["minProperties"] = 1
        return node

    return build()


def _array(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        node: dict[str, Any] = {}
        if draw(st.booleans()):
            node["type"] = "array"
        shape = draw(st.sampled_from(["items", "prefix", "prefix+items"]))
        if shape != "items":
            node["prefixItems"] = draw(st.lists(inner, min_size=1, max_size=3))
        if shape != "prefix":
            node["items"] = draw(inner)
        if draw(st.booleans()):
            node["maxItems"] = 3
        if draw(st.booleans()):
            node["uniqueItems"] = True
        if draw(st.booleans()):
            node["minItems"] = 1
        return node

    return build()


def _tagged() -> st.SearchStrategy[dict[str, Any]]:
    def branch(tag: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"kind": {"const": tag}, "n": {"type": "integer"}},
                "required": ["kind"], "additionalProperties": False}

    return st.just({"oneOf": [branch("a"), branch("b")], "discriminator": {"propertyName": "kind"}})


def schemas() -> st.SearchStrategy[Any]:
    return st.recursive(_leaf(), lambda inner: st.one_of(
        _object(inner), _array(inner), inner.map(_nullable), st.lists(inner, min_size=2, max_size=3).map(
            lambda branches: {"anyOf": branches}), _tagged(),
        inner.map(lambda extra: {"allOf": [{"$ref": "#/$defs/Shared"},
                                           {"properties": {"more": extra}}]})), max_leaves=5)


DEFINITIONS: dict[str, Any] = {
    "Shared": {"type": "object", "properties": {"name": {"type": "string", "minLength": 3, "pattern": "^[a-z]+$"},
                                                "id": {"type": "integer", "minimum": 1}},
               "required": ["name"], "additionalProperties": False},
    "Tree": {"properties": {"label": {"type": "string", "maxLength": 2},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
}
"""Shared definitions (an OpenAPI source's components): `Shared` is also an input's body; `Tree` is recursive and
untyped."""


# -- values ---------------------------------------------------------------------------------------------------

def values(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values meant to be valid for `schema` (often, not always: the test keeps those jsonschema accepts),
    reaching into what the strict models refused: extra keys, non-objects for untyped nodes, short strings."""
    if schema is True or schema == {} or depth > 4:
        return JSON
    if not isinstance(schema, dict):
        return st.nothing()
    if "$ref" in schema:
        return values(DEFINITIONS[schema["$ref"].rsplit("/", 1)[1]], depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        integral = [float(v) for v in schema["enum"] if type(v) is int]  # JSON Schema: 1.0 is the enum's 1
        return st.sampled_from(schema["enum"] + integral)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([values(branch, depth + 1) for branch in schema[key]])
    if "allOf" in schema:
        parts = [values(branch, depth + 1) for branch in schema["allOf"]]
        return st.tuples(*parts).map(lambda found: {k: v for part in found if isinstance(part, dict)
                                                    for k, v in part.items()})
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind or ["object", "array", "string", "integer", "null"]
    return st.one_of([_typed(k, schema, depth) for k in kinds])


def _typed(kind: str, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if kind == "string":
        text = st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 10))
        return text | st.from_regex(schema["pattern"]).filter(lambda s: len(s) < 20) if "pattern" in schema \
            else text
    if kind == "integer":
        ints = st.integers(-100, 100)
        return ints | ints.map(float)
    if kind == "number":
        return st.floats(-100, 100, allow_nan=False) | st.integers(-100, 100)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return _array_values(schema, depth)
    return _object_values(schema, depth)


def _array_values(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    prefix = [values(item, depth + 1) for item in schema.get("prefixItems", [])]
    rest = st.lists(values(schema.get("items", True), depth + 1), max_size=3)
    return st.tuples(st.tuples(*prefix), rest).map(lambda parts: [*parts[0], *parts[1]])


def _object_values(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    required = [name for name in schema.get("required", []) if name in properties]
    known = st.fixed_dictionaries({name: values(properties[name], depth + 1) for name in required},
                                  optional={name: values(sub, depth + 1) for name, sub in properties.items()
                                            if name not in required})
    extra_schema = schema.get("additionalProperties", True)
    if extra_schema is False:
        return known
    extra = st.dictionaries(st.sampled_from(["zz", "p1", "extra", "from"]), values(extra_schema, depth + 1),
                            max_size=2)
    return st.tuples(extra, known).map(lambda parts: {**parts[0], **parts[1]})


# -- models from the real path --------------------------------------------------------------------------------

def _tool(index: int, output: Any) -> Tool:
    body = {"type": "object", "properties": {"body": {"$ref": "#/$defs/Shared"}}, "required": ["body"]}
    return Tool(id=f"openapi:src:op{index}", source="src", name=f"op{index}", description="", input_schema=body,
                output_schema=output, binding=McpBinding(server="src", tool_name=f"op{index}"))


def output_models(outputs: list[Any]) -> tuple[ModuleType, dict[str, bytes]]:
    """The models module of a source whose tools return `outputs` (and take `Shared` as their body)."""
    source = Source(id="src", kind="openapi", location="src", definitions=DEFINITIONS)
    tools = [_tool(i, output) for i, output in enumerate(outputs)]
    diagnostics = Diagnostics()
    build = Build(config=Config(), catalog=Catalog((source,), tuple(tools)), resolver=RefResolver(diagnostics),
                  diagnostics=diagnostics, targets=())
    files = SourcePackage(build, source, tools, "src").generate()
    assert "src/models.py" in files, [d.render() for d in diagnostics]
    folder = Path(tempfile.mkdtemp(prefix="toolc-output-models-"))
    name = f"toolc_output_models_{next(_counter)}"
    path = folder / f"{name}.py"
    path.write_bytes(files["src/models.py"])
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves forward references through sys.modules
    spec.loader.exec_module(module)
    return module, files


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_output_models_accept_every_value_their_schema_accepts(data: st.DataObject) -> None:
    outputs = data.draw(st.lists(schemas(), min_size=1, max_size=5), label="output schemas")
    models, _ = output_models(outputs)
    for index, output in enumerate(outputs):
        model = getattr(models, f"Op{index}Output")
        validator = Draft202012Validator({**output, "$defs": DEFINITIONS})
        for _ in range(6):
            value = data.draw(values(output), label=f"value for op{index}")
            if not validator.is_valid(value):
                continue
            try:
                kept = model.model_validate(value).model_dump(mode="json", by_alias=True, exclude_unset=True)
            except ValidationError as exc:
                raise AssertionError(f"{json.dumps(output)} accepts {value!r}, the model refuses it: {exc}") from exc
            # nothing dropped or converted (the stubs' `typed` refuses a model that would change the answer)
            assert same_json(kept, value), (output, value, kept)




ACCEPTED: list[tuple[str, Any, Any]] = [
    ("tuple items without type (the issue's 'get conversation info')", {"prefixItems": [{"type": "string"}]},
     {"channel": {"id": "C1"}, "ok": True}),
    ("tuple items typed", {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
     ["a", 2, 3]),
    ("untyped properties, a scalar answer", {"properties": {"a": {"type": "string"}}}, "plain text"),
    ("untyped items, an object answer", {"items": {"type": "integer"}}, {"n": 1}),
    ("format", {"type": "string", "format": "date-time"}, "yesterday"),
    ("additionalProperties absent: extra keys", {"type": "object", "properties": {"a": {"type": "integer"}}},
     {"a": 1, "unlisted": {"x": 1}}),
    ("an unlisted discriminator tag", {"oneOf": [{"type": "object", "properties": {"kind": {"type": "string"}}}],
                                       "discriminator": {"propertyName": "kind"}}, {"kind": "new-kind"}),
    ("patternProperties, no properties", {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
     {"y": "text"}),
    ("nullable enum", {"enum": ["a", None]}, None),
]
"""Values the schema accepts that the generator's models refused."""

BROKEN: list[tuple[str, Any, Any]] = [
    ("minLength the real value misses", {"type": "object", "properties": {"sha": {"type": "string",
                                                                                   "minLength": 40}}},
     {"sha": "abc"}),
    ("additionalProperties false", {"type": "object", "properties": {"a": {"type": "integer"}},
                                    "additionalProperties": False}, {"a": 1, "b": 2}),
    ("a shared definition's constraints", {"$ref": "#/$defs/Shared"}, {"name": "X"}),
    ("a recursive untyped definition", {"$ref": "#/$defs/Tree"}, {"label": "long", "children": [{"label": "x"}]}),
]
"""Values that break their document's constraints (not its types): still typed, since real APIs do this."""


def test_the_constructs_one_by_one() -> None:
    models, _ = output_models([schema for _, schema, _ in ACCEPTED + BROKEN])
    for index, (what, schema, value) in enumerate(ACCEPTED + BROKEN):
        accepted = Draft202012Validator({**schema, "$defs": DEFINITIONS}).is_valid(value)
        assert accepted == (index < len(ACCEPTED)), what
        getattr(models, f"Op{index}Output").model_validate(value)
    kept = models.Op5Output.model_validate({"a": 1, "unlisted": {"x": 1}})
    assert kept.model_dump() == {"a": 1, "unlisted": {"x": 1}}  # data the document did not list stays


def test_inputs_stay_strict_where_outputs_are_lenient() -> None:
    """`Shared` is an input's body and an output: the output model is `Shared` (lenient), the input's is a strict
    copy, `SharedInput` (its constraints, `extra='forbid'`), which the stub's parameter names."""
    models, files = output_models([{"$ref": "#/$defs/Shared"}])
    assert "body: _models.SharedInput," in files["src/tools.py"].decode()
    models.Shared.model_validate({"name": "X", "other": 1})
    with pytest.raises(ValidationError):
        models.SharedInput.model_validate({"name": "X"})  # too short and not lowercase
    with pytest.raises(ValidationError):
        models.SharedInput.model_validate({"name": "abc", "other": 1})
    with pytest.raises(ValidationError):
        models.Op0Input.model_validate({"body": {"name": "X"}})
    assert isinstance(models.Op0Input.model_validate({"body": {"name": "abc"}}).body, models.SharedInput)
    assert isinstance(models.Op0Output.model_validate({"name": "X", "other": 1}).root, models.Shared)


BOOLEAN_BESIDE_NUMBERS = [
    {"anyOf": [{"anyOf": [{"type": "boolean"}, {"type": "integer"}]}, {"type": "null"}]},  # hypothesis found it
    {"anyOf": [{"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, {"type": "null"}]},
    {"anyOf": [{"type": "boolean"}, {"type": "integer"}]},
    {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
    {"type": ["boolean", "integer", "null"]},
    {"type": ["integer", "boolean"]},
    {"anyOf": [{"type": "boolean"}, {"type": "number"}]},
    {"type": "object", "properties": {"flag": {"type": ["boolean", "number"]}}},
]


def test_a_boolean_beside_numbers_keeps_every_number_and_boolean() -> None:
    """Issue: for `bool | int`, pydantic's smart union took the answer `0.0` (the integer 0 in JSON Schema) as
    `False` (a lax `bool` accepts 0, 1, 0.0, 1.0 and wins the tie with `int`'s lax float). Output booleans are
    `StrictBool`: each value keeps its JSON type, in either member order."""
    models, _ = output_models(BOOLEAN_BESIDE_NUMBERS)
    for index, schema in enumerate(BOOLEAN_BESIDE_NUMBERS):
        validator = Draft202012Validator(schema)
        for answer in (0.0, 1.0, 0, 1, 2.0, True, False, None):
            value = {"flag": answer} if schema.get("type") == "object" else answer
            if not validator.is_valid(value):
                continue
            kept = getattr(models, f"Op{index}Output").model_validate(value).model_dump(mode="json", by_alias=True,
                                                                                        exclude_unset=True)
            assert same_json(kept, value), (schema, value, kept)  # `false` is not `0` in JSON
            assert (type(_flag(kept)) is bool) == (type(answer) is bool), (schema, value, kept)


def _flag(value: Any) -> Any:
    return value["flag"] if isinstance(value, dict) else value


def test_inputs_keep_plain_booleans_and_documents_pick_no_types() -> None:
    """Only the output rewrite makes booleans strict (a stub's `flag: bool` parameter stays `bool`), and an `x-`
    key in a document never reaches the generator, `x-python-type` included."""
    body = {"type": "object", "properties": {"flag": {"type": "boolean"}}}
    source = Source(id="src", kind="openapi", location="src", definitions=DEFINITIONS)
    tool = Tool(id="openapi:src:op0", source="src", name="op0", description="", input_schema=body,
                output_schema={"type": "object", "properties": {
                    "flag": {"type": "boolean"},
                    "text": {"type": "string", "x-python-type": "pydantic.StrictBool"},
                    "other": {"type": "boolean", "x-python-type": "pydantic.StrictBool", "x-python-import": "os"}}},
                binding=McpBinding(server="src", tool_name="op0"))
    diagnostics = Diagnostics()
    build = Build(config=Config(), catalog=Catalog((source,), (tool,)), resolver=RefResolver(diagnostics),
                  diagnostics=diagnostics, targets=())
    code = SourcePackage(build, source, [tool], "src").generate()["src/models.py"].decode()
    assert "flag: bool | None = None" in code.split("class Op0Output")[0]
    output = code.split("class Op0Output")[1]
    assert "flag: StrictBool | None = None" in output
    assert "text: str | None = None" in output
    assert "other: StrictBool | None = None" in output and "import os" not in code
