"""One case per rule of providers.md §1-3 that lowering enforces: each fixture feeds a schema that breaks the rule
(`fixtures/providers/rules/*.json`: rule, targets, schema, expect), and the output must obey it and pass the
validator. Adding a case means adding a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.providers.registry import validate
from compiler.refs import PointerError
from tests.support.paths import FIXTURES
from tests.support.providers import config, lower_one, parameters_of, resolve


def _types_lower(value: Any, pointer: str) -> Any:
    """Gemini writes `type` as the proto enum (STRING); fixtures use JSON Schema's lower case."""
    if pointer.endswith("/type") and isinstance(value, str):
        return value.lower()
    if isinstance(value, dict):
        return {k: _types_lower(v, f"{pointer}/{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_types_lower(v, f"{pointer}/{i}") for i, v in enumerate(value)]
    return value


CASES = sorted((FIXTURES / "providers" / "rules").glob("*.json"))


def _params(case: dict[str, Any], target: str) -> tuple[Any, Any, Any]:
    result = lower_one(case["schema"], target, config(**case.get("config", {})),
                       name=case.get("tool_name", "tool"), description=case.get("description", "A tool."))
    assert len(result.lowered) == 1, [d.render() for d in result.diagnostics]
    lowered = result.lowered[0]
    return lowered, parameters_of(target, lowered.definition), result


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_rule(path: Path) -> None:
    case = json.loads(path.read_text())
    expect = case["expect"]
    assert case["targets"], path
    for target in case["targets"]:
        lowered, params, result = _params(case, target)
        assert validate(target, lowered.definition) == [], (target, case["rule"])
        codes = {d.code for d in result.diagnostics}
        assert set(expect.get("codes", ())) <= codes, (target, case["rule"], codes)
        if "strict" in expect:
            assert lowered.strict is expect["strict"], (target, case["rule"])
        for pointer, value in expect.get("params", {}).items():
            assert _types_lower(resolve(params, pointer), pointer) == value, (target, pointer)
        for pointer in expect.get("absent", ()):
            with pytest.raises(PointerError):
                resolve(params, pointer)
        if "declaration_key" in expect:
            assert expect["declaration_key"] in lowered.definition
        name = lowered.name
        assert len(name) <= 64


def test_every_case_changes_something() -> None:
    """A rule case whose schema already obeys every rule proves nothing: each must report or rewrite."""
    for path in CASES:
        case = json.loads(path.read_text())
        for target in case["targets"]:
            _lowered, params, result = _params(case, target)
            assert result.diagnostics or params != case["schema"], (path.stem, target)
