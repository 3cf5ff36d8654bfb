"""`toolc serve` as an MCP server, judged by clients nobody here wrote: the official SDK's `mcp.Client` over stdio
and over Streamable HTTP (both protocol eras), and the MCP Inspector's command line. Behind the served project: an
OpenAPI fixture on a loopback HTTP server, and the recorded listings of mcp-server-time and server-everything,
which are started for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.servers.real import HERE, require_everything
from tests.support.loopback import Recorder, recording_api
from tests.support.serve import (
    API_KEY,
    PRESETS,
    audit_rows,
    serve_args,
    serve_env,
    serving_http,
    write_project,
)

INSPECTOR = HERE / "node_modules" / ".bin" / "mcp-inspector"
PAGE_SIZE = 7
pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node = require_everything()
    return write_project(tmp_path_factory.mktemp("served"), node)


@pytest.fixture
def catalog(project: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((project.parent / "out" / "catalog.json").read_text())
    return {tool["name"]: tool for tool in document["tools"]}


@pytest.fixture
def environ(http_api: str, project: Path) -> dict[str, str]:
    (project.parent / "toolc_audit.sqlite3").unlink(missing_ok=True)
    return serve_env(http_api)


@pytest.fixture
def http_api() -> Iterator[str]:
    with recording_api() as url:
        yield url


def camel(annotations: dict[str, Any]) -> dict[str, Any]:
    return {"".join(part if i == 0 else part.title() for i, part in enumerate(key.split("_"))): value
            for key, value in annotations.items()}


def stand_in_description(compiled: dict[str, Any]) -> str:
    """What a tool without a description is served with: its title, or its HTTP method and path."""
    binding = compiled["binding"]
    return compiled.get("title") or f"{binding['method']} {binding['path']}"


async def list_everything(client: Client) -> tuple[list[Any], int]:
    tools: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return tools, pages


async def check_listing(client: Client, catalog: dict[str, dict[str, Any]]) -> None:
    tools, pages = await list_everything(client)
    names = [tool.name for tool in tools]
    assert sorted(names) == sorted(catalog) and len(set(names)) == len(names)
    assert pages == -(-len(catalog) // PAGE_SIZE) > 1
    for tool in tools:
        compiled = catalog[tool.name]
        assert tool.description == (compiled["description"] or stand_in_description(compiled))
        served = {key: value for key, value in tool.input_schema.items() if key != "$defs"}
        assert served == compiled["input_schema"], tool.name
        if compiled["binding"]["kind"] == "mcp":
            assert tool.annotations is not None
            assert tool.annotations.model_dump(by_alias=True, exclude_none=True) == camel(compiled["annotations"])
    by_name = {tool.name: tool for tool in tools}
    time_output = by_name["get_current_time"].output_schema
    assert time_output == catalog["get_current_time"]["output_schema"]
    pet = by_name["getPet"]
    assert pet.output_schema is not None and pet.output_schema["type"] == "object"
    assert set(pet.output_schema["$defs"]) == {"NewPet"}  # only the definitions it reaches
    assert pet.annotations is not None and pet.annotations.read_only_hint is True
    update = by_name["updatePet"]
    assert not set(PRESETS) & set(update.input_schema["properties"])  # presets are hidden from the model
    assert update.annotations is not None and update.annotations.idempotent_hint is True


async def check_calls(client: Client, project: Path) -> None:
    now = await client.call_tool("get_current_time", {"timezone": "UTC"})
    assert not now.is_error, now.content
    assert now.structured_content is not None and now.structured_content["timezone"] == "UTC"

    echoed = await client.call_tool("echo", {"message": "hello through the router"})
    assert not echoed.is_error and "hello through the router" in echoed.content[0].text

    updated = await client.call_tool("updatePet", {"id_path": 42, "id": 43, "name": "Rex", "tags": ["a", "b"],
                                                   "X-Trace-Id": "t-1"})
    assert not updated.is_error, updated.content
    put = Recorder.requests[-1]
    assert (put["method"], put["path"]) == ("PUT", "/v1/pets/42")
    assert sorted(put["query"]) == [("dryRun", "true"), ("tags", "a,b")]
    assert put["headers"]["x-trace-id"] == "t-1" and put["headers"]["x-api-key"] == API_KEY
    assert put["headers"]["cookie"] == "session=s-fixed"
    assert put["body"] == {"id": 43, "name": "Rex"}

    pet = await client.call_tool("getPet", {"id": 9})  # the SDK checks the result against the outputSchema
    assert not pet.is_error and pet.structured_content == {"echo": {"path": "/v1/pets/9", "method": "GET"},
                                                           "id": 7, "name": "Rex"}

    sent = len(Recorder.requests)
    wrong = await client.call_tool("getPet", {"id": "nine"})
    assert wrong.is_error and "/id: 'nine' is not of type 'integer'" in wrong.content[0].text
    denied = await client.call_tool("get-env", {})
    assert denied.is_error and denied.content[0].text.startswith("denied by disabled:")
    assert len(Recorder.requests) == sent  # refused before any I/O

    rows = audit_rows(project)
    violations = [(tool, payload["gate"]) for _, kind, tool, payload in rows if kind == "policy_violation"]
    assert violations == [("openapi:params:getPet", "validation"), ("mcp:everything:get-env", "disabled")]
    ended = [tool for _, kind, tool, _ in rows if kind == "tool_invocation_end"]
    assert ended == ["mcp:time:get_current_time", "mcp:everything:echo", "openapi:params:updatePet",
                     "openapi:params:getPet"]


async def test_sdk_client_over_stdio(project: Path, catalog: dict[str, dict[str, Any]],
                                     environ: dict[str, str]) -> None:
    server = StdioServerParameters(command=sys.executable, args=serve_args(project, "--page-size", str(PAGE_SIZE)),
                                   env=environ, cwd=str(project.parent))
    async with Client(server, read_timeout_seconds=60) as client:
        await check_listing(client, catalog)
        await check_calls(client, project)


async def test_sdk_client_over_streamable_http(project: Path, catalog: dict[str, dict[str, Any]],
                                               environ: dict[str, str]) -> None:
    with serving_http(project, environ, "--page-size", str(PAGE_SIZE)) as (url, _):
        async with Client(f"{url}/mcp", read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            await check_listing(client, catalog)
            await check_calls(client, project)
        # The handshake era (2025-11-25 and before: what most clients speak) gets the same tools.
        async with Client(f"{url}/mcp", mode="legacy", read_timeout_seconds=60) as legacy:
            assert legacy.protocol_version != "2026-07-28"
            await check_listing(legacy, catalog)
            pet = await legacy.call_tool("getPet", {"id": 5})
            assert not pet.is_error and pet.structured_content is not None
            assert Recorder.requests[-1]["path"] == "/v1/pets/5"


def inspector(*args: str, project: Path, environ: dict[str, str]) -> Any:
    if not INSPECTOR.exists():
        if os.environ.get("CI"):
            pytest.fail("the MCP Inspector is not installed (npm ci --prefix tests/servers)")
        pytest.skip("the MCP Inspector is not installed: npm ci --prefix tests/servers")
    env = {**environ, "MCP_CATALOG_PATH": str(project.parent / "inspector-catalog.json")}
    # The Inspector starts the server with a minimal environment: pass on what the served project reads.
    passed = [arg for key in ("PATH", "PARAMS_API_URL", "TOOLC_PARAMS_APIKEY", "TOOLC_PARAMS_BEARER")
              for arg in ("-e", f"{key}={environ[key]}")]
    command = [str(INSPECTOR), "--cli", *passed, *args, "--transport", "stdio", "--", sys.executable,
               *serve_args(project)]
    run = subprocess.run(command, env=env, cwd=project.parent, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)


def test_mcp_inspector_cli_lists_and_calls(project: Path, catalog: dict[str, dict[str, Any]],
                                           environ: dict[str, str]) -> None:
    assert shutil.which("node")
    listed = inspector("--method", "tools/list", project=project, environ=environ)
    names = {tool["name"] for tool in listed["tools"]}
    assert len(listed["tools"]) == len(catalog) and {"getPet", "updatePet", "get_current_time", "echo"} <= names
    called = inspector("--method", "tools/call", "--tool-name", "getPet", "--tool-arg", "id=3",
                       project=project, environ=environ)
    assert called["isError"] is False and called["structuredContent"]["id"] == 7
    assert Recorder.requests[-1]["path"] == "/v1/pets/3"
    now = inspector("--method", "tools/call", "--tool-name", "get_current_time", "--tool-arg", "timezone=UTC",
                    project=project, environ=environ)
    assert now["isError"] is False and now["structuredContent"]["timezone"] == "UTC"
