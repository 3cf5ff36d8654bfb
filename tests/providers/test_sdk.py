"""The official SDKs accept the emitted tools: real requests through an in-process mock transport (no network);
the request body must carry the tools exactly as `schemas/<target>.json` has them."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import pytest

from compiler.config import Config
from compiler.pipeline import adhoc_inputs, compile_project
from tests.support.paths import FIXTURES, ROOT

Handler = Callable[[httpx2.Request], httpx2.Response]


@cache
def emitted() -> dict[str, Any]:
    inputs = adhoc_inputs(sorted((FIXTURES / "mcp").glob("*.json")), ROOT)
    build = compile_project(Config(root=ROOT), inputs, out_dir=Path("/nonexistent-toolc-out"))
    return {path: json.loads(content) for path, content in build.files.items() if path.startswith("schemas/") and path.endswith(".json")}


def recorder(reply: dict[str, Any]) -> tuple[list[dict[str, Any]], Handler]:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    return seen, handle


@pytest.mark.parametrize("form", ["", "code."])  # every tool, and code mode's two tools
def test_openai_chat_completions_request_carries_the_tools(form: str) -> None:
    import openai

    tools = emitted()[f"schemas/{form}openai-chat.json"][:40]
    reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}
    seen, handle = recorder(reply)
    client = openai.OpenAI(api_key="k", base_url="http://mock/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)
    assert seen[0]["tools"] == tools
    assert all(isinstance(t["function"]["strict"], bool) for t in seen[0]["tools"])


@pytest.mark.parametrize("form", ["", "code."])  # every tool, and code mode's two tools
def test_openai_responses_request_carries_the_tools(form: str) -> None:
    import openai

    tools = emitted()[f"schemas/{form}openai-responses.json"][:40]
    reply = {"id": "r", "object": "response", "created_at": 0, "model": "m", "status": "completed", "output": [],
             "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    seen, handle = recorder(reply)
    client = openai.OpenAI(api_key="k", base_url="http://mock/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    client.responses.create(model="m", input="hi", tools=tools)
    assert seen[0]["tools"] == tools


@pytest.mark.parametrize("form", ["", "code."])  # every tool, and code mode's two tools
def test_anthropic_messages_request_carries_the_tools(form: str) -> None:
    import anthropic

    tools = emitted()[f"schemas/{form}anthropic.json"]
    reply = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "ok"}],
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    seen, handle = recorder(reply)
    client = anthropic.Anthropic(api_key="k", base_url="http://mock", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}], tools=tools)
    assert seen[0]["tools"] == tools


@pytest.mark.parametrize("form", ["", "code."])
@pytest.mark.parametrize("transport_module", ["httpx2", "httpx"])
def test_gemini_generate_content_request_carries_the_tools(transport_module: str, form: str) -> None:
    from google import genai
    from google.genai import types

    tools = emitted()[f"schemas/{form}gemini.json"]
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
    seen: list[dict[str, Any]] = []
    module: Any = __import__(transport_module)

    def handle(request: Any) -> Any:
        seen.append(json.loads(request.content))
        return module.Response(200, json=reply)

    client_args = {"httpx_client": module.Client(transport=module.MockTransport(handle))}
    try:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url="http://mock", **client_args))
    except Exception:
        pytest.skip(f"google-genai does not take a {transport_module} client")
    client.models.generate_content(model="gemini-x", contents="hi",
                                   config=types.GenerateContentConfig(tools=tools))
    # google-genai re-serialises declarations through its pydantic models (snake_case field names inside
    # `parameters`, None dropped), so "exactly as emitted" is checked through those models.
    assert seen and len(seen[0]["tools"]) == len(tools) == 1
    sent, ours = (types.Tool.model_validate(t[0]) for t in (seen[0]["tools"], tools))
    assert sent == ours
    assert [d["name"] for d in seen[0]["tools"][0]["functionDeclarations"]] == \
        [d["name"] for d in tools[0]["functionDeclarations"]]
