"""The six gates of seed 000, in order: each denies and is audited; the first deny wins; custom gates; fail closed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.router import (
    BrokenAuditSink,
    load_router,
    make_build,
    probe_catalog,
    probe_server,
    write_router,
)

TOKEN = "correct horse battery staple"


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    build = make_build(probe_catalog(), policy={"deny_tools": ["mcp:probe:disabled_*"],
                                                "deny_side_effect_tags": ["payments"],
                                                "admin_token_env": "PROBE_ADMIN_TOKEN"})
    with load_router(write_router(build, tmp_path)) as module:
        yield module


@pytest.fixture
def router(rt: Any) -> Iterator[Any]:
    sink = rt.MemoryAuditSink()
    router = rt.Router(audit_sink=sink, environ={"PROBE_ADMIN_TOKEN": TOKEN})
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    yield router


def ctx(rt: Any, **fields: Any) -> Any:
    base: dict[str, Any] = {"mode": "execution", "project_id": "p1", "spec_frozen": True, "spec_hash": "h",
                            "admin_token": TOKEN}
    return rt.InvocationContext(**{**base, **fields})


def events(router: Any, invocation_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.event_type, dict(e.payload)) for e in router.audit.events if e.invocation_id == invocation_id]


# Well-formed arguments for each probe tool (the router validates them against the tool's input schema).
PROBE_ARGS: dict[str, dict[str, str]] = {"echo": {"text": "x"}, "fetch_page": {"url": "u"}, "write_note": {"text": "x"},
                                         "delete_note": {"note_id": "n"}}


async def assert_denied(router: Any, tool: str, context: Any, gate: str, reason: str = "") -> None:
    result = await router.call_tool(f"mcp:probe:{tool}", PROBE_ARGS.get(tool, {}), context=context)
    assert result.is_error and result.denied_by == gate, (result.denied_by, result.error)
    assert reason in (result.error or "")
    recorded = events(router, result.invocation_id)
    assert [kind for kind, _ in recorded] == ["policy_decision", "policy_violation"]
    assert recorded[0][1]["allowed"] is False and recorded[0][1]["gate"] == gate
    assert recorded[1][1]["gate"] == gate


async def test_every_gate_allows_a_well_formed_call(rt: Any, router: Any) -> None:
    for tool in ("echo", "fetch_page", "write_note", "delete_note"):
        result = await router.call_tool(f"mcp:probe:{tool}", PROBE_ARGS[tool], context=ctx(rt))
        assert not result.is_error, (tool, result.error)
        kinds = [kind for kind, _ in events(router, result.invocation_id)]
        assert kinds == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]
    await router.aclose()


async def test_gate_1_disabled(rt: Any, router: Any) -> None:
    await assert_denied(router, "no_such_tool", ctx(rt), "disabled", "unknown tool")
    router.policy.disable("mcp:probe:echo")
    await assert_denied(router, "echo", ctx(rt), "disabled", "disabled")
    router.policy.enable("mcp:probe:echo")
    assert not (await router.call_tool("mcp:probe:echo", {"text": "x"}, context=ctx(rt))).is_error
    await router.aclose()


async def test_gate_1_baked_allow_and_deny_lists(tmp_path: Path) -> None:
    build = make_build(probe_catalog(), policy={"allow_tools": ["echo", "fetch_*"], "deny_tools": ["fetch_page"]})
    with load_router(write_router(build, tmp_path)) as rt:
        router = rt.Router(audit_sink=rt.MemoryAuditSink())
        await assert_denied(router, "write_note", ctx(rt), "disabled", "not allowed")
        await assert_denied(router, "fetch_page", ctx(rt), "disabled", "not allowed")
        decision = await router.policy.check(rt.router.TOOLS["mcp:probe:echo"], "mcp:probe:echo", ctx(rt))
        assert decision.allowed


async def test_gate_2_mode(rt: Any, router: Any) -> None:
    await assert_denied(router, "write_note", ctx(rt, mode="planning"), "mode", "planning mode")
    await assert_denied(router, "echo", ctx(rt, mode="dreaming"), "mode", "unknown mode")
    assert not (await router.call_tool("mcp:probe:echo", {"text": "x"}, context=ctx(rt, mode="planning"))).is_error
    await router.aclose()


async def test_gate_3_spec_frozen(rt: Any, router: Any) -> None:
    await assert_denied(router, "write_note", ctx(rt, spec_frozen=False), "spec_frozen", "spec_frozen")
    await assert_denied(router, "write_note", ctx(rt, spec_hash=None), "spec_frozen", "spec_frozen")


async def test_gate_4_project_binding(rt: Any, router: Any) -> None:
    await assert_denied(router, "fetch_page", ctx(rt, project_id=None), "project_binding", "project_id")


async def test_gate_5_side_effect_blacklist(rt: Any, router: Any) -> None:
    await assert_denied(router, "fetch_page", ctx(rt, policy_blacklist=("network.*",)), "side_effect_policy",
                        "network.http")
    await assert_denied(router, "write_note", ctx(rt, policy_blacklist=("fs.write",)), "side_effect_policy",
                        "fs.write")


async def test_gate_5_server_and_project_blacklists(tmp_path: Path) -> None:
    from compiler.config import ServerConfig

    server = ServerConfig(id="probe", command=("unused",), deny_side_effect_tags=("fs.delete",))
    build = make_build(probe_catalog(), servers=[server], policy={"deny_side_effect_tags": ["network.http"]})
    with load_router(write_router(build, tmp_path)) as rt:
        router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={"TOOLC_ADMIN_TOKEN": TOKEN})
        await assert_denied(router, "delete_note", ctx(rt), "side_effect_policy", "fs.delete")
        await assert_denied(router, "fetch_page", ctx(rt), "side_effect_policy", "network.http")


async def test_gate_6_admin_token(rt: Any, router: Any) -> None:
    await assert_denied(router, "delete_note", ctx(rt, admin_token=None), "admin_token", "requires an admin_token")
    await assert_denied(router, "delete_note", ctx(rt, admin_token=TOKEN + "!"), "admin_token", "does not match")
    unconfigured = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={})
    await assert_denied(unconfigured, "delete_note", ctx(rt), "admin_token", "PROBE_ADMIN_TOKEN")
    result = await router.call_tool("mcp:probe:delete_note", {"note_id": "n1"}, context=ctx(rt))
    assert not result.is_error and result.content[0]["text"] == "deleted n1"
    await router.aclose()


async def test_admin_token_is_never_baked(rt: Any, tmp_path: Path) -> None:
    tables = (tmp_path / "toolc_router" / "_tables.py").read_text()
    assert "PROBE_ADMIN_TOKEN" in tables and TOKEN not in tables


async def test_first_deny_wins(rt: Any, router: Any) -> None:
    everything_wrong = rt.InvocationContext(mode="planning", project_id=None, spec_frozen=False, admin_token=None)
    # delete_note fails gates 2, 3 (n/a in planning), 4, 6: the mode gate reports.
    await assert_denied(router, "delete_note", everything_wrong, "mode")
    # In execution mode it fails 3, 4, 5 and 6: spec_frozen reports.
    await assert_denied(router, "delete_note", ctx(rt, spec_frozen=False, project_id=None, admin_token=None,
                                                     policy_blacklist=("fs.*",)), "spec_frozen")
    # Fails 4, 5, 6: project binding reports.
    await assert_denied(router, "delete_note", ctx(rt, project_id=None, admin_token=None,
                                                     policy_blacklist=("fs.*",)), "project_binding")
    # Fails 5 and 6.
    await assert_denied(router, "delete_note", ctx(rt, admin_token=None, policy_blacklist=("fs.*",)),
                        "side_effect_policy")
    # A disabled tool fails gate 1 before anything else.
    router.policy.disable("mcp:probe:delete_note")
    await assert_denied(router, "delete_note", everything_wrong, "disabled")


async def test_custom_gates_run_after_the_six_in_order(rt: Any, router: Any) -> None:
    seen: list[str] = []

    def business_hours(tool: Any, context: Any) -> Any:
        seen.append(tool.id)
        if context.metadata.get("after_hours"):
            return rt.PolicyDecision(False, "business_hours", "closed")
        return rt.PolicyDecision(True, "business_hours")

    async def quota(tool: Any, context: Any) -> Any:
        return rt.PolicyDecision(context.metadata.get("quota", 1) > 0, "quota", "quota exhausted")

    router.register_gate(rt.Gate("business_hours", business_hours))
    router.register_gate(rt.Gate("quota", quota))
    assert [g.name for g in router.policy.gates] == [*rt.GATE_ORDER, "business_hours", "quota"]
    await assert_denied(router, "echo", ctx(rt, metadata={"after_hours": True, "quota": 0}), "business_hours",
                        "closed")
    await assert_denied(router, "echo", ctx(rt, metadata={"quota": 0}), "quota", "quota exhausted")
    # A built-in deny comes before custom gates run.
    seen.clear()
    await assert_denied(router, "fetch_page", ctx(rt, project_id=None, metadata={"after_hours": True}),
                        "project_binding")
    assert seen == []
    with pytest.raises(ValueError):
        router.register_gate(rt.Gate("quota", quota))


async def test_fail_closed(rt: Any, router: Any) -> None:
    def broken(tool: Any, context: Any) -> Any:
        raise KeyError("boom")

    def sloppy(tool: Any, context: Any) -> Any:
        return True

    router.register_gate(rt.Gate("broken", broken))
    await assert_denied(router, "echo", ctx(rt), "broken", "fail closed")

    other = rt.Router(audit_sink=rt.MemoryAuditSink())
    other.register_gate(rt.Gate("sloppy", sloppy))
    await assert_denied(other, "echo", ctx(rt), "sloppy", "fail closed")


async def test_audit_failure_refuses_the_call(rt: Any) -> None:
    router = rt.Router(audit_sink=BrokenAuditSink())
    calls: list[str] = []
    router.set_server_factory("probe", lambda: calls.append("connected") or probe_server())
    result = await router.call_tool("mcp:probe:echo", {"text": "x"}, context=ctx(rt))
    assert result.is_error and result.denied_by == "audit" and calls == []


async def test_preset_parameters_win_and_postprocessing_runs(rt: Any, router: Any) -> None:
    def shout(tool: Any, arguments: dict[str, Any], result: Any) -> Any:
        result.content = [{"type": "text", "text": block["text"].upper()} for block in result.content]
        return result

    router.register_postprocessor("mcp:probe:write_*", shout)
    # The preset `folder` is hidden from the schema: a call naming it is refused, not silently overridden.
    smuggled = await router.call_tool("mcp:probe:write_note", {"text": "hi", "folder": "elsewhere"}, context=ctx(rt))
    assert smuggled.denied_by == "validation" and "/folder: unexpected argument" in (smuggled.error or "")
    result = await router.call_tool("mcp:probe:write_note", {"text": "hi"}, context=ctx(rt))
    assert result.content[0]["text"] == "WROTE HI IN INBOX"
    start = next(p for kind, p in events(router, result.invocation_id) if kind == "tool_invocation_start")
    assert start["arguments"] == ["text"]  # names only, never values
    await router.aclose()
