"""JSON-Schema-Test-Suite (ref.json, defs.json, definitions.json): the original, the bundled and the inlined
schema give the same verdict on every instance, under the draft's own validator."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import NETWORK_REF, RECURSION_PRUNED, RefResolver
from tests.support.paths import FIXTURES

SUITE = FIXTURES / "refs" / "jsts"
FILES = {
    "draft2020-12/ref.json": jsonschema.Draft202012Validator,
    "draft2020-12/defs.json": jsonschema.Draft202012Validator,
    "draft7/ref.json": jsonschema.Draft7Validator,
    "draft7/definitions.json": jsonschema.Draft7Validator,
}
DRAFT7 = "http://json-schema.org/draft-07/schema#"

# Cases the resolver refuses on purpose: they `$ref` a metaschema by its https URL. The MCP 2026-07-28 spec
# forbids fetching network refs, so the resolver reports TC201 and replaces the ref (asserted below).
NETWORK_CASES = {
    "draft2020-12/ref.json::remote ref, containing refs itself",
    "draft2020-12/defs.json::validate definition against metaschema",
    "draft7/ref.json::remote ref, containing refs itself",
    "draft7/definitions.json::validate definition against metaschema",
}


def _cases() -> list[Any]:
    params = []
    for name, validator in FILES.items():
        for case in json.loads((SUITE / name).read_text()):
            case_id = f"{name}::{case['description']}"
            params.append(pytest.param(name, validator, case, id=case_id))
    return params


def _schema(name: str, case: dict[str, Any]) -> Any:
    schema = case["schema"]
    if name.startswith("draft7/") and isinstance(schema, dict) and "$schema" not in schema:
        schema = {"$schema": DRAFT7, **schema}  # the dialect is what `$schema` says (MCP: none means 2020-12)
    return schema


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return isinstance(node.get("$ref"), str) or any(
            _has_ref(v) for k, v in node.items() if k not in ("enum", "const", "default", "examples")
        )
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


@pytest.mark.parametrize(("name", "validator", "case"), _cases())
def test_same_verdicts(name: str, validator: type[Any], case: dict[str, Any]) -> None:
    case_id = f"{name}::{case['description']}"
    schema = _schema(name, case)
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    bundled = resolver.bundle(schema)
    if case_id in NETWORK_CASES:
        resolver.inline(schema)
        assert NETWORK_REF in diagnostics.codes()
        assert all(d.pointer.endswith("/$ref") for d in diagnostics if d.code == NETWORK_REF)
        return
    assert not diagnostics.has_errors, [d.render() for d in diagnostics]
    bundle_diagnostics = len(diagnostics)
    inlined = resolver.inline(schema)
    pruned = RECURSION_PRUNED in diagnostics.codes()
    assert all(d.code == RECURSION_PRUNED for d in diagnostics.items[bundle_diagnostics:])
    assert not _has_ref(inlined)
    if isinstance(bundled, dict):
        defs = bundled.get("$defs", {})
        for ref in _refs(bundled):
            assert ref.startswith("#/$defs/")  # every ref is root-local
            assert ref.split("/")[2] in {_token(n) for n in defs}
    for test in case["tests"]:
        expected = test["valid"]
        assert validator(schema).is_valid(test["data"]) is expected
        assert validator(bundled).is_valid(test["data"]) is expected, test["description"]
        if not pruned:
            assert validator(inlined).is_valid(test["data"]) is expected, test["description"]


def _token(name: str) -> str:
    from compiler.refs import defs_ref

    return defs_ref(name).split("/")[2]


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.append(node["$ref"])
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                found.extend(_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_refs(value))
    return found


def test_recursive_cases_are_pruned_and_reported() -> None:
    """`inline` of a recursive suite schema terminates with TC205 naming the offending `$ref`."""
    case = next(
        c
        for c in json.loads((SUITE / "draft2020-12/ref.json").read_text())
        if c["description"] == "root pointer ref"
    )
    diagnostics = Diagnostics()
    inlined = RefResolver(diagnostics, max_depth=2).inline(case["schema"])
    assert [(d.code, d.pointer) for d in diagnostics] == [(RECURSION_PRUNED, "/properties/foo/$ref")]
    depth, node = 0, inlined
    while "properties" in node and "foo" in node["properties"]:
        node, depth = node["properties"]["foo"], depth + 1
    assert depth == 3  # the root, then unrolled twice, then the pruned stub
    assert not _has_ref(inlined)
