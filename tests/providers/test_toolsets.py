"""Toolsets sized for use: related groups of a document merged, small ones pooled, names in whole words."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.config import Config, ToolsetsConfig
from compiler.fit.toolsets import plan_toolsets, slug
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import HttpBinding, McpBinding, Tool
from compiler.pipeline import adhoc_inputs, read_catalog
from compiler.refs import RefResolver
from tests.support.paths import FIXTURES


def _operation(source: str, name: str, tag: str) -> Tool:
    return Tool(id=f"openapi:{source}:{name}", source=source, name=name, description="", input_schema={},
                binding=HttpBinding(method="GET", path=f"/{name}", base_url="", arguments=()), extra={"tags": [tag]})


def _plan(tools: list[Tool], limit: int = 128, **settings: object) -> dict[str, tuple[str, tuple[str, ...]]]:
    toolsets, _ = plan_toolsets(tools, ToolsetsConfig.model_validate(settings), limit)
    return {toolset.name: (toolset.origin, toolset.tool_ids) for toolset in toolsets}


def _tagged(source: str, sizes: dict[str, int]) -> list[Tool]:
    return [_operation(source, f"{tag}{index}", tag) for tag, size in sizes.items() for index in range(size)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Api20100401AuthCallsCredentialListMappingResource", "api20100401-auth-calls-credential-list"),
    ("stripe-payment_intents", "stripe-payment_intents"),
    ("GitHub Enterprise Teams", "github-enterprise-teams"),
    ("twilio-Api20100401Accounts", "twilio-api20100401-accounts"),
    ("x" * 50, "x" * 40),
    ("!!!", "tools"),
])
def test_names_are_whole_words_cut_at_a_word_end(text: str, expected: str) -> None:
    assert slug(text) == expected
    assert len(slug(text)) <= 40


def test_groups_that_start_with_the_same_word_become_one_toolset() -> None:
    tools = _tagged("pay", {"payment_intents": 4, "payment_links": 3, "payment_methods": 5, "refunds": 6})
    planned = _plan(tools)
    assert sorted(planned) == ["pay-payment", "pay-refunds"]
    origin, ids = planned["pay-payment"]
    assert origin == "related" and len(ids) == 12 and list(ids) == sorted(ids)
    assert _plan(tools, merge_related=False).keys() == {"pay-payment_intents", "pay-payment_links",
                                                        "pay-payment_methods", "pay-refunds"}


def test_a_family_over_the_limit_is_packed_in_name_order_not_merged_whole() -> None:
    planned = _plan(_tagged("k", {"apps": 1, "apps_v1": 6, "apps_v2": 5, "jobs": 4}), limit=8)
    assert planned["k-apps-1"][1] == ("openapi:k:apps0", *(f"openapi:k:apps_v1{i}" for i in range(6)))
    assert planned["k-apps_v2"][0] == "tag", "a bin of one group keeps that group's name"
    assert "k-jobs" in planned


def test_small_groups_of_a_document_are_pooled_as_its_other_toolset() -> None:
    planned = _plan(_tagged("api", {"emojis": 1, "licenses": 2, "markdown": 1, "issues": 9}))
    assert planned == {
        "api-issues": ("tag", tuple(sorted(f"openapi:api:issues{i}" for i in range(9)))),
        "api-other": ("other", ("openapi:api:emojis0", "openapi:api:licenses0", "openapi:api:licenses1",
                                "openapi:api:markdown0")),
    }
    one_small = _plan(_tagged("api", {"emojis": 1, "issues": 9}))
    assert set(one_small) == {"api-emojis", "api-issues"}, "one small group alone keeps its name"
    assert set(_plan(_tagged("api", {"emojis": 1, "licenses": 2}), min_tools=1)) == {"api-emojis", "api-licenses"}


def test_an_mcp_server_and_a_glob_are_never_merged_or_pooled() -> None:
    server = [Tool(id=f"mcp:s:t{n}", source="s", name=f"t{n}", description="", input_schema={},
                   binding=McpBinding(server="s", tool_name=f"t{n}")) for n in range(2)]
    tools = server + _tagged("api", {"a": 1, "b": 1})
    planned = _plan(tools, globs={"picked": ["openapi:api:a0"]})
    assert planned["s"] == ("server", ("mcp:s:t0", "mcp:s:t1"))
    assert planned["picked"] == ("glob", ("openapi:api:a0",))
    assert planned["api-b"] == ("tag", ("openapi:api:b0",)), "a glob's tools leave the pool"


@pytest.mark.parametrize(("document", "most"), [("github", 40), ("stripe", 45), ("kubernetes", 30)])
def test_real_documents_get_no_one_tool_toolsets(document: str, most: int) -> None:
    """Before: GitHub 49 toolsets (3 of one tool), Stripe 61 (3), Kubernetes 65 (27)."""
    path = FIXTURES / "corpus" / "openapi" / f"{document}.json"
    diagnostics = Diagnostics()
    catalog = read_catalog(Config(root=Path(path.parent)), adhoc_inputs([path], path.parent),
                           RefResolver(diagnostics), diagnostics)
    toolsets, _ = plan_toolsets(catalog.tools, ToolsetsConfig(), 128)
    sizes = [len(toolset.tool_ids) for toolset in toolsets]
    assert len(toolsets) <= most and min(sizes) >= 3 and max(sizes) <= 128
    assert {tool_id for toolset in toolsets for tool_id in toolset.tool_ids} == {tool.id for tool in catalog.tools}
