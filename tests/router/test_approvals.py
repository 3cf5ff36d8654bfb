"""Approvals (issue 25): a tool at or above `gateway.approvals.min_risk`, or matching one of its globs, runs only
on a person's yes. Through the Python API an approver callback answers; through `toolc serve` the official MCP
client answers a form-mode elicitation, in both protocol eras (the handshake era's `elicitation/create`, and
2026-07-28's `InputRequiredResult` answered in the retry). No approver, no capability, decline, cancel, a
timeout or an error all refuse the call, and every answer is audited with who gave it."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client, types

from compiler.config import ApprovalsConfig, GatewayConfig
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router

SECRET = "s3cret-admin-123"
CONTEXT = {"mode": "execution", "project_id": "p", "spec_frozen": True, "spec_hash": "sha256:h",
           "admin_token": SECRET}
"""The admin token is a secret the router knows: redacted wherever a call's values are shown or kept."""


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    build = make_build(probe_catalog())
    approvals = ApprovalsConfig(min_risk="high", tools=["mcp:probe:fetch_*"], timeout_s=5)
    build.config = build.config.model_copy(update={"gateway": GatewayConfig(approvals=approvals)})
    with load_router(write_router(build, tmp_path)) as module:
        yield module


def _router(rt: Any, **options: Any) -> Any:
    router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={},
                       default_context=rt.InvocationContext(**CONTEXT), **options)
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    return router


def _rows(router: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(event.event_type, dict(event.payload)) for event in router.audit.events]


async def test_an_approver_that_says_yes_lets_the_call_run_and_is_audited(rt: Any) -> None:
    asked: list[Any] = []

    def approve(request: Any) -> Any:
        asked.append(request)
        return rt.approvals.Approval(True, "accept", by="alice")

    router = _router(rt, approver=approve)
    result = await router.call_tool("mcp:probe:write_note", {"text": f"token {SECRET}"})
    assert not result.is_error and result.content[0]["text"] == "wrote token [REDACTED] in inbox"
    (request,) = asked
    assert request.tool.id == "mcp:probe:write_note" and request.risk == "high"
    assert "risk is high" in request.reason
    # The person sees the model's arguments redacted as the audit redacts, and never the preset `folder`.
    assert request.arguments == {"text": "token [REDACTED]"}
    kinds = [kind for kind, _ in _rows(router)]
    assert kinds == ["approval_decision", "policy_decision", "tool_invocation_start", "tool_invocation_end"]
    approval = _rows(router)[0][1]
    assert approval["approved"] is True and approval["answer"] == "accept" and approval["by"] == "alice"
    await router.aclose()


async def test_a_tool_that_needs_no_approval_never_asks(rt: Any) -> None:
    asked: list[Any] = []
    router = _router(rt, approver=lambda request: asked.append(request))
    result = await router.call_tool("mcp:probe:echo", {"text": "hi"})
    assert not result.is_error and asked == []
    assert [kind for kind, _ in _rows(router)] == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]
    await router.aclose()


async def test_a_glob_makes_a_low_risk_tool_need_approval(rt: Any) -> None:
    router = _router(rt)
    result = await router.call_tool("mcp:probe:fetch_page", {"url": "https://example.com"})
    assert result.denied_by == "approval"
    assert "no approver is configured" in result.error
    assert "matches 'mcp:probe:fetch_*'" in _rows(router)[0][1]["reason"]


@pytest.mark.parametrize(("approver", "answer", "text"), [
    (None, "unavailable", "denied by approval: unavailable: no approver is configured"),
    ("decline", "decline", "denied by approval: declined by bob"),
    ("cancel", "cancel", "denied by approval: cancelled by bob"),
    ("raise", "error", "denied by approval: error: the approver failed (RuntimeError)"),
    ("nonsense", "error", "denied by approval: error: the approver returned no Approval"),
    ("hang", "timeout", "denied by approval: timeout: no answer in 0.05 s"),
])
async def test_every_answer_but_yes_refuses_the_call_and_is_audited(rt: Any, approver: str | None, answer: str,
                                                                     text: str) -> None:
    async def ask(request: Any) -> Any:
        if approver == "raise":
            raise RuntimeError("approval service down")
        if approver == "nonsense":
            return True
        if approver == "hang":
            await asyncio.Event().wait()
        return rt.approvals.Approval(False, str(approver), by="bob")

    router = _router(rt, approver=None if approver is None else ask)
    router.approvals.spec = rt.approvals.ApprovalSpec(min_risk=2, timeout_s=0.05)
    called: list[str] = []
    router.register_postprocessor("*", lambda tool, arguments, result: called.append(tool.id) or result)
    result = await router.call_tool("mcp:probe:write_note", {"text": "x"})
    assert result.is_error and result.denied_by == "approval" and result.error == text
    assert called == []
    rows = _rows(router)
    assert [kind for kind, _ in rows] == ["approval_decision", "policy_decision", "policy_violation"]
    assert rows[0][1]["approved"] is False and rows[0][1]["answer"] == answer
    assert rows[2][1]["gate"] == "approval"


async def test_a_call_refused_by_an_earlier_gate_asks_nobody(rt: Any) -> None:
    asked: list[Any] = []
    router = _router(rt, approver=lambda request: asked.append(request))
    invalid = await router.call_tool("mcp:probe:write_note", {"text": 5})
    assert invalid.denied_by == "validation" and asked == []


# `toolc serve`: the official MCP client answers the elicitation -------------------------------------------------

def _served(router: Any) -> Any:
    return importlib.import_module("toolc_router.serve_mcp").mcp_server(router)


def _elicitation(action: str, content: dict[str, Any] | None, seen: list[Any]) -> Any:
    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(("action", "content", "approved"), [
    ("accept", {"approve": True}, True),
    ("accept", {"approve": False}, False),
    ("decline", None, False),
    ("cancel", None, False),
])
async def test_the_mcp_client_answers_the_elicitation(rt: Any, mode: str, action: str,
                                                      content: dict[str, Any] | None, approved: bool) -> None:
    router = _router(rt)
    seen: list[Any] = []
    server = _served(router)
    async with Client(server, mode=mode, elicitation_callback=_elicitation(action, content, seen)) as client:
        result = await client.call_tool("write_note", {"text": f"note {SECRET}"})
    (params,) = seen
    assert params.mode == "form" and params.requested_schema["required"] == ["approve"]
    assert "write_note (mcp:probe:write_note, risk high)" in params.message
    assert '"text": "note [REDACTED]"' in params.message and SECRET not in params.message
    assert result.is_error is (not approved)
    rows = _rows(router)
    approval = rows[0][1]
    assert rows[0][0] == "approval_decision" and approval["approved"] is approved
    assert approval["answer"] == action and approval["by"] == "MCP client mcp 0.1.0"
    if approved:
        assert [kind for kind, _ in rows][1:] == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]
    else:
        assert [kind for kind, _ in rows][1:] == ["policy_decision", "policy_violation"]
        assert result.content[0].text.startswith("denied by approval: ")
    await router.aclose()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_cannot_elicit_is_refused_without_being_asked(rt: Any, mode: str) -> None:
    router = _router(rt)
    async with Client(_served(router), mode=mode) as client:
        result = await client.call_tool("write_note", {"text": "x"})
    assert result.is_error and result.content[0].text == (
        "denied by approval: unavailable: the MCP client cannot ask its user (no form elicitation capability)")
    rows = _rows(router)
    assert [kind for kind, _ in rows] == ["approval_decision", "policy_decision", "policy_violation"]
    assert rows[0][1]["answer"] == "unavailable" and rows[0][1]["by"] == "MCP client mcp 0.1.0"


async def test_an_answer_is_taken_only_for_the_call_it_was_asked_about(rt: Any) -> None:
    """2026-07-28: the retry must carry the state signed for this tool and these arguments; a forged or reused
    one is not an answer (the client is asked again), and nothing runs."""
    router = _router(rt)
    called: list[str] = []
    router.register_postprocessor("*", lambda tool, arguments, result: called.append(tool.id) or result)
    yes = {"toolc-approval": types.ElicitResult(action="accept", content={"approve": True})}
    async with Client(_served(router), elicitation_callback=_elicitation("accept", {}, [])) as client:
        session = client.session
        asked = await session.call_tool("write_note", {"text": "a"}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult) and asked.request_state
        for arguments, state in [({"text": "other"}, asked.request_state), ({"text": "a"}, "1.forged"),
                                 ({"text": "a"}, None)]:
            again = await session.call_tool("write_note", arguments, input_responses=yes, request_state=state,
                                            allow_input_required=True)
            assert isinstance(again, types.InputRequiredResult)
        assert called == [] and router.audit.events == []
        done = await session.call_tool("write_note", {"text": "a"}, input_responses=yes,
                                       request_state=asked.request_state, allow_input_required=True)
    assert isinstance(done, types.CallToolResult) and not done.is_error
    assert called == ["mcp:probe:write_note"]
    await router.aclose()


async def test_an_answer_after_the_timeout_refuses_the_call(rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """2026-07-28: the signed state carries when the question was asked; a retry past `timeout_s` is a no."""
    router = _router(rt)
    serve_approvals = importlib.import_module("toolc_router.serve_approvals")
    yes = {"toolc-approval": types.ElicitResult(action="accept", content={"approve": True})}
    async with Client(_served(router), elicitation_callback=_elicitation("accept", {}, [])) as client:
        asked = await client.session.call_tool("write_note", {"text": "a"}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        late = serve_approvals.time.time() + 6  # the fixture's timeout_s is 5
        monkeypatch.setattr(serve_approvals, "time", SimpleNamespace(time=lambda: late))
        done = await client.session.call_tool("write_note", {"text": "a"}, input_responses=yes,
                                              request_state=asked.request_state)
    assert done.is_error
    assert done.content[0].text == "denied by approval: timeout: answered after the timeout"
    assert _rows(router)[0][1]["answer"] == "timeout"


async def test_the_http_endpoint_cannot_ask_and_refuses(rt: Any) -> None:
    import httpx2

    router = _router(rt)
    app = importlib.import_module("toolc_router.serve_http").create_app(router)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        answer = await http.post("/tools/write_note/call", json={"text": "x"})
    assert answer.status_code == 403
    assert answer.json()["content"][0]["text"] == "denied by approval: unavailable: no approver is configured"
