"""Retries as an audited decision (issue 25): a loopback API answering 503 + Retry-After twice, then 200. A GET is
sent three times and succeeds; a POST is sent once and fails (it may have taken effect). Every answer that asked
for a retry leaves its decision in the call's end row (`retries`): retried after how long, or why not.
`gateway.retries` rules bound the retries per tool, source and caller."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from compiler.config import Config, GatewayConfig, OpenApiConfig, RetriesConfig
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.router import catalog_from, load_router, make_build, write_router

PARAMS_API = OpenApiConfig(id="params", path="fixtures/openapi/params.yaml", base_url="${PARAMS_API_URL}/v1")
CONTEXT = {"mode": "execution", "project_id": "p1", "spec_frozen": True, "spec_hash": "h"}


class Busy(QuietHandler):
    """503 with `Retry-After: 0` to the first two requests of each test, then 200; records the methods."""

    seen: ClassVar[list[str]] = []

    def _answer(self) -> None:
        type(self).seen.append(self.command)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if len(type(self).seen) <= 2:
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_json(200, json.dumps({"id": 7, "name": "Rex"}).encode())

    do_GET = do_POST = _answer


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    build = make_build(catalog_from(recordings=(), openapi=("params",)), openapi=[PARAMS_API])
    retries = RetriesConfig.model_validate({"rules": [{"tools": "getPet", "caller": "impatient", "max_retries": 0}]})
    build.config = Config(root=build.config.root, openapi=(PARAMS_API,), gateway=GatewayConfig(retries=retries))
    with load_router(write_router(build, tmp_path)) as module:
        yield module


async def call(rt: Any, tool: str, arguments: dict[str, Any], actor: str | None = None,
               **settings: Any) -> tuple[Any, list[str], dict[str, Any]]:
    Busy.seen = []
    with loopback_http(Busy) as url:
        router = rt.Router(audit_sink=rt.MemoryAuditSink(),
                           environ={"PARAMS_API_URL": url, "TOOLC_PARAMS_BEARER": "t0ken"}, **settings)
        result = await router.call_tool(tool, arguments, context=rt.InvocationContext(**CONTEXT, actor=actor))
        await router.aclose()
    [end] = [event.payload for event in router.audit.events if event.event_type == "tool_invocation_end"]
    return result, list(Busy.seen), end


async def test_a_get_is_retried_twice_and_succeeds_each_retry_audited(rt: Any) -> None:
    result, seen, end = await call(rt, "openapi:params:getPet", {"id": 7})
    assert seen == ["GET", "GET", "GET"]
    assert not result.is_error and result.structured == {"id": 7, "name": "Rex"}
    assert end["status"] == "success"
    assert end["retries"] == [
        {"status": 503, "method": "GET", "retry_after": "0", "retried": True, "wait_s": 0.0},
        {"status": 503, "method": "GET", "retry_after": "0", "retried": True, "wait_s": 0.0},
    ]


async def test_a_post_is_never_replayed_and_the_refusal_to_retry_is_audited(rt: Any) -> None:
    result, seen, end = await call(rt, "openapi:params:createPet", {"name": "Rex"})
    assert seen == ["POST"]
    assert result.is_error and (result.error or "").startswith("HTTP 503 Service Unavailable from POST /pets")
    assert end["status"] == "error"
    assert end["retries"] == [{"status": 503, "method": "POST", "retry_after": "0", "retried": False,
                               "why": "POST is not idempotent"}]


async def test_gateway_retries_bound_the_retries_per_tool_and_caller(rt: Any) -> None:
    assert (rt._types.RetrySpec(tools="getPet", caller="impatient", max_retries=0),) == rt.router.RETRIES
    result, seen, end = await call(rt, "openapi:params:getPet", {"id": 7}, "impatient")
    assert seen == ["GET"] and result.is_error
    assert end["retries"] == [{"status": 503, "method": "GET", "retry_after": "0", "retried": False,
                               "why": "retried 0 times already (at most 0)"}]
    once = (rt._types.RetrySpec(tools="*", source="params", max_retries=1),)
    result, seen, end = await call(rt, "openapi:params:getPet", {"id": 7}, "anyone", retries=once)
    assert seen == ["GET", "GET"] and result.is_error
    assert [decision["retried"] for decision in end["retries"]] == [True, False]
    short = (rt._types.RetrySpec(max_wait_s=0.0),)  # Retry-After 0 still fits; the API's own wait is what counts
    result, seen, _ = await call(rt, "openapi:params:getPet", {"id": 7}, retries=short)
    assert seen == ["GET"] * 3 and not result.is_error
