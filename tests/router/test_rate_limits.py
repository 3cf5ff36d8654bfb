"""Rate limits (`gateway.rate_limits`, templates/router/static/rate_limits.py): token buckets per tool glob, source
and caller, baked from the project file; 1,000 concurrent calls admit exactly the burst; each refusal says when
to retry and is audited as a `rate_limit` violation; a fleet rule without a reachable PostgreSQL refuses (fail
closed). The fleet itself (processes sharing PostgreSQL) is tests/router/test_rate_limits_fleet.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.config import Config, GatewayConfig, RateLimitRule, RateLimitsConfig, config_from_data
from compiler.infra.diagnostics import CompilerError
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router

RULES = (
    RateLimitRule(tools="mcp:probe:echo", calls=5, per="hour"),
    RateLimitRule(tools="fetch_*", caller="bot-*", calls=2, per="hour", per_caller=False),
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = make_build(probe_catalog())
    build.config = Config(root=build.config.root, gateway=GatewayConfig(rate_limits=RateLimitsConfig(rules=RULES)))
    return write_router(build, tmp_path_factory.mktemp("gen"))


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


def router(rt: Any, **kwargs: Any) -> Any:
    made = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={}, **kwargs)
    server = probe_server()
    made.set_server_factory("probe", lambda: server)
    return made


def context(rt: Any, actor: str | None = None) -> Any:
    return rt.InvocationContext(mode="execution", project_id="p", spec_frozen=True, spec_hash="h", actor=actor)


def test_rules_are_baked_from_the_project_file(rt: Any) -> None:
    assert (
        rt._types.RateLimitSpec(tools="mcp:probe:echo", rate=5 / 3600, burst=5, label="5 per hour"),
        rt._types.RateLimitSpec(tools="fetch_*", caller="bot-*", rate=2 / 3600, burst=2, per_caller=False,
                                label="2 per hour"),
    ) == rt.router.RATE_LIMITS


async def test_a_thousand_concurrent_calls_admit_exactly_the_burst_and_audit_each_refusal(rt: Any) -> None:
    made = router(rt)
    results = await asyncio.gather(*(made.call_tool("mcp:probe:echo", {"text": f"t{i}"}, context=context(rt, "ann"))
                                     for i in range(1000)))
    admitted = [result for result in results if not result.is_error]
    refused = [result for result in results if result.is_error]
    assert len(admitted) == 5
    assert {result.denied_by for result in refused} == {"rate_limit"}
    error = refused[0].error
    assert error.startswith("denied by rate_limit: rate limit of 5 per hour for tools 'mcp:probe:echo' "
                            "(caller 'ann') reached; retry in "), error
    assert float(error.rsplit("retry in ", 1)[1].removesuffix(" s")) > 600  # an hour's fifth, less a moment
    violations = [event for event in made.audit.events if event.event_type == "policy_violation"]
    assert len(violations) == 995
    assert {event.payload["gate"] for event in violations} == {"rate_limit"}
    started = [event for event in made.audit.events if event.event_type == "tool_invocation_start"]
    assert len(started) == 5
    await made.aclose()


async def test_each_caller_has_its_own_bucket_unless_the_rule_shares_one(rt: Any) -> None:
    made = router(rt)
    for actor in ("ann", "bob", None):
        results = [await made.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt, actor)) for _ in range(6)]
        assert [result.is_error for result in results] == [False] * 5 + [True], actor
    assert "(caller 'anonymous')" in results[-1].error
    # fetch_* for callers bot-*: one bucket of 2 for all of them; other callers are not limited by it.
    calls = [("bot-1", False), ("bot-2", False), ("bot-1", True), ("bot-3", True), ("ann", False), ("ann", False),
             ("ann", False)]
    for actor, refused in calls:
        result = await made.call_tool("mcp:probe:fetch_page", {"url": "https://a.test"}, context=context(rt, actor))
        assert (result.denied_by == "rate_limit") is refused, (actor, result.error)
        assert not refused or "for tools 'fetch_*' (all callers) reached" in result.error
    await made.aclose()


async def test_invalid_arguments_take_no_token(rt: Any) -> None:
    made = router(rt)
    for _ in range(10):
        bad = await made.call_tool("mcp:probe:echo", {"text": 1}, context=context(rt))
        assert bad.denied_by == "validation"
    good = [await made.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt)) for _ in range(5)]
    assert not any(result.is_error for result in good)
    await made.aclose()


def test_a_bucket_refills_at_its_rate(rt: Any) -> None:
    now = [0.0]
    buckets = rt.rate_limits.LocalBuckets(clock=lambda: now[0])
    assert [buckets.take("k", 2.0, 3) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("k", 2.0, 3) == pytest.approx(0.5)
    now[0] = 0.25
    assert buckets.take("k", 2.0, 3) == pytest.approx(0.25)
    now[0] = 0.5
    assert buckets.take("k", 2.0, 3) == 0.0
    now[0] = 100.0  # refilled to the burst, never past it
    assert [buckets.take("k", 2.0, 3) for _ in range(4)][-1] == pytest.approx(0.5)


def test_past_the_cap_the_buckets_used_least_recently_are_forgotten(rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rt.rate_limits, "MAX_BUCKETS", 10)
    now = [0.0]
    buckets = rt.rate_limits.LocalBuckets(clock=lambda: now[0])
    assert buckets.take("busy", 1e-9, 1) == 0.0  # its one token taken
    for index in range(30):
        buckets.take(f"caller-{index}", 1e-9, 1)
        assert buckets.take("busy", 1e-9, 1) > 0  # used again each time: never forgotten, still empty
    assert len(buckets._buckets) <= 10


async def test_a_fleet_rule_without_postgresql_refuses_the_call(rt: Any) -> None:
    fleet = rt._types.RateLimitSpec(tools="*", rate=1.0, burst=10, fleet=True)
    made = router(rt, rate_limits=(fleet,))
    result = await made.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    assert result.denied_by == "rate_limit"
    assert result.error == ("denied by rate_limit: fleet rate limit unavailable (no PostgreSQL DSN configured "
                            "(TOOLC_AUDIT_DSN or audit.dsn))")
    await made.aclose()


@pytest.mark.parametrize(("section", "message", "pointer"), [
    ({"rate_limits": {"rules": [{"tools": "*"}]}}, "Field required", "/gateway/rate_limits/rules/0/calls"),
    ({"rate_limits": {"rules": [{"calls": 5, "per": "week"}]}}, "Input should be", "/gateway/rate_limits/rules/0/per"),
    ({"rate_limits": {"rules": [{"calls": 0}]}}, "greater than 0", "/gateway/rate_limits/rules/0/calls"),
    ({"result_budget": {"rules": [{"tools": "*", "bytes": 4096, "tokens": 900}]}},
     "a result budget sets one of bytes or tokens", "/gateway/result_budget/rules/0"),
    ({"result_budget": {"rules": [{"byts": 4096}]}}, "did you mean 'bytes'", "/gateway/result_budget/rules/0/byts"),
])
def test_a_bad_gateway_setting_is_a_diagnostic_with_its_location(section: dict[str, Any], message: str,
                                                                  pointer: str) -> None:
    with pytest.raises(CompilerError) as raised:
        config_from_data({"gateway": section}, root=Path("."), source="toolc.yaml")
    found = [(d.code, d.pointer, d.message) for d in raised.value.diagnostics]
    assert any(code == "TC110" and where == pointer and message in text for code, where, text in found), found


async def test_a_fleet_dsn_naming_an_unset_variable_refuses_and_names_it(rt: Any) -> None:
    fleet = rt.rate_limits.FleetBuckets(lambda: rt._env.expand("postgresql://${FLEET_DSN_HOST}/db", {}))
    with pytest.raises(rt.rate_limits.FleetUnavailable, match=r"^environment variable FLEET_DSN_HOST is not set$"):
        await fleet.take("k", 1.0, 1)


def test_configured_limits_take_their_place_in_the_chain(rt: Any) -> None:
    budget = rt._types.BudgetSpec(limit=4096)
    assert router(rt, result_budgets=(budget,)).chain() == [
        "policy", "validation", "wire", "rate_limit", "audit start", "dispatch", "postprocess", "redaction",
        "result budget", "audit end"]
    assert router(rt, rate_limits=()).chain() == [
        "policy", "validation", "wire", "audit start", "dispatch", "postprocess", "redaction", "audit end"]
