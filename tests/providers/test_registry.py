"""The provider registry: every target list derives from it, and a new provider is one `Dialect` subclass plus
one registry entry (docs/ARCHITECTURE.md). Nothing outside a dialect module branches on a target's name."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from compiler.commands.support import parse_targets
from compiler.config import ALL_TARGETS, Config
from compiler.ir import JsonObject, Tool
from compiler.pipeline import adhoc_inputs, compile_project
from compiler.providers import codes
from compiler.providers.base import Capabilities, Lowering, on
from compiler.providers.dialect import Dialect, Lowered, LowerEnv
from compiler.providers.names import Mangler
from compiler.providers.passes import drop_annotations
from compiler.providers.registry import ALIASES, PROVIDERS, TARGETS
from compiler.providers.validate import Violation
from tests.support.paths import FIXTURES, ROOT


def test_every_target_list_derives_from_the_registry() -> None:
    assert ALL_TARGETS == TARGETS == tuple(PROVIDERS) == ("openai-chat", "openai-responses", "anthropic", "gemini")
    assert parse_targets("openai,claude") == ("openai-chat", "openai-responses", "anthropic")
    assert ALIASES["all"] == TARGETS
    assert all(dialect.target == target for target, dialect in PROVIDERS.items())


def test_no_target_name_outside_the_dialects() -> None:
    """No code outside the target names' leaf module and the dialect modules names a target (docstrings may)."""
    names = {*TARGETS, *ALIASES} - {"all"}  # "all" names no provider
    dialects = {"targets.py", "providers/openai.py", "providers/anthropic.py", "providers/gemini.py"}
    found = []
    for path in sorted((ROOT / "compiler").rglob("*.py")):
        relative = path.relative_to(ROOT / "compiler").as_posix()
        if relative in dialects:
            continue
        tree = ast.parse(path.read_text())
        prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        found += [f"{relative}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in names and id(node) not in prose]
    assert found == []


@on("title")
def _no_titles(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if "title" in node:
        del node["title"]
        ctx.loss(codes.DROPPED, pointer, "dropped title")
    return node


class EchoDialect(Dialect):
    """A made-up provider: inlined schemas under `schema`, lower-case names, no strict mode."""

    target = "echo"
    caps = Capabilities(target=target, name_pattern=re.compile(r"^[a-z0-9_]{1,32}$"), max_name_length=32,
                        strict_field=False)
    mangler = Mangler(re.compile(r"[^a-z0-9_]"), max_length=32)
    resolution = "inline"
    loose_passes = (drop_annotations, _no_titles)

    def wrap(self, tool: Tool, name: str, parameters: JsonObject, ctx: Lowering, env: LowerEnv, *,
             strict: bool) -> Lowered:
        return Lowered(tool=tool, name=name, definition={"name": name, "schema": parameters}, parameters=parameters,
                       strict=False, losses=ctx.losses, problems=ctx.problems)

    def validate(self, definition: Mapping[str, Any]) -> list[Violation]:
        name = definition.get("name")
        ok = isinstance(name, str) and self.caps.name_pattern.match(name) and "$ref" not in json.dumps(definition)
        return [] if ok else [Violation("", "echo", "bad definition")]


def test_a_new_provider_is_one_dialect_and_one_registry_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "echo", EchoDialect())  # what one line in registry._DIALECTS does
    inputs = adhoc_inputs([FIXTURES / "mcp" / "mcp-server-time.json", FIXTURES / "openapi" / "params.yaml"], ROOT)
    build = compile_project(Config(root=ROOT), inputs, targets=("echo", "gemini"), out_dir=tmp_path / "out")
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics]
    emitted = json.loads(build.files["schemas/echo.json"])
    assert {d["name"] for d in emitted} >= {"get_current_time", "get_et"}  # its own name rules: getPet → get_et
    assert all("title" not in json.dumps(d) for d in emitted)
    names = json.loads(build.files["schemas/echo.names.json"])
    assert names["tools"]["get_current_time"]["tool"] == "mcp:mcp-server-time:get_current_time"
    assert build.lock is not None and "echo" in build.lock["tools"]["mcp:mcp-server-time:get_current_time"]["providers"]
    tables = json.loads(build.files["python/toolc_router/_tables.json"])
    echo = tables["name_tables"][tables["name_maps"]["echo"]]  # the router routes the new provider's calls too
    assert echo["get_current_time"]["tool_id"] == "mcp:mcp-server-time:get_current_time"
    assert build.summary("echo")["tools"] == len(emitted)
