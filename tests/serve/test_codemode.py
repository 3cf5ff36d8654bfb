"""`toolc serve --code-mode` end to end with the official MCP client: over stdio the model-side tools are the two
code-mode tools, a program chains three calls of a served OpenAPI fixture (a loopback GitHub issues API), and a
denied call inside it is an error the program catches; over HTTP the flat endpoint runs programs too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from tests.support.cli import compiled_project
from tests.support.issues_api import issues_api
from tests.support.paths import FIXTURES
from tests.support.serve import audit_rows, serve_args, serve_env, serving_http

pytest.importorskip("pydantic_monty")

CHAIN = """
import issues
newest = await issues.issues_list_for_repo(owner="octo", repo="demo", per_page=1)
number = newest[0]["number"]
issue = await issues.issues_get(owner="octo", repo="demo", issue_number=number)
comments = await issues.issues_list_comments(owner="octo", repo="demo", issue_number=number)
try:
    await issues.issues_create(owner="octo", repo="demo", title="from a program")
    created = "created"
except PermissionError as exc:
    created = "refused: " + str(exc)
print(issue["title"], len(comments), created)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("codemode")
    config = {"name": "code mode project", "output": "out",
              "openapi": [{"id": "issues", "path": str(FIXTURES / "openapi" / "issues.yaml"),
                           "base_url": "${ISSUES_API_URL}"}],
              "policy": {"deny_tools": ["openapi:issues:issues/create"]}}
    return compiled_project(folder, config)


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[str, list[str]]]:
    with issues_api() as served:
        yield served


def environ(api: tuple[str, list[str]]) -> dict[str, str]:
    return serve_env("http://unused", ISSUES_API_URL=api[0])


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_code_mode_over_stdio_with_the_official_client(project: Path, api: tuple[str, list[str]]) -> None:
    server = StdioServerParameters(command=sys.executable, args=serve_args(project, "--code-mode"),
                                   env=environ(api), cwd=str(project.parent))
    before = len(api[1])
    async with Client(server, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["toolc_search_docs", "toolc_execute_code"]
        docs = await client.call_tool("toolc_search_docs", {"query": "comments of an issue", "limit": 1})
        assert "async def issues_list_comments(*, issue_number: int, owner: str, repo: str" in text(docs)
        ran = await client.call_tool("toolc_execute_code", {"code": CHAIN})
        assert not ran.is_error, text(ran)
        assert text(ran) == ("Issue 40: something is off in module 5 0 refused: issues.issues_create: denied by "
                             "disabled: tool is not allowed by the project policy: it matches policy.deny_tools "
                             "in the project file\n")
        typo = await client.call_tool("toolc_execute_code", {"code": "import issues\nissues.issues_gte()"})
        assert typo.is_error and "main.py:2:1: error[unresolved-attribute]" in text(typo)
        for hostile in ("x = [1] * (10 ** 9)", "def f(n):\n    return f(n + 1)\nf(0)", "import os\nos.environ",
                        "print('x' * 10_000_000)", "raise SystemExit(1)"):
            contained = await client.call_tool("toolc_execute_code", {"code": hostile})
            assert contained.is_error or "[output limit: " in text(contained), hostile
        again = await client.call_tool("toolc_execute_code", {"code": "import issues\n'still serving'"})
        assert text(again) == '"still serving"'
        direct = await client.call_tool("issues_get", {"owner": "octo", "repo": "demo", "issue_number": 1})
        assert direct.is_error and "denied by code_mode: this server serves code mode only" in text(direct)
    assert api[1][before:] == ["/repos/octo/demo/issues?per_page=1", "/repos/octo/demo/issues/40",
                               "/repos/octo/demo/issues/40/comments"]
    rows = audit_rows(project)
    program = [(kind, payload) for _, kind, tool, payload in rows if tool == "toolc:code_mode"]
    assert [kind for kind, _ in program][:2] == ["tool_invocation_start", "tool_invocation_end"]
    assert len(program[1][1]["tool_calls"]) == 4  # three calls and the refused one
    gates = [(tool, payload["gate"]) for _, kind, tool, payload in rows if kind == "policy_violation"]
    assert ("openapi:issues:issues/create", "disabled") in gates
    assert ("openapi:issues:issues/get", "code_mode") in gates


def test_code_mode_beside_the_tools_over_http(project: Path, api: tuple[str, list[str]]) -> None:
    with serving_http(project, environ(api), "--code-mode", "beside") as (url, _):
        headers = {"Content-Type": "application/json"}
        ran = httpx2.post(f"{url}/tools/toolc_execute_code/call", headers=headers, timeout=60,
                          content=json.dumps({"code": "import issues\n"
                                              "len(await issues.issues_list_for_repo(owner='octo', repo='demo'))"}))
        assert ran.status_code == 200 and ran.json()["content"][0]["text"] == "30"
        direct = httpx2.post(f"{url}/tools/openapi:issues:issues%2Fget/call", headers=headers, timeout=60,
                             content=json.dumps({"owner": "octo", "repo": "demo", "issue_number": 2}))
        assert direct.status_code == 200 and direct.json()["structuredContent"]["number"] == 2
        listed = httpx2.get(f"{url}/tools?provider=openai-chat", timeout=60).json()
        assert "toolc_execute_code" not in json.dumps(listed)  # beside: the project's own tools file


def test_code_mode_only_hands_out_the_code_file_over_http(project: Path, api: tuple[str, list[str]]) -> None:
    with serving_http(project, environ(api), "--code-mode") as (url, _):
        listed = httpx2.get(f"{url}/tools?provider=anthropic", timeout=60).json()
        assert [tool["name"] for tool in listed] == ["toolc_search_docs", "toolc_execute_code"]
        direct = httpx2.post(f"{url}/tools/openapi:issues:issues%2Fget/call", timeout=60,
                             headers={"Content-Type": "application/json"},
                             content=json.dumps({"owner": "octo", "repo": "demo", "issue_number": 2}))
        assert direct.status_code == 403 and "denied by code_mode" in direct.json()["content"][0]["text"]


def test_without_the_sandbox_code_mode_refuses_to_start(project: Path, api: tuple[str, list[str]],
                                                       tmp_path: Path) -> None:
    shadow = tmp_path / "pydantic_monty"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('not installed here')\n")
    env = {**environ(api), "PYTHONPATH": str(tmp_path)}
    started = subprocess.run([sys.executable, *serve_args(project, "--code-mode")], env=env, cwd=project.parent,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert started.returncode == 2
    assert "code mode needs pydantic-monty (not installed here)" in started.stderr
