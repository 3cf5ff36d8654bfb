"""A lost MCP connection and retries (issue 25): a real stdio MCP server (tests/servers/flaky_stdio.py, the official
SDK) that dies mid-call. A tool its server annotates `idempotentHint` is sent again on a new connection and
succeeds; one that is not annotated is never sent twice (it may have taken effect): the call fails, saying the
connection was lost, and the next call opens a new connection. Each decision is in the call's end row."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from compiler.ir import Annotations, Catalog, McpBinding, RiskLevel, Source, Tool
from tests.support.paths import ROOT
from tests.support.router import load_router, make_build, write_router

SCRIPT = ROOT / "tests" / "servers" / "flaky_stdio.py"
CONTEXT = {"mode": "execution", "project_id": "p", "spec_frozen": True, "spec_hash": "h"}


def flaky_tool(name: str, annotations: Annotations) -> Tool:
    schema = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
    return Tool(id=f"mcp:flaky:{name}", source="flaky", name=name, description=name, input_schema=schema,
                binding=McpBinding(server="flaky", tool_name=name), risk=RiskLevel.LOW, annotations=annotations)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = (flaky_tool("append_state", Annotations()),
             flaky_tool("read_state", Annotations(idempotent_hint=True, read_only_hint=True)))
    catalog = Catalog(sources=(Source(id="flaky", kind="mcp", location="flaky"),), tools=tools)
    return write_router(make_build(catalog), tmp_path_factory.mktemp("gen"))


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


async def calls(rt: Any, folder: Path, crashes: int, tools: list[str], **settings: Any) -> list[tuple[Any, Any]]:
    router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={}, **settings)
    router.set_server_factory("flaky", lambda: StdioServerParameters(
        command=sys.executable, args=[str(SCRIPT), str(folder), str(crashes)]))
    results = [await router.call_tool(f"mcp:flaky:{tool}", {"key": "k"}, context=rt.InvocationContext(**CONTEXT))
               for tool in tools]
    await router.aclose()
    ends = [event.payload for event in router.audit.events if event.event_type == "tool_invocation_end"]
    return list(zip(results, ends, strict=True))


def seen(folder: Path) -> list[str]:
    return (folder / "seen").read_text().splitlines()


def test_the_idempotent_annotation_is_baked(rt: Any) -> None:
    assert rt.router.TOOLS["mcp:flaky:read_state"].idempotent is True
    assert rt.router.TOOLS["mcp:flaky:append_state"].idempotent is False


async def test_an_idempotent_tool_is_sent_again_on_a_new_connection(rt: Any, tmp_path: Path) -> None:
    [(result, end)] = await calls(rt, tmp_path, 1, ["read_state"])
    assert not result.is_error and result.content[0]["text"] == "state of k"
    assert seen(tmp_path) == ["read_state", "read_state"]
    assert end["retries"] == [{"error": "connection lost", "retried": True}]


async def test_a_tool_not_annotated_idempotent_is_never_sent_twice(rt: Any, tmp_path: Path) -> None:
    (lost, lost_end), (next_call, next_end) = await calls(rt, tmp_path, 1, ["append_state", "append_state"])
    assert lost.is_error and lost.error == "the connection to MCP server 'flaky' was lost during the call"
    assert lost_end["retries"] == [{"error": "connection lost", "retried": False,
                                    "why": "the tool is not annotated idempotent"}]
    assert not next_call.is_error and "retries" not in next_end  # a new connection for the next call
    assert seen(tmp_path) == ["append_state", "append_state"]


async def test_retries_of_a_lost_connection_are_bounded_by_gateway_retries(rt: Any, tmp_path: Path) -> None:
    once = (rt._types.RetrySpec(tools="read_*", max_retries=1),)
    [(result, end)] = await calls(rt, tmp_path, 5, ["read_state"], retries=once)
    assert result.is_error and seen(tmp_path) == ["read_state", "read_state"]
    assert end["retries"] == [{"error": "connection lost", "retried": True},
                              {"error": "connection lost", "retried": False,
                               "why": "retried 1 times already (at most 1)"}]
