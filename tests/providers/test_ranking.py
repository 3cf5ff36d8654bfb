"""Discovery search (`compiler.providers.ranking`, copied into every router): what a person types finds the tool they
mean. The queries in `fixtures/discovery/queries.yaml` were written from what a person wants, with the tools they
would accept; recall@5 is the share of queries with an accepted tool among the first five results."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compiler.commands.live import search_tools
from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Tool
from compiler.pipeline import adhoc_inputs, read_catalog
from compiler.providers.ranking import SearchEntry, SearchIndex, query_words, words
from compiler.refs import RefResolver
from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES

QUERIES = yaml.safe_load((FIXTURES / "discovery" / "queries.yaml").read_text())
DOCUMENTS = {"github": FIXTURES / "corpus" / "openapi" / "github.json",
             "stripe": FIXTURES / "corpus" / "openapi" / "stripe.json"}


@pytest.fixture(scope="module")
def catalogs() -> dict[str, list[Tool]]:
    found: dict[str, list[Tool]] = {}
    for name, path in DOCUMENTS.items():
        diagnostics = Diagnostics()
        catalog = read_catalog(Config(root=path.parent), adhoc_inputs([path], path.parent),
                               RefResolver(diagnostics), diagnostics)
        found[name] = list(catalog.tools)
    return found


def _operation(tool: Tool) -> str:
    return tool.id.split(":", 2)[2]


def _substring_search(tools: list[Tool], query: str, limit: int) -> list[Tool]:
    """The search this one replaced: tools whose id, name or description contain every word, in catalog order."""
    wanted = query.lower().split()
    hits = [tool for tool in tools if all(word in f"{tool.id} {tool.name} {tool.description}".lower()
                                          for word in wanted)]
    return hits[:limit]


def _recall_at_5(catalogs: dict[str, list[Tool]], search: object) -> tuple[float, list[str]]:
    misses: list[str] = []
    total = 0
    for document, queries in QUERIES.items():
        for entry in queries:
            total += 1
            found = [_operation(tool) for tool in search(catalogs[document], entry["query"], 5)]  # type: ignore[operator]
            if not set(entry["accept"]) & set(found):
                misses.append(f"{document}: {entry['query']!r} -> {found}")
    return 1 - len(misses) / total, misses


def test_the_query_set_is_large_enough_and_names_real_tools(catalogs: dict[str, list[Tool]]) -> None:
    assert sum(len(queries) for queries in QUERIES.values()) >= 40
    for document, queries in QUERIES.items():
        operations = {_operation(tool) for tool in catalogs[document]}
        for entry in queries:
            assert set(entry["accept"]) <= operations, entry


def test_recall_at_5_is_at_least_90_percent_and_beats_the_substring_search(
        catalogs: dict[str, list[Tool]], capsys: pytest.CaptureFixture[str]) -> None:
    recall, misses = _recall_at_5(catalogs, search_tools)
    old_recall, _ = _recall_at_5(catalogs, _substring_search)
    with capsys.disabled():
        print(f"\n[discovery search] recall@5 {recall:.1%} (substring search: {old_recall:.1%}); misses: {misses}")
    assert recall >= 0.9, misses
    assert recall > old_recall


@pytest.mark.parametrize(("text", "expected"), [
    ("conversations_info", ["convers", "info"]),
    ("conversation info", ["convers", "info"]),
    ("PostPaymentIntentsIntentConfirm", ["post", "payment", "intent", "intent", "confirm"]),
    ("pulls/request-reviewers", ["pull", "request", "request", "review"]),
    ("listForRepo", ["list", "repositori"]),
    ("merge a PR", ["merg", "pull", "request"]),
    ("<p>With <a href=\"/docs/connect\">Connect</a>, see https://example.com/x</p>", ["connect", "see"]),
    ("the of a", []),
])
def test_words_are_cut_the_way_tool_names_are_written(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_a_query_verb_also_looks_for_the_verb_apis_use() -> None:
    assert query_words("open a new issue") == ["open", "new", "issu", "creat"]


def test_ranking_is_deterministic_and_ties_go_to_the_first_key() -> None:
    entries = [SearchEntry(key=f"t{n}", name="delete_thing", description="Delete a thing.") for n in (3, 1, 2)]
    entries.append(SearchEntry(key="other", name="list_things", description="List things.", parameters=("limit",)))
    index = SearchIndex(entries)
    assert index.search("delete thing", 10)[:3] == ["t1", "t2", "t3"]
    assert index.search("delete thing", 10) == SearchIndex(list(reversed(entries))).search("delete thing", 10)
    assert index.search("limit", 1) == ["other"], "parameter names are searched"
    assert index.search("nothing matches this", 5) == []
    assert index.search("", 5) == [] and index.search("delete", 0) == []
    assert SearchIndex([]).search("anything", 5) == []


def test_toolc_list_search_ranks_through_the_cli(tmp_path: Path) -> None:
    result = run_toolc("list", DOCUMENTS["stripe"], "--search", "attach payment method to customer", "--limit",
                       "3", "--json")
    assert result.exit_code == 0, result.stderr
    assert '"openapi:stripe:PostPaymentMethodsPaymentMethodAttach"' in result.stdout.split("}")[0]


def test_a_crafted_query_is_read_only_so_far_and_cannot_grow_the_stem_cache() -> None:
    """A query is a model's text: a megabyte of distinct made-up words reads as its first MAX_QUERY characters,
    and the stem cache stays bounded however many distinct words arrive."""
    from compiler.providers import ranking

    index = SearchIndex([SearchEntry(key="t", name="delete_thing", description="Delete a thing.")])
    noise = " ".join(f"zq{n}x" for n in range(200_000))
    assert index.search("delete " + noise, 5) == ["t"]
    assert index.search(noise + " delete", 5) == [], "the words past the first MAX_QUERY characters are not read"
    assert ranking._stem.cache_info().maxsize == ranking.STEM_CACHE
    for n in range(ranking.STEM_CACHE + 10):
        ranking._stem(f"w{n}")
    assert ranking._stem.cache_info().currsize <= ranking.STEM_CACHE
