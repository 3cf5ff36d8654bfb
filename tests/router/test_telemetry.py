"""OpenTelemetry spans of the generated router, read back through the SDK's in-memory exporter: one
`execute_tool` span per call with the GenAI conventions' attributes and toolc's own, a denied call marked as an
error with the gate that denied it, content only on opt-in, no secret in any attribute, and no span (no cost)
when the application configured no SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.support.router import (
    BrokenAuditSink,
    load_router,
    make_build,
    probe_catalog,
    probe_server,
    write_router,
)

SECRET = "s3cret-admin-token-77f1"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_router(make_build(probe_catalog()), tmp_path_factory.mktemp("gen"))


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """An SDK provider for this test only (the global one can be set once per process)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return memory


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


def router(rt: Any, **options: Any) -> Any:
    made = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={"TOOLC_ADMIN_TOKEN": SECRET}, **options)
    server = probe_server()
    made.set_server_factory("probe", lambda: server)
    return made


def context(rt: Any, **fields: Any) -> Any:
    return rt.InvocationContext(**{"mode": "execution", "project_id": "p", "spec_frozen": True, "spec_hash": "h",
                                   **fields})


def tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "toolc_router"]


async def test_one_span_per_call_with_the_conventional_attributes(rt: Any, exporter: InMemorySpanExporter) -> None:
    routed = router(rt)
    current: list[Any] = []  # the span current while the tool runs: what the MCP / HTTP clients' spans nest under
    routed.register_postprocessor("*", lambda tool, arguments, result: current.append(trace.get_current_span())
                                  or result)
    result = await routed.call_anthropic_tool_use({"type": "tool_use", "id": "toolu_01", "name": "echo",
                                                   "input": {"text": "hello"}}, context=context(rt))
    await routed.call_tool("mcp:probe:fetch_page", {"url": "https://example.test"}, context=context(rt))
    assert not result.is_error, result.error
    first, second = tool_spans(exporter)
    assert first.name == "execute_tool echo" and first.kind is SpanKind.INTERNAL
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.type": "extension",
        "gen_ai.tool.call.id": "toolu_01",
        "toolc.tool.id": "mcp:probe:echo",
        "toolc.tool.kind": "mcp",
        "toolc.risk": "low",
        "toolc.invocation.id": result.invocation_id,
        "toolc.policy.decision": "allow",
    }
    assert first.status.status_code is StatusCode.UNSET
    assert second.name == "execute_tool fetch_page" and second.attributes["toolc.risk"] == "medium"
    assert "gen_ai.tool.call.id" not in (second.attributes or {})
    assert [span.get_span_context().span_id for span in current] == [first.context.span_id, second.context.span_id]


async def test_the_span_is_a_child_of_the_callers_span(rt: Any, exporter: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer_provider().get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent helper") as agent:
        await router(rt).call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    (span,) = tool_spans(exporter)
    assert span.parent is not None and span.parent.span_id == agent.get_span_context().span_id


@pytest.mark.parametrize(("call", "gate"), [
    (("mcp:probe:delete_note", {"note_id": "n1"}, {"admin_token": "wrong"}), "admin_token"),
    (("mcp:probe:echo", {"text": 5}, {}), "validation"),
    (("mcp:probe:write_note", {"text": "t"}, {"mode": "planning"}), "mode"),
    (("mcp:nowhere:ghost", {}, {}), "disabled"),
])
async def test_a_denied_call_is_an_error_span_naming_its_gate(rt: Any, exporter: InMemorySpanExporter,
                                                              call: tuple[str, dict[str, Any], dict[str, Any]],
                                                              gate: str) -> None:
    tool_id, arguments, fields = call
    result = await router(rt).call_tool(tool_id, arguments, context=context(rt, **fields))
    assert result.denied_by == gate, result.error
    (span,) = tool_spans(exporter)
    assert span.status.status_code is StatusCode.ERROR and span.status.description == f"denied by {gate}"
    assert span.attributes["toolc.policy.decision"] == "deny"
    assert span.attributes["toolc.policy.gate"] == gate
    assert span.attributes["error.type"] == "toolc.denied"
    assert "gen_ai.tool.call.arguments" not in span.attributes  # off by default, even on denial


async def test_an_audit_refusal_is_an_error_span_with_gate_audit(rt: Any, exporter: InMemorySpanExporter,
                                                                 tmp_path: Path) -> None:
    routed = rt.Router(audit_sink=BrokenAuditSink(RuntimeError("disk full")))
    result = await routed.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    assert result.denied_by == "audit"
    (span,) = tool_spans(exporter)
    assert span.status.status_code is StatusCode.ERROR and span.attributes["toolc.policy.gate"] == "audit"


async def test_a_tool_error_is_an_error_span(rt: Any, exporter: InMemorySpanExporter) -> None:
    routed = rt.Router(audit_sink=rt.MemoryAuditSink())
    routed.set_server_factory("probe", lambda: "not a server")  # dispatch fails
    result = await routed.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    assert result.is_error and result.denied_by is None
    (span,) = tool_spans(exporter)
    assert span.attributes["toolc.policy.decision"] == "allow"
    assert span.attributes["error.type"] == "tool_error" and span.status.status_code is StatusCode.ERROR


async def test_content_only_on_opt_in_and_never_a_secret(rt: Any, exporter: InMemorySpanExporter,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = router(rt)
    await quiet.call_tool("mcp:probe:echo", {"text": "plain"}, context=context(rt))
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    loud = router(rt)
    assert loud.trace_content
    await loud.call_tool("mcp:probe:echo", {"text": f"say {SECRET}"}, context=context(rt, admin_token=SECRET))
    await loud.call_tool(f"mcp:probe:{SECRET}", {"text": SECRET}, context=context(rt))
    await loud.call_openai_tool_call({"id": f"call_{SECRET}", "type": "function", "function": {
        "name": "mcp:probe:write_note", "arguments": '{"text": "t"}'}}, context=context(rt))
    plain, said, unknown, write = tool_spans(exporter)
    assert "gen_ai.tool.call.arguments" not in plain.attributes and "gen_ai.tool.call.result" not in plain.attributes
    assert said.attributes["gen_ai.tool.call.arguments"] == '{"text": "say [REDACTED]"}'
    assert said.attributes["gen_ai.tool.call.result"] == '{"text": "say [REDACTED]"}'
    assert unknown.name == "execute_tool mcp:probe:[REDACTED]"
    assert write.attributes["gen_ai.tool.call.id"] == "call_[REDACTED]"
    assert "inbox" not in write.attributes["gen_ai.tool.call.arguments"]  # a preset value is never recorded
    for span in exporter.get_finished_spans():
        values = [span.name, *map(str, (span.attributes or {}).values()), str(span.status.description)]
        assert not any(SECRET in value for value in values), span.name


async def test_no_sdk_no_span(rt: Any) -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    telemetry = __import__("toolc_router.telemetry", fromlist=["tracer"])
    assert telemetry.tracer() is None  # the router skips tracing altogether
    seen: list[Any] = []
    routed = router(rt)
    routed.register_postprocessor("*", lambda tool, arguments, result: seen.append(trace.get_current_span())
                                  or result)
    result = await routed.call_tool("mcp:probe:echo", {"text": "x"}, context=context(rt))
    assert not result.is_error
    assert seen and not seen[0].is_recording()
