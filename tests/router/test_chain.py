"""The router's checked path as a chain of named guards (`guards`): its order, and the contract a new guard or
result check relies on (what it gets, how it refuses, how a refusal is audited, fail closed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.router.test_gates import PROBE_ARGS, ctx, events
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router

CHAIN = ["policy", "validation", "wire", "audit start", "dispatch", "postprocess", "redaction", "audit end"]


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    with load_router(write_router(make_build(probe_catalog()), tmp_path)) as module:
        yield module


@pytest.fixture
def router(rt: Any) -> Any:
    router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={})
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    return router


class Recording:
    """A guard that refuses one tool and remembers what every call showed it."""

    def __init__(self, rt: Any, gate: str, refuse: str = "") -> None:
        self.rt, self.gate, self.refuse, self.seen = rt, gate, refuse, []

    async def check(self, call: Any) -> Any:
        self.seen.append((call.tool.id, dict(call.arguments), call.context, call.invocation_id))
        if call.tool.id == self.refuse:
            return self.rt.guards.Denial(self.gate, "not this one")
        return None


def test_the_chain_lists_its_steps_in_order(router: Any) -> None:
    assert router.chain() == CHAIN


def test_a_guard_is_listed_where_it_is_added(rt: Any, router: Any) -> None:
    router.add_guard(Recording(rt, "rate_limit"))
    router.add_guard(Recording(rt, "caller_scope"), before="wire")
    router.add_result_check(rt.guards.Postprocess())
    assert router.chain() == ["policy", "validation", "caller_scope", "wire", "rate_limit", "audit start", "dispatch",
                              "postprocess", "postprocess", "redaction", "audit end"]
    with pytest.raises(ValueError, match="no guard 'nope'"):
        router.add_guard(Recording(rt, "x"), before="nope")


async def test_a_guard_gets_the_call_and_its_denial_is_audited_under_its_gate(rt: Any, router: Any) -> None:
    guard = Recording(rt, "approval", refuse="mcp:probe:write_note")
    router.add_guard(guard)
    context = ctx(rt)
    passed = await router.call_tool("mcp:probe:echo", PROBE_ARGS["echo"], context=context)
    assert not passed.is_error, passed.error
    assert guard.seen == [("mcp:probe:echo", {"text": "x"}, context, passed.invocation_id)]
    refused = await router.call_tool("mcp:probe:write_note", PROBE_ARGS["write_note"], context=context)
    assert refused.is_error and refused.denied_by == "approval"
    assert refused.error == "denied by approval: not this one"
    assert events(router, refused.invocation_id) == [
        ("policy_decision", {"allowed": False, "gate": "approval", "reason": "not this one"}),
        ("policy_violation", {"gate": "approval", "reason": "not this one"}),
    ]
    await router.aclose()


async def test_no_guard_after_one_that_refuses_runs(rt: Any, router: Any) -> None:
    later = Recording(rt, "rate_limit")
    router.add_guard(later)
    result = await router.call_tool("mcp:probe:echo", {"text": 5}, context=ctx(rt))
    assert result.denied_by == "validation"
    assert later.seen == []


async def test_a_guard_that_raises_refuses_under_its_gate(rt: Any, router: Any) -> None:
    class Broken:
        gate = "pinning"

        async def check(self, call: Any) -> Any:
            raise RuntimeError("boom")

    router.add_guard(Broken())
    result = await router.call_tool("mcp:probe:echo", PROBE_ARGS["echo"], context=ctx(rt))
    assert result.denied_by == "pinning"
    assert result.error == "denied by pinning: guard failed (RuntimeError); denied (fail closed)"
    assert [kind for kind, _ in events(router, result.invocation_id)] == ["policy_decision", "policy_violation"]


async def test_a_result_check_runs_after_dispatch_and_before_redaction(rt: Any, router: Any) -> None:
    context = ctx(rt)  # its admin token is a secret the router redacts

    class Stamp:
        name = "stamp"

        async def check(self, call: Any, result: Any) -> Any:
            assert call.arguments == {"text": "x"}
            result.content.append({"type": "text", "text": f"{call.tool.id} {context.admin_token}"})
            return result

    router.add_result_check(Stamp())
    assert router.chain()[-3:] == ["stamp", "redaction", "audit end"]
    result = await router.call_tool("mcp:probe:echo", PROBE_ARGS["echo"], context=context)
    assert not result.is_error, result.error
    assert result.content[-1]["text"] == f"mcp:probe:echo {rt.redact.PLACEHOLDER}"
    await router.aclose()


async def test_a_policy_engine_that_raises_denies_under_policy(rt: Any, router: Any) -> None:
    class Raising:
        async def check(self, tool: Any, tool_id: str, context: Any) -> Any:
            raise RuntimeError("engine down")

    router.policy = Raising()
    for tool_id in ("mcp:probe:echo", "mcp:probe:no_such_tool"):
        result = await router.call_tool(tool_id, PROBE_ARGS["echo"], context=ctx(rt))
        assert (result.denied_by, result.error) == ("policy", "denied by policy: policy check failed; denied")
        assert events(router, result.invocation_id)[1] == (
            "policy_violation", {"gate": "policy", "reason": "policy check failed; denied"})
