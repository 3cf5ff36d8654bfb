"""Names are compiled: per-provider manglers, the 64-char cap with a hash, server prefixes and the namesake
strategies (seed 004: raise / rename / skip / override), and the reverse map that routes calls back."""

from __future__ import annotations

import re

import pytest

from compiler.config import NamesConfig
from compiler.ir import Tool
from compiler.providers import codes
from compiler.providers.names import assign_names
from compiler.providers.registry import PROVIDERS
from tests.support.providers import TARGETS, catalog_of, config, lower, make_tool

EMPTY = {"type": "object", "properties": {}}
PATTERNS = {"openai-chat": r"^[a-zA-Z0-9_-]{1,64}$", "openai-responses": r"^[a-zA-Z0-9_-]{1,64}$",
            "anthropic": r"^[a-zA-Z0-9_-]{1,64}$", "gemini": r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$"}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("raw", ["repos/get", "a b.c:d", "9lives", "ünïcode", "x" * 200, "-", "get.user:v2"])
def test_manglers_produce_legal_names(target: str, raw: str) -> None:
    name = PROVIDERS[target].mangler(raw)
    assert re.match(PATTERNS[target], name), name
    assert PROVIDERS[target].mangler(raw) == name  # deterministic


def test_long_names_keep_room_for_suffixes_and_stay_apart() -> None:
    a, b = PROVIDERS["openai-chat"].mangler("x" * 100 + "a"), PROVIDERS["openai-chat"].mangler("x" * 100 + "b")
    assert a != b and len(a) == len(b) == 64
    tools = [make_tool(EMPTY, name="y" * 70 + str(i % 2), source=f"s{i}") for i in range(4)]
    names, _ = assign_names(tools, "openai-chat", PROVIDERS["openai-chat"].mangler,
                            NamesConfig(server_prefix="never", namesake="rename"))
    assert len(set(names.values())) == 4 and all(len(n) <= 64 for n in names.values())


def _two_servers() -> list[Tool]:
    return [make_tool(EMPTY, name="search", source="alpha"), make_tool(EMPTY, name="search", source="beta"),
            make_tool(EMPTY, name="fetch", source="alpha")]


def test_server_prefix_modes() -> None:
    tools = _two_servers()
    on_conflict, _ = assign_names(tools, "openai-chat", PROVIDERS["openai-chat"].mangler, NamesConfig())
    assert on_conflict == {"mcp:alpha:fetch": "fetch", "mcp:alpha:search": "alpha__search",
                           "mcp:beta:search": "beta__search"}
    always, _ = assign_names(tools, "openai-chat", PROVIDERS["openai-chat"].mangler,
                             NamesConfig(server_prefix="always", separator="-"))
    assert always["mcp:alpha:fetch"] == "alpha-fetch"
    gemini, _ = assign_names(tools, "gemini", PROVIDERS["gemini"].mangler,
                             NamesConfig(server_prefix="always", separator="."))
    assert gemini["mcp:beta:search"] == "beta.search"


@pytest.mark.parametrize(("strategy", "expected", "code"), [
    ("rename", {"mcp:alpha:fetch": "fetch", "mcp:alpha:search": "search", "mcp:beta:search": "search_2"},
     codes.NAMESAKE),
    ("skip", {"mcp:alpha:fetch": "fetch", "mcp:alpha:search": "search"}, codes.NAMESAKE),
    ("override", {"mcp:alpha:fetch": "fetch", "mcp:beta:search": "search"}, codes.NAMESAKE),
    ("raise", {"mcp:alpha:fetch": "fetch", "mcp:alpha:search": "search"}, codes.NAME_CLASH),
])
def test_namesake_strategies(strategy: str, expected: dict[str, str], code: str) -> None:
    names, diagnostics = assign_names(_two_servers(), "anthropic", PROVIDERS["anthropic"].mangler,
                                      NamesConfig(server_prefix="never", namesake=strategy))  # type: ignore[arg-type]
    assert names == expected
    assert [d.code for d in diagnostics] == [code]
    assert diagnostics[0].severity == codes.severity(code)


def test_reverse_map_routes_every_name_back() -> None:
    tools = _two_servers()
    for target in TARGETS:
        result = lower(catalog_of(*tools), target, config(names=NamesConfig(server_prefix="never")))
        name_map = result.name_map()
        assert name_map["format"] == 1 and name_map["target"] == target
        assert {entry["tool"] for entry in name_map["tools"].values()} == {t.id for t in tools}
        assert set(name_map["tools"]) == {item.name for item in result.lowered}
