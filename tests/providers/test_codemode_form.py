"""Code mode's form (`schemas/code.<target>.json`): two tools per target, each passing that target's validator as
every emitted definition does, the same text whatever the project (its cost does not grow with the API)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compiler.fit.codemode import EXECUTE, SEARCH_DOCS
from compiler.providers.registry import PROVIDERS, validate
from tests.support.paths import ROOT

SCHEMAS = ROOT / "generated" / "schemas"


def definitions(target: str, tools: Any) -> list[dict[str, Any]]:
    """The definitions in a target's `tools` argument (Gemini wraps them in one `functionDeclarations` tool)."""
    if target == "gemini":
        return [declaration for tool in tools for declaration in tool["functionDeclarations"]]
    return list(tools)


def name_of(definition: dict[str, Any]) -> str:
    return str(definition.get("name") or definition["function"]["name"])


@pytest.mark.parametrize("target", sorted(PROVIDERS))
def test_each_target_gets_the_two_tools_and_they_validate(target: str) -> None:
    tools = json.loads((SCHEMAS / f"code.{target}.json").read_text())
    found = definitions(target, tools)
    assert [name_of(definition) for definition in found] == [SEARCH_DOCS, EXECUTE]
    for definition in found:
        assert validate(target, definition) == [], (target, definition)


def test_the_form_costs_the_same_whatever_the_api(tmp_path: Any) -> None:
    from compiler.config import Config
    from compiler.pipeline import adhoc_inputs, compile_project

    inputs = adhoc_inputs([ROOT / "fixtures" / "openapi" / "issues.yaml"], ROOT)
    build = compile_project(Config(root=ROOT), inputs, out_dir=tmp_path / "out")
    for target in PROVIDERS:
        assert build.files[f"schemas/code.{target}.json"] == (SCHEMAS / f"code.{target}.json").read_bytes()
