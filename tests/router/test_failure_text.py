"""Every failure says why (issue 21): a denial names the gate and the setting that would allow the call, an HTTP
error its status with method, path and host, a connection error the host it tried, an MCP tool error its own
text. The same text is in `ToolResult.error`, in a typed stub's `ToolCallError`, and first in the content a
served `isError` result (MCP `tools/call` and the HTTP endpoint) carries."""

from __future__ import annotations

import importlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from compiler.config import OpenApiConfig
from compiler.ir import Catalog, McpBinding, RiskLevel, Source, Tool
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.router import (
    catalog_from,
    load_router,
    make_build,
    probe_server,
    probe_tools,
    write_router,
)

TOKEN = "s3cret-admin"
PARAMS_API = OpenApiConfig(id="params", path="fixtures/openapi/params.yaml", base_url="${PARAMS_API_URL}/v1")
ALLOWED = {"mode": "execution", "project_id": "p1", "spec_frozen": True, "spec_hash": "h", "admin_token": TOKEN}


def _failing_tool() -> Tool:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return Tool(id="mcp:probe:explode", source="probe", name="explode", description="explode", input_schema=schema,
                binding=McpBinding(server="probe", tool_name="explode"), risk=RiskLevel.LOW)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Any]:
    http = catalog_from(recordings=(), openapi=("params",))
    probe = Catalog(sources=(Source(id="probe", kind="mcp", location="probe"),),
                    tools=(*probe_tools(), _failing_tool()))
    catalog = Catalog(sources=(*probe.sources, *http.sources),
                      tools=tuple(sorted((*probe.tools, *http.tools), key=lambda t: t.id)))
    build = make_build(catalog, openapi=[PARAMS_API],
                       policy={"deny_tools": ["mcp:probe:fetch_*"], "admin_token_env": "PROBE_ADMIN_TOKEN",
                               "deny_side_effect_tags": ["fs.delete"]})
    with load_router(write_router(build, tmp_path)) as module:
        yield module


def _router(rt: Any, **environ: str) -> Any:
    # getPet's bearer credential is set (a call without it is refused before anything is sent), unless overridden.
    router = rt.Router(audit_sink=rt.MemoryAuditSink(),
                       environ={"PROBE_ADMIN_TOKEN": TOKEN, "TOOLC_PARAMS_BEARER": "t0ken", **environ})
    server = probe_server()

    @server.tool()
    def explode(text: str) -> str:
        raise ToolError(f"the probe refuses {text!r}")

    router.set_server_factory("probe", lambda: server)
    return router


def _context(rt: Any, **fields: Any) -> Any:
    return rt.InvocationContext(**{**ALLOWED, **fields})


def _said_everywhere(rt: Any, result: Any, text: str) -> None:
    """`text` in the result's error, the typed stub's exception, and the first content block a server sends."""
    assert result.is_error and text in (result.error or ""), result.error
    stubs = importlib.import_module("toolc_router.stubs")
    with pytest.raises(stubs.ToolCallError) as raised:
        stubs.structured(result.tool_id, result)
    assert str(raised.value) == f"{result.tool_id}: {result.error}"
    served = importlib.import_module("toolc_router.serve_mcp").call_result(result)
    assert served.is_error and served.content[0].text == result.error


@pytest.mark.parametrize(("tool", "context", "gate", "text"), [
    ("echo", {"mode": "dreaming"}, "mode",
     "unknown mode 'dreaming' (InvocationContext.mode is 'planning' or 'execution')"),
    ("write_note", {"mode": "planning"}, "mode",
     "planning mode cannot use tools with side effects (this one: fs.write); call with "
     "InvocationContext(mode='execution')"),
    ("write_note", {"spec_frozen": False}, "spec_frozen",
     "execution mode requires spec_frozen=True and a spec_hash for a high-risk tool: call with "
     "InvocationContext(spec_frozen=True, spec_hash=...)"),
    ("explode", {"project_id": None}, None, None),  # low risk: no project needed (the call goes through)
    ("write_note", {"project_id": None}, "project_binding",
     "tool requires a project_id (its risk is high): call with InvocationContext(project_id=...)"),
    ("fetch_page", {}, "disabled",
     "tool is not allowed by the project policy: it matches policy.deny_tools in the project file"),
    ("write_note", {"policy_blacklist": ("fs.*",)}, "side_effect_policy",
     "side effect 'fs.write' is blacklisted by InvocationContext.policy_blacklist ('fs.*')"),
    ("delete_note", {}, "side_effect_policy",
     "side effect 'fs.delete' is blacklisted by policy.deny_side_effect_tags in the project file ('fs.delete')"),
])
async def test_a_denial_names_the_gate_and_the_setting(rt: Any, tool: str, context: dict[str, Any],
                                                       gate: str | None, text: str | None) -> None:
    arguments = {"note_id": "n"} if tool == "delete_note" else {"url": "u"} if tool == "fetch_page" else {"text": "t"}
    result = await _router(rt).call_tool(f"mcp:probe:{tool}", arguments, context=_context(rt, **context))
    if gate is None:
        assert result.denied_by is None
        return
    assert result.denied_by == gate
    assert result.error == f"denied by {gate}: {text}"
    _said_everywhere(rt, result, text or "")


async def test_an_admin_token_denial_names_the_variable_and_why_the_tool_needs_it(rt: Any) -> None:
    router = _router(rt)
    spec = importlib.import_module("toolc_router._types").PolicySpec
    router.policy.policy = spec(admin_tools=("*write*",), admin_token_env="PROBE_ADMIN_TOKEN")
    result = await router.call_tool("mcp:probe:write_note", {"text": "t"}, context=_context(rt, admin_token=None))
    assert result.error == ("denied by admin_token: tool requires an admin_token (it matches policy.admin_tools in "
                            "the project file): call with InvocationContext(admin_token=...) equal to "
                            "$PROBE_ADMIN_TOKEN")
    wrong = await router.call_tool("mcp:probe:write_note", {"text": "t"}, context=_context(rt, admin_token="x"))
    assert wrong.error == "denied by admin_token: admin_token does not match $PROBE_ADMIN_TOKEN"
    unset = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={}, policy=router.policy.policy)
    none = await unset.call_tool("mcp:probe:write_note", {"text": "t"}, context=_context(rt))
    assert none.error == ("denied by admin_token: no admin token is configured ($PROBE_ADMIN_TOKEN is unset; "
                          "policy.admin_token_env names the variable)")
    plain = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={}, policy=spec(admin_token_env="PROBE_ADMIN_TOKEN"))
    by_risk = await plain.call_tool("mcp:probe:delete_note", {"note_id": "n"}, context=_context(rt, admin_token=None))
    assert by_risk.error == ("denied by admin_token: tool requires an admin_token (its risk is critical, at or above "
                             "policy.admin_min_risk critical): call with InvocationContext(admin_token=...) equal "
                             "to $PROBE_ADMIN_TOKEN")
    _said_everywhere(rt, result, "equal to $PROBE_ADMIN_TOKEN")


async def test_an_unknown_name_suggests_the_tool_it_differs_from_only_in_case_and_separators(rt: Any) -> None:
    router = _router(rt)
    result = await router.call_tool("get_pet", {"id": 7}, context=_context(rt))
    assert result.error == "denied by disabled: unknown tool 'get_pet'; did you mean 'getPet'?"
    nothing = await router.call_tool("fetch_the_moon", {}, context=_context(rt))
    assert nothing.error == "denied by disabled: unknown tool 'fetch_the_moon'"
    # A tool the lists refuse is never suggested: the suggestion must not reveal it.
    spec = importlib.import_module("toolc_router._types").PolicySpec
    denying = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={}, policy=spec(deny_tools=("getPet",)))
    hidden = await denying.call_tool("GET-PET", {"id": 7}, context=_context(rt))
    assert hidden.error == "denied by disabled: unknown tool 'GET-PET'"
    denying.policy.disable("openapi:params:listPets")  # a run-time switch counts too
    off = await denying.call_tool("list_pets", {}, context=_context(rt))
    assert off.error == "denied by disabled: unknown tool 'list_pets'"


async def test_a_runtime_disable_says_how_to_enable(rt: Any) -> None:
    router = _router(rt)
    router.policy.disable("mcp:probe:echo")
    result = await router.call_tool("mcp:probe:echo", {"text": "t"}, context=_context(rt))
    assert result.error == ("denied by disabled: tool is disabled at run time "
                            "(router.policy.enable('mcp:probe:echo') enables it)")


async def test_an_mcp_tool_error_carries_the_tools_own_text(rt: Any) -> None:
    result = await _router(rt).call_tool("mcp:probe:explode", {"text": "boom"}, context=_context(rt))
    assert result.error is not None and result.error.startswith("the tool reported an error: ")
    assert "the probe refuses 'boom'" in result.error
    stubs = importlib.import_module("toolc_router.stubs")
    assert str(stubs.ToolCallError(result.tool_id, result)) == f"mcp:probe:explode: {result.error}"


class Unauthorized(QuietHandler):
    def do_GET(self) -> None:
        self.send_json(401, json.dumps({"message": "Bad credentials"}).encode())


async def test_a_401_names_status_method_path_and_host(rt: Any) -> None:
    with loopback_http(Unauthorized) as url:
        result = await _router(rt, PARAMS_API_URL=url).call_tool("openapi:params:getPet", {"id": 7},
                                                                 context=_context(rt))
    assert result.error == (f"HTTP 401 Unauthorized from GET /pets/{{id}} on {url}/v1; credentials: "
                            "$TOOLC_PARAMS_BEARER (set)")  # the variable the operation's scheme reads
    assert "t0ken" not in str(result)
    assert result.structured == {"message": "Bad credentials"}  # the answer's own reason stays with it
    assert result.content[1]["text"] == '{"message": "Bad credentials"}'
    _said_everywhere(rt, result, "HTTP 401 Unauthorized from GET /pets/{id} on http://127.0.0.1:")
    with loopback_http(Unauthorized) as url:  # unset: refused before anything is sent, naming the variable
        router = _router(rt, PARAMS_API_URL=url, TOOLC_PARAMS_BEARER="")
        unset = await router.call_tool("openapi:params:getPet", {"id": 7}, context=_context(rt))
    assert unset.error == "no credential set for this operation: set TOOLC_PARAMS_BEARER; refused"


class Throttled(QuietHandler):
    """Answers each request with the next of `replies` (status, Retry-After or None), then 200; counts them."""

    replies: ClassVar[list[tuple[int, str | None]]] = []
    seen: ClassVar[list[str]] = []

    def _answer(self) -> None:
        type(self).seen.append(self.command)
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, after = type(self).replies.pop(0) if type(self).replies else (200, None)
        payload = json.dumps({"id": 7, "name": "Rex"} if status == 200 else {"message": "slow down"}).encode()
        self.send_response(status)
        if after is not None:
            self.send_header("Retry-After", after)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer


async def _throttled(rt: Any, tool: str, arguments: dict[str, Any],
                     replies: list[tuple[int, str | None]]) -> tuple[Any, list[str]]:
    Throttled.replies, Throttled.seen = list(replies), []
    with loopback_http(Throttled) as url:
        result = await _router(rt, PARAMS_API_URL=url).call_tool(tool, arguments, context=_context(rt))
    return result, Throttled.seen


async def test_a_429_or_503_with_retry_after_is_retried_only_where_that_is_safe(rt: Any) -> None:
    """An idempotent call (GET) is sent again as Retry-After asks (seconds or an HTTP-date), at most twice and
    only for a short wait; a POST never is (it may have taken effect): its answer is the result, saying so."""
    ok, seen = await _throttled(rt, "openapi:params:getPet", {"id": 7}, [(429, "0"), (503, "Wed, 21 Oct 2015 07:28:00 GMT")])
    assert not ok.is_error and ok.structured == {"id": 7, "name": "Rex"} and seen == ["GET", "GET", "GET"]
    gave_up, seen = await _throttled(rt, "openapi:params:getPet", {"id": 7}, [(429, "0")] * 3)
    assert seen == ["GET"] * 3
    assert gave_up.error is not None and gave_up.error.startswith("HTTP 429 Too Many Requests from GET /pets/{id}")
    assert gave_up.error.endswith("; retried 2 times as Retry-After asked")
    too_long, seen = await _throttled(rt, "openapi:params:getPet", {"id": 7}, [(429, "3600")])
    assert seen == ["GET"] and too_long.is_error  # an hour is not waited for within a call
    no_header, seen = await _throttled(rt, "openapi:params:getPet", {"id": 7}, [(503, None)])
    assert seen == ["GET"] and no_header.is_error
    for crafted in ("soon", "-1", "9" * 400, "0.5", "Wed, 21 Oct 2015 07:28:00", "\u00b2"):  # the API's own text
        not_a_wait, seen = await _throttled(rt, "openapi:params:getPet", {"id": 7}, [(503, crafted)])
        assert seen == ["GET"] and (not_a_wait.error or "").startswith("HTTP 503 "), (crafted, not_a_wait.error)
    post, seen = await _throttled(rt, "openapi:params:createPet", {"name": "Rex"}, [(429, "0")])
    assert seen == ["POST"] and (post.error or "").startswith("HTTP 429 Too Many Requests from POST /pets"), post.error


async def test_a_host_that_does_not_resolve_is_named(rt: Any) -> None:
    router = _router(rt, PARAMS_API_URL="http://user:pw@no-such-host.invalid:8443")
    result = await router.call_tool("openapi:params:getPet", {"id": 7}, context=_context(rt))
    assert result.error is not None
    assert result.error.startswith("cannot connect for GET /pets/{id} on http://no-such-host.invalid:8443/v1: "
                                   "ConnectError: "), result.error
    assert "pw" not in result.error  # user-info is never shown
    _said_everywhere(rt, result, "no-such-host.invalid")


async def test_a_refused_connection_names_host_and_port(rt: Any) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    router = _router(rt, PARAMS_API_URL=f"http://127.0.0.1:{port}")
    result = await router.call_tool("openapi:params:getPet", {"id": 7}, context=_context(rt))
    assert (result.error or "").startswith(f"cannot connect for GET /pets/{{id}} on http://127.0.0.1:{port}/v1: "
                                           "ConnectError")


# -- through a generated stub, in a process of its own (the generated packages and nothing of toolc) -------------

class PetAnswers(QuietHandler):
    """GET /v1/pets/1: a pet that breaks the schema's types (id a string); /v1/pets/2: 401."""

    def do_GET(self) -> None:
        if self.path.startswith("/v1/pets/2"):
            self.send_json(401, b'{"message": "Bad credentials"}')
        else:
            self.send_json(200, json.dumps({"id": "one", "name": "Rex", "unlisted": [1]}).encode())


STUB_DRIVER = '''
import asyncio, json, sys
import toolc_router
from params import ToolCallError, ToolOutputError, get_pet

router = toolc_router.configure(toolc_router.Router(audit_sink=toolc_router.MemoryAuditSink(),
                                                    environ={"PARAMS_API_URL": sys.argv[1],
                                                             "TOOLC_PARAMS_BEARER": "t0ken"}))
context = toolc_router.InvocationContext(project_id="p")

async def main():
    found = {}
    try:
        await get_pet(id_=1, context=context)
    except ToolOutputError as exc:
        found["output"] = {"message": str(exc), "structured": exc.structured, "is_call_error": isinstance(exc, ToolCallError),
                           "problems": len(exc.validation_error.errors()), "status": exc.result.is_error}
    try:
        await get_pet(id_=2, context=context)
    except ToolOutputError:
        found["unauthorized"] = "wrong class"
    except ToolCallError as exc:
        found["unauthorized"] = str(exc)
    print(json.dumps(found))

asyncio.run(main())
'''


def test_a_stub_raises_why_and_keeps_the_raw_answer(tmp_path: Path) -> None:
    from compiler.build import Build
    from compiler.codegen.router.router_package import generate_router
    from compiler.codegen.stubs.stub_packages import generate_stubs
    from compiler.config import Config
    from compiler.infra.diagnostics import Diagnostics
    from compiler.refs import RefResolver
    from tests.support.codegen import run_isolated, write_files
    from tests.support.paths import ROOT

    diagnostics = Diagnostics()
    build = Build(config=Config(root=ROOT, openapi=(PARAMS_API,)), resolver=RefResolver(diagnostics),
                  catalog=catalog_from(recordings=(), openapi=("params",)), diagnostics=diagnostics, targets=())
    write_files(tmp_path, {**generate_router(build), **generate_stubs(build)})
    (tmp_path / "driver.py").write_text(STUB_DRIVER)
    with loopback_http(PetAnswers) as url:
        ran = run_isolated(tmp_path, f"sys.argv = ['driver', {url!r}]\nexec(open('driver.py').read())")
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found["output"] == {
        "message": "openapi:params:getPet: the answer does not fit GetPetOutput: /id: Input should be a valid "
                   "integer, unable to parse string as an integer; the raw answer is on this exception's "
                   ".structured",
        "structured": {"id": "one", "name": "Rex", "unlisted": [1]}, "is_call_error": True, "problems": 1,
        "status": False}
    assert found["unauthorized"] == (f"openapi:params:getPet: HTTP 401 Unauthorized from GET /pets/{{id}} on "
                                     f"{url}/v1; credentials: $TOOLC_PARAMS_BEARER (set)")


def test_a_text_answer_is_typed_where_the_schema_is_a_string(rt: Any) -> None:
    """An operation answering text (`*/*`, `text/plain`) for a `type: string` schema has no structured content;
    the stub types its text rather than refusing a value its schema accepts."""
    from pydantic import BaseModel, RootModel

    stubs = importlib.import_module("toolc_router.stubs")
    text = rt.ToolResult(content=[{"type": "text", "text": "attached"}], tool_id="t")
    assert stubs.typed(RootModel[str], "t", text).root == "attached"

    class Pod(BaseModel):
        name: str

    with pytest.raises(stubs.ToolCallError, match="t: the tool returned no structured content") as raised:
        stubs.typed(Pod, "t", text)
    assert not isinstance(raised.value, stubs.ToolOutputError) and raised.value.result is text


def test_a_model_that_would_change_the_answer_is_not_returned(rt: Any) -> None:
    """pydantic's lax mode reads `"0.16001e0"` as the number 0.16001 (prism-sweep A2, GitHub's dependabot alerts):
    a value the schema does not accept, silently altered. The stub raises with the answer as sent instead; a value
    the schema accepts (`1.0` for an integer) is returned."""
    from pydantic import BaseModel, ConfigDict

    class Epss(BaseModel):
        model_config = ConfigDict(extra="allow")
        percentile: float | None = None
        count: int | None = None

    stubs = importlib.import_module("toolc_router.stubs")
    sent = {"percentile": "0.16001e0", "other": [1, {"x": None}]}
    answer = rt.ToolResult(structured=sent, tool_id="t")
    with pytest.raises(stubs.ToolOutputError) as raised:
        stubs.typed(Epss, "t", answer)
    assert str(raised.value) == ("t: the answer does not fit Epss: /percentile: the model would change the value "
                                 "sent; the raw answer is on this exception's .structured")
    assert raised.value.structured == sent and raised.value.validation_error is None
    fine = stubs.typed(Epss, "t", rt.ToolResult(structured={"percentile": 0.5, "count": 3.0, "other": True}))
    assert (fine.percentile, fine.count, fine.model_extra) == (0.5, 3, {"other": True})
