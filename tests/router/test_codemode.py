"""Code mode in the generated router: the docs tool over the functions, programs that chain real calls of a
loopback GitHub issues API through the router's checked path, and a hostile-code suite (each case refused or
contained with its own message and an audit row, the router and the sandbox's pool going on after every one)."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.config import OpenApiConfig
from tests.support.issues_api import expected_counts, issues_api
from tests.support.router import catalog_from, load_router, make_build, write_router

pytest.importorskip("pydantic_monty")

ISSUES_API = OpenApiConfig(id="issues", path="fixtures/openapi/issues.yaml", base_url="${ISSUES_API_URL}")
POLICY = {"deny_tools": ["openapi:issues:issues/create"]}
FROZEN = {"mode": "execution", "project_id": "proj", "spec_frozen": True, "spec_hash": "sha256:abc"}
LIST = "issues.issues_list_for_repo"


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[str, list[str]]]:
    with issues_api() as served:
        yield served


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    build = make_build(catalog_from(recordings=(), openapi=("issues",)), openapi=[ISSUES_API], policy=POLICY)
    with load_router(write_router(build, tmp_path_factory.mktemp("gen"))) as module:
        yield module


@pytest.fixture
async def code(rt: Any, api: tuple[str, list[str]], tmp_path: Path) -> AsyncIterator[Any]:
    from toolc_router.codemode import CodeLimits, CodeMode

    router = rt.Router(audit_sink=rt.SqliteAuditSink(tmp_path / "audit.db"),
                       environ={**os.environ, "ISSUES_API_URL": api[0]},
                       default_context=rt.InvocationContext(**FROZEN))
    mode = CodeMode(router, limits=CodeLimits(wall_seconds=10, cpu_seconds=2, memory_bytes=32 * 1024 * 1024,
                                              tool_calls=25, output_chars=4_000))
    yield mode
    await mode.aclose()
    await router.aclose()
    router.audit.close()


def rows(code: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(event type, tool id, payload) of every audit row, in order."""
    path = code.router.audit.path
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT event_type, tool_id, payload FROM task_audits ORDER BY id").fetchall()
    return [(event, tool, json.loads(payload)) for event, tool, payload in found]


def program_end(code: Any) -> dict[str, Any]:
    ends = [payload for event, tool, payload in rows(code) if tool == "toolc:code_mode" and event.endswith("end")]
    assert ends, rows(code)
    return ends[-1]


# The docs tool ------------------------------------------------------------------------------------------------

def test_docs_return_ready_signatures_with_docstrings(code: Any) -> None:
    result = code.docs("list the issues of a repository", 2)
    text = result.content[0]["text"]
    assert result.structured["functions"][0] == LIST
    assert "async def issues_list_for_repo(*, owner: str, repo: str," in text
    assert 'direction: Literal["asc", "desc"] | None = None' in text
    assert "Tool id: openapi:issues:issues/list-for-repo" in text
    assert ") -> list[dict[str, Any]]:" in text
    assert "Returns: list of dict: comments (int), created_at (str), id (int), number (int), state (str)" in text


async def test_the_caller_sees_and_calls_only_what_it_may_use(code: Any, api: tuple[str, list[str]]) -> None:
    code.may_use = lambda tool_id, context: "comments" not in tool_id
    assert "issues.issues_list_comments" not in code.docs("list comments of an issue", 5).structured["functions"]
    before = len(api[1])
    hidden = await code.execute("import issues\nawait issues.issues_list_comments(owner='o', repo='r', issue_number=1)")
    assert "error[unresolved-attribute] Module `issues` has no member `issues_list_comments`" in hidden.error
    assert len(api[1]) == before


async def test_an_oauth_caller_sees_and_calls_only_its_granted_tools(rt: Any, code: Any,
                                                                      api: tuple[str, list[str]]) -> None:
    """The default rule is the one of every other way in (`callers.may_use`): a caller whose token grants the
    issue list alone finds and calls nothing else, and a context without a caller keeps every tool."""
    caller = rt._types.Caller(subject="ann", client_id="agent", scopes=frozenset({"issues:read"}),
                              tools=("openapi:issues:issues/list-for-repo",))
    ann = dataclasses.replace(code.router.default_context, caller=caller)
    assert code.docs("list comments of an issue", 5, ann).structured["functions"] == [LIST]
    assert "issues.issues_list_comments" in code.docs("list comments of an issue", 5).structured["functions"]
    before = len(api[1])
    hidden = await code.execute("import issues\nawait issues.issues_list_comments(owner='o', repo='r', issue_number=1)",
                                ann)
    assert "Module `issues` has no member `issues_list_comments`" in hidden.error
    assert len(api[1]) == before
    listed = await code.execute("import issues\nlen(await issues.issues_list_for_repo(owner='octo', repo='demo'))", ann)
    assert not listed.is_error, listed.error


# Programs -----------------------------------------------------------------------------------------------------

PLAN = """
import issues
newest = await issues.issues_list_for_repo(owner="octo", repo="demo", per_page=20)
counts = {}
for item in newest:
    comments = await issues.issues_list_comments(owner="octo", repo="demo", issue_number=item["number"])
    for comment in comments:
        login = comment["user"]["login"]
        counts[login] = counts.get(login, 0) + 1
dict(sorted(counts.items()))
"""


async def test_a_program_chains_calls_through_the_router(code: Any, api: tuple[str, list[str]]) -> None:
    before = len(api[1])
    result = await code.execute(PLAN)
    assert not result.is_error, result.error
    assert json.loads(result.content[0]["text"]) == expected_counts(20)
    assert len(api[1]) - before == 21
    audit = rows(code)
    assert sum(1 for event, tool, _ in audit if event == "tool_invocation_start" and tool.startswith("openapi:")) == 21
    assert len(program_end(code)["tool_calls"]) == 21


async def test_printed_output_is_the_result_and_is_cut_to_the_budget(code: Any) -> None:
    assert (await code.execute("print('hello')")).content[0]["text"] == "hello\n"
    result = await code.execute("for i in range(2000):\n    print('line', i)")
    text = result.content[0]["text"]
    assert not result.is_error
    assert len(text) < 4_200 and text.endswith("print less, or summarise in the program]")
    assert "[output limit: " in text


async def test_a_type_error_comes_back_with_line_and_column_and_nothing_runs(code: Any,
                                                                             api: tuple[str, list[str]]) -> None:
    before = len(api[1])
    result = await code.execute(f"import issues\nx = 1\nawait {LIST}(owner='octo', repo='demo', per_page='ten')")
    assert result.is_error
    assert result.error.startswith("type error (the program did not run):")
    assert "main.py:3:" in result.error and "Expected `int | None`" in result.error
    assert len(api[1]) == before
    assert program_end(code)["status"] == "error"


# The hostile-code suite ---------------------------------------------------------------------------------------

HOSTILE = {
    "reads a file": ("import pathlib\npathlib.Path('/etc/passwd').read_text()", "PermissionError"),
    "opens a file with open()": ("open('/etc/passwd').read()", "type error"),
    "opens a socket": ("import socket\nsocket.socket()", "type error"),
    "imports a module": ("import subprocess\nsubprocess.run(['id'])", "type error"),
    "imports dynamically": ("__import__('os').system('id')", "type error"),
    "reads the environment": ("import os\nos.environ['HOME']", "'os.environ' is not supported"),
    "reads an environment variable": ("import os\nos.getenv('TOOLC_ADMIN_TOKEN')", "'os.getenv' is not supported"),
    "reads the clock": ("import time\ntime.time()", "'time.time' is not supported"),
    "reaches a function's globals": (f"import issues\n{LIST}.__globals__", "has no attribute '__globals__'"),
    "reaches the router": ("import toolc_router", "type error"),
    "loops forever": ("while True:\n    pass", "time limit: the program ran more than 2 s"),
    "allocates a memory bomb": ("x = [1] * (10 ** 9)", "memory limit: the program needed more than 32 MB"),
    "recurses without end": ("def f(n):\n    return f(n + 1)\nf(0)", "recursion limit: calls nested deeper"),
    "raises": ("raise ValueError('boom')", "the program raised an exception:"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_hostile_code_is_refused_or_contained(code: Any, case: str) -> None:
    program, message = HOSTILE[case]
    result = await code.execute(program)
    assert result.is_error, (case, result.content)
    assert message in result.error, (case, result.error)
    end = program_end(code)
    assert end["status"] == "error" and end["error"] == result.error[:300]
    assert not (await code.execute("1 + 1")).is_error  # the pool and the router go on


async def test_huge_output_is_cut_not_kept(code: Any) -> None:
    result = await code.execute("print('x' * 1_000_000)")
    assert "[output limit: 996,001 more characters cut (budget 4,000)" in result.content[0]["text"]


async def test_a_denied_tool_raises_permission_error_the_program_can_catch(code: Any) -> None:
    program = ("import issues\ntry:\n    await issues.issues_create(owner='octo', repo='demo', title='x')\n"
               "except PermissionError as exc:\n    print('refused:', exc)")
    result = await code.execute(program)
    assert not result.is_error, result.error
    assert "refused: issues.issues_create: denied by disabled: tool is not allowed" in result.content[0]["text"]
    assert any(event == "policy_violation" and tool == "openapi:issues:issues/create" for event, tool, _ in rows(code))


async def test_an_admin_only_tool_is_refused_without_the_admin_token(code: Any) -> None:
    result = await code.execute("import issues\nawait issues.issues_delete(owner='octo', repo='demo', issue_number=1)")
    assert result.is_error and "PermissionError: issues.issues_delete: denied by " in result.error
    violations = [payload for event, tool, payload in rows(code)
                  if event == "policy_violation" and tool == "openapi:issues:issues/delete"]
    assert violations[-1]["gate"] == "admin_token"


async def test_invalid_and_smuggled_arguments_are_refused_by_the_router(code: Any,
                                                                        api: tuple[str, list[str]]) -> None:
    before = len(api[1])
    # Typed as Any, the arguments pass the type checker: the router is what refuses them.
    invalid = await code.execute(f"import issues\nfrom typing import Any\nargs: Any = {{'per_page': 1000}}\n"
                                 f"await {LIST}(owner='octo', repo='demo', **args)")
    smuggled = await code.execute(f"import issues\nfrom typing import Any\nargs: Any = {{'x_admin': True}}\n"
                                  f"await {LIST}(owner='octo', repo='demo', **args)")
    renamed = await code.execute("import issues\nfrom typing import Any\nargs: Any = {'id': 2}\n"
                                 "await issues.issues_get(owner='octo', repo='demo', issue_number=1, **args)")
    twice = await code.execute(f"import issues\nfrom typing import Any\nargs: Any = {{'type': 'x'}}\n"
                               f"await {LIST}(owner='octo', repo='demo', type_='bug', **args)")
    assert "denied by validation: invalid arguments: /per_page" in invalid.error
    assert "denied by validation" in smuggled.error and "x_admin" in smuggled.error
    assert "denied by validation" in renamed.error
    assert "PermissionError: issues.issues_list_for_repo: denied: argument 'type' given twice" in twice.error
    assert len(api[1]) == before
    gates = [payload.get("gate") for event, _tool, payload in rows(code) if event == "policy_violation"]
    assert gates.count("validation") == 3 and gates.count("code_mode_arguments") == 1


async def test_calls_past_the_limit_are_refused_and_audited(code: Any, api: tuple[str, list[str]]) -> None:
    before = len(api[1])
    program = ("import issues\nfor n in range(1, 40):\n    try:\n"
               "        await issues.issues_get(owner='octo', repo='demo', issue_number=n)\n"
               "    except Exception as exc:\n        print(exc)")
    result = await code.execute(program)
    assert result.is_error
    assert result.error.startswith("tool call limit: a program may make 25 tool calls; issues.issues_get")
    assert len(api[1]) - before == 25
    assert any(payload.get("gate") == "code_mode_calls" for _e, _t, payload in rows(code))


async def test_the_wall_time_limit_stops_a_program_waiting_on_tools(rt: Any, code: Any) -> None:
    from toolc_router.codemode import CodeLimits, CodeMode

    slow = CodeMode(code.router, limits=CodeLimits(wall_seconds=1, cpu_seconds=5))
    try:
        program = "import asyncio\nwhile True:\n    await asyncio.sleep(0)\n    x = [i for i in range(1000)]"
        result = await slow.execute(program)
        assert result.is_error and result.error.startswith(("wall-time limit", "time limit")), result.error
        assert not (await slow.execute("2 + 2")).is_error
    finally:
        await slow.aclose()


async def test_an_empty_or_oversized_program_is_refused_and_audited(code: Any) -> None:
    assert (await code.execute("")).denied_by == "validation"
    assert "over 20,000" in (await code.execute("x = 1\n" * 5_000)).error
    assert sum(1 for event, tool, _ in rows(code) if event == "policy_violation" and tool == "toolc:code_mode") == 2


# Agent frameworks: a model's tool call in each provider's format --------------------------------------------

async def test_provider_tool_calls_reach_code_mode_and_the_router(code: Any) -> None:
    from anthropic.types import ToolUseBlock
    from openai.types.responses import ResponseFunctionToolCall

    program = f"import issues\nlen(await {LIST}(owner='octo', repo='demo', per_page=5))"
    openai_call = ResponseFunctionToolCall(type="function_call", call_id="c1", name="toolc_execute_code",
                                           arguments=json.dumps({"code": program}))
    ran = await code.call_openai_tool_call(openai_call)
    assert (ran.content[0]["text"], ran.call_id) == ("5", "c1")
    docs = await code.call_anthropic_tool_use(ToolUseBlock(type="tool_use", id="t1", name="toolc_search_docs",
                                                           input={"query": "get an issue", "limit": 1}))
    assert docs.structured == {"functions": ["issues.issues_get"]} and docs.call_id == "t1"
    malformed = await code.call_openai_tool_call(ResponseFunctionToolCall(
        type="function_call", call_id="c2", name="toolc_execute_code", arguments="{not json"))
    assert malformed.denied_by == "validation" and malformed.call_id == "c2"
    direct = await code.call_gemini_function_call({"name": "openapi:issues:issues/get",
                                                   "args": {"owner": "octo", "repo": "demo", "issue_number": 3}})
    assert direct.structured["number"] == 3  # beside code mode, a tool's own call goes to the router


async def test_calls_from_a_program_are_traced_as_direct_calls(code: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    await code.router.call_tool("openapi:issues:issues/get", {"owner": "octo", "repo": "demo", "issue_number": 1})
    program = ("import issues\nawait issues.issues_get(owner='octo', repo='demo', issue_number=1)\n"
               "try:\n    await issues.issues_create(owner='octo', repo='demo', title='x')\n"
               "except PermissionError:\n    pass")
    assert not (await code.execute(program)).is_error
    spans = [span for span in memory.get_finished_spans() if span.instrumentation_scope.name == "toolc_router"]
    direct, from_program, denied = spans
    assert from_program.name == direct.name == "execute_tool issues/get"
    assert dict(from_program.attributes or {}).keys() == dict(direct.attributes or {}).keys()
    assert denied.attributes is not None and denied.attributes["toolc.policy.decision"] == "deny"


async def test_fails_closed_without_an_audit_or_a_sandbox(rt: Any, code: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolc_router.codemode import CodeMode

    class Refusing(rt.MemoryAuditSink):  # type: ignore[misc,name-defined]
        def emit_many(self, events: Any) -> None:
            raise OSError("disk full")

    unaudited = CodeMode(rt.Router(audit_sink=Refusing()))
    refused = await unaudited.execute("print('never')")
    assert (refused.denied_by, refused.error) == ("audit", "audit unavailable (OSError); program refused")
    assert (await unaudited.execute("")).denied_by == "audit"
    monkeypatch.setenv("MONTY_BIN", "/nonexistent/monty")
    no_sandbox = CodeMode(code.router)
    result = await no_sandbox.execute("1 + 1")
    assert result.is_error and result.error.startswith("the sandbox cannot start ("), result.error
