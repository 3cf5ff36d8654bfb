"""End to end: `call_tool` → generated router → real servers (mcp-server-time, server-everything, a loopback HTTP
API described by `fixtures/openapi/params.yaml`), and a model's tool call in each provider's format."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.config import OpenApiConfig, ServerConfig
from tests.support.loopback import Recorder, recording_api
from tests.support.paths import ROOT
from tests.support.router import TIME_SERVER, catalog_from, load_router, make_build, name_map, write_router

EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / "@modelcontextprotocol" / "server-everything"
EVERYTHING_SERVER = ServerConfig(id="server-everything", command=("node", str(EVERYTHING / "dist" / "index.js")),
                                 args=("stdio",), timeout_ms=30_000)
PARAMS_API = OpenApiConfig(id="params", path="fixtures/openapi/params.yaml", base_url="${PARAMS_API_URL}/v1")
NAME_MAPS = {
    "gemini": name_map("gemini", {
        "time__now": {"tool": "mcp:mcp-server-time:get_current_time", "strict": False,
                      "arguments": {"rename": {"tz": "timezone"}}},
        "params__getPet": "openapi:params:getPet"}),
    "anthropic": name_map("anthropic", {
        "mcp-server-time__get_current_time": "mcp:mcp-server-time:get_current_time"}),
    "openai-chat": name_map("openai-chat", {"time_now": "mcp:mcp-server-time:get_current_time"}),
    "openai-responses": name_map("openai-responses", {"get_pet": "openapi:params:getPet"}),
}


@pytest.fixture
def http_api() -> Iterator[str]:
    with recording_api() as url:
        yield url


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    build = make_build(catalog_from(), servers=[TIME_SERVER, EVERYTHING_SERVER], openapi=[PARAMS_API],
                       name_maps=NAME_MAPS)
    with load_router(write_router(build, tmp_path / "gen")) as module:
        yield module


@pytest.fixture
def router(rt: Any, tmp_path: Path, http_api: str) -> Iterator[Any]:
    environ = {**os.environ, "PARAMS_API_URL": http_api, "TOOLC_PARAMS_APIKEY": "k-123", "TOOLC_PARAMS_BEARER": "b-456"}
    router = rt.configure(rt.Router(audit_sink=rt.SqliteAuditSink(tmp_path / "audit.db"), environ=environ))
    yield router
    router.audit.close()


FROZEN = {"mode": "execution", "project_id": "proj", "spec_frozen": True, "spec_hash": "sha256:abc"}


def audit_rows(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT invocation_id, event_type, tool_id FROM task_audits ORDER BY id").fetchall()


@pytest.mark.servers
async def test_get_current_time_on_the_real_time_server(rt: Any, router: Any, tmp_path: Path) -> None:
    result = await rt.call_tool("mcp:mcp-server-time:get_current_time", {"timezone": "UTC"})
    assert not result.is_error, result.content
    assert result.structured["timezone"] == "UTC" and result.structured["datetime"]
    assert result.content[0]["type"] == "text"
    again = await rt.call_tool("mcp:mcp-server-time:convert_time", {
        "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    assert again.structured["target"]["datetime"].startswith(again.structured["source"]["datetime"][:10])
    assert len(router._connections) == 1  # one connection, reused
    await router.aclose()
    rows = audit_rows(tmp_path / "audit.db")
    assert [kind for _, kind, _ in rows] == ["policy_decision", "tool_invocation_start", "tool_invocation_end"] * 2


@pytest.mark.servers
async def test_a_server_everything_tool(rt: Any, router: Any) -> None:
    if not (EVERYTHING / "dist" / "index.js").is_file() or not shutil.which("node"):
        if os.environ.get("CI"):
            pytest.fail("server-everything is not installed (npm ci --prefix tests/servers)")
        pytest.skip("server-everything is not installed: npm ci --prefix tests/servers")
    result = await rt.call_tool("mcp:server-everything:get-sum", {"a": 2, "b": 3})
    assert not result.is_error, result.content
    assert "5" in result.content[0]["text"]
    echoed = await rt.call_tool("mcp:server-everything:echo", {"message": "hello router"})
    assert "hello router" in echoed.content[0]["text"]
    await router.aclose()


async def test_two_openapi_operations_over_http(rt: Any, router: Any) -> None:
    context = rt.InvocationContext(**FROZEN)
    result = await rt.call_tool("openapi:params:updatePet", {
        "id_path": 42, "id": 43, "name": "Rex", "dryRun": True, "tags": ["a", "b"], "X-Trace-Id": "t-1",
        "session": "s-9"}, context=context)
    assert not result.is_error, result.content
    assert result.structured["echo"] == {"path": "/v1/pets/42", "method": "PUT"}
    put = Recorder.requests[-1]
    assert put["path"] == "/v1/pets/42"
    assert put["query"] == [("dryRun", "true"), ("tags", "a,b")]
    assert put["headers"]["x-trace-id"] == "t-1"
    assert put["headers"]["cookie"] == "session=s-9"
    assert put["headers"]["x-api-key"] == "k-123"
    assert put["body"] == {"id": 43, "name": "Rex"}  # the body's own `id`, distinct from the renamed path `id`

    listed = await rt.call_tool("openapi:params:listPets", {"limit": 5}, context=context)
    assert not listed.is_error
    assert Recorder.requests[-1]["query"] == [("limit", "5")] and Recorder.requests[-1]["method"] == "GET"
    assert Recorder.requests[-1]["headers"]["authorization"] == "Bearer b-456"  # the document's default scheme

    created = await rt.call_tool("openapi:params:createPets", {"body": [{"name": "a"}, {"name": "b"}]},
                                 context=context)
    assert not created.is_error and Recorder.requests[-1]["body"] == [{"name": "a"}, {"name": "b"}]
    await router.aclose()


async def test_http_failures_are_error_results(rt: Any, router: Any) -> None:
    missing = await rt.call_tool("openapi:params:getPet", {"X-Trace-Id": "t"}, context=rt.InvocationContext(**FROZEN))
    assert missing.denied_by == "validation" and "/id: required argument is missing" in (missing.error or "")
    unset = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={})
    result = await unset.call_tool("openapi:params:listPets", {}, context=rt.InvocationContext(**FROZEN))
    assert result.is_error and "PARAMS_API_URL is not set" in (result.error or "")
    await router.aclose()


@pytest.mark.servers
async def test_provider_tool_calls_are_routed_back(rt: Any, router: Any) -> None:
    from anthropic.types import ToolUseBlock
    from google.genai import types as gemini
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function
    from openai.types.responses import ResponseFunctionToolCall

    context = rt.InvocationContext(**FROZEN)
    chat = ChatCompletionMessageFunctionToolCall(id="call_1", type="function", function=Function(
        name="time_now", arguments='{"timezone": "UTC"}'))
    result = await rt.call_openai_tool_call(chat, context=context)
    assert (result.call_id, result.tool_id) == ("call_1", "mcp:mcp-server-time:get_current_time")
    assert result.structured["timezone"] == "UTC"

    responses = ResponseFunctionToolCall(call_id="fc_2", name="get_pet", arguments='{"id": 9}', type="function_call")
    result = await rt.call_openai_tool_call(responses, context=context)
    assert (result.call_id, result.tool_id, result.is_error) == ("fc_2", "openapi:params:getPet", False)
    assert Recorder.requests[-1]["path"] == "/v1/pets/9"

    block = ToolUseBlock(id="toolu_3", name="mcp-server-time__get_current_time", input={"timezone": "UTC"},
                         type="tool_use")
    result = await rt.call_anthropic_tool_use(block, context=context)
    assert (result.call_id, result.structured["timezone"]) == ("toolu_3", "UTC")

    part = gemini.Part(function_call=gemini.FunctionCall(id="g4", name="time__now", args={"tz": "UTC"}))
    result = await rt.call_gemini_function_call(part, context=context)
    assert (result.call_id, result.structured["timezone"]) == ("g4", "UTC")  # `tz` renamed back to `timezone`

    as_dict = {"name": "params__getPet", "args": {"id": 5}}
    result = await rt.call_gemini_function_call(as_dict, context=context)
    assert not result.is_error and Recorder.requests[-1]["path"] == "/v1/pets/5"

    unknown = await rt.call_anthropic_tool_use({"id": "x", "name": "nope", "input": {}}, context=context)
    assert unknown.is_error and unknown.denied_by == "disabled"
    await router.aclose()


def test_everything_server_command_is_baked_from_config(rt: Any) -> None:
    spec = rt.router.SERVERS["server-everything"]
    assert spec.command[0] == "node" and spec.command[-1] == "stdio" and spec.transport == "stdio"
    assert sys.executable in rt.router.SERVERS["mcp-server-time"].command
