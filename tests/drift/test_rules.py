"""One minimal before/after pair per row of the rule table (fixtures/drift/rules/<rule>.json), plus the
cosmetic changes that must not reach the stub and wire audiences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.commands.check import compile_alone, diff_inputs
from compiler.drift.diff import DriftReport
from compiler.drift.rules import RULES, Level
from tests.support.paths import FIXTURES

RULE_FIXTURES = FIXTURES / "drift" / "rules"
CASES = sorted(RULE_FIXTURES.glob("*.json"))
CHECK_ONLY = {"provider-output-changed", "tool-changed"}  # need a lock: tests/drift/test_check.py


def diff_documents(tmp_path: Path, before: Any, after: Any) -> DriftReport:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(before))
    new.write_text(json.dumps(after))
    return diff_inputs(compile_alone(old), compile_alone(new), old, new)


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_rule(case: Path, tmp_path: Path) -> None:
    data = json.loads(case.read_text())
    report = diff_documents(tmp_path, data["before"], data["after"])
    assert sorted({c.change for c in report.changes}) == data["expect"], [c.to_json() for c in report.changes]
    rule = RULES[data["rule"]]
    found = [c for c in report.changes if c.change == data["rule"]]
    assert found and all(c.levels == rule.levels for c in found)
    # The fixture states the levels as literals, so a change to the table without the fixture fails here.
    assert all(c.levels.to_json() == data["levels"] for c in found), (data["levels"], rule.levels.to_json())
    assert all(c.pointer.startswith("/") or c.change in ("tool-added", "tool-removed", "tool-renamed") for c in found)


def test_every_rule_has_a_case() -> None:
    assert {c.stem for c in CASES} | CHECK_ONLY == set(RULES)


def test_rule_table_levels_match_the_reference() -> None:
    # Spot checks against reference/drift.md §4.4.
    assert RULES["tool-removed"].levels.worst() is Level.ERR
    assert (RULES["tool-added"].levels.stub, RULES["tool-added"].levels.model) == (Level.INFO, Level.WARN)
    assert RULES["input-property-removed"].levels.wire is Level.WARN
    assert RULES["input-property-removed-closed"].levels.wire is Level.ERR
    assert RULES["output-schema-removed"].levels.wire is Level.WARN


def _listing(schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"tools": [{"name": "t", "description": "d", "inputSchema": schema, **extra}]}


COSMETIC = {
    "key order": (
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]},
        {"required": ["a"], "properties": {"a": {"maxLength": 3, "type": "string"}}, "type": "object"},
    ),
    "$ref restructuring": (
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer", "minimum": 0}}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/List"}},
         "$defs": {"List": {"type": "array", "items": {"$ref": "#/$defs/Count"}},
                   "Count": {"type": "integer", "minimum": 0}}},
    ),
    "schema title": (
        {"type": "object", "properties": {"a": {"type": "string", "title": "A"}}},
        {"type": "object", "properties": {"a": {"type": "string", "title": "The A"}}},
    ),
    "required order": (
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]},
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["b", "a"]},
    ),
}


@pytest.mark.parametrize("name", sorted(COSMETIC))
def test_cosmetic_changes_do_not_reach_stub_or_wire(name: str, tmp_path: Path) -> None:
    before, after = COSMETIC[name]
    report = diff_documents(tmp_path, _listing(before), _listing(after))
    assert all(c.levels.stub is None and c.levels.wire is None for c in report.changes), report.to_json()
    if name in ("key order", "required order"):
        assert report.changes == []


def test_tool_title_is_cosmetic_for_code(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {}}
    report = diff_documents(tmp_path, _listing(schema, title="Old"), _listing(schema, title="New"))
    assert [(c.change, c.levels.stub, c.levels.wire) for c in report.changes] == [("title-changed", None, None)]


def test_recursive_schemas_compare_without_unrolling(tmp_path: Path) -> None:
    tree = {"type": "object", "properties": {"name": {"type": "string"},
                                              "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
    before = {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": tree}}
    changed = json.loads(json.dumps(before))
    changed["$defs"]["Node"]["properties"]["name"] = {"type": "integer"}
    report = diff_documents(tmp_path, _listing(before), _listing(changed))
    assert [(c.change, c.pointer) for c in report.changes] == [
        ("input-type-changed", "/inputSchema/properties/root/properties/name/type")]
