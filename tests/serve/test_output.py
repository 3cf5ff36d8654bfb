"""Served results always satisfy the output schema the server published (MCP: a server that publishes an
`outputSchema` MUST return conforming `structuredContent`), judged by the official `mcp` client over Streamable
HTTP against the real `toolc serve` process. Behind it: a loopback HTTP API that answers with bodies that break
the document's own response schema, non-object JSON, plain text, no body, error statuses with bodies, and a
`oneOf` answer whose schema is past the served-schema budget; and server-everything's structured-output tool,
once as recorded and once behind a recording whose output schema the real answer breaks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from compiler.codegen.router.serve import serve_file
from compiler.config import Config, NamesConfig
from compiler.pipeline import adhoc_inputs, compile_project
from tests.servers.real import EVERYTHING, require_everything
from tests.support.cli import compiled_project
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.paths import FIXTURES, ROOT
from tests.support.serve import serve_args, serve_env, serving_http

INSPECTOR = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = pytest.mark.servers

WIDGET = {"type": "object", "required": ["id", "name"],
          "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}
GOOD = {"id": 1, "name": "bolt"}
BROKEN = {"id": "one", "name": "bolt"}  # `id` must be an integer
PAIR = {"circle": {"kind": "circle", "size": 1}, "square": {"kind": "square", "size": 2}}
META_TOOLS = ("toolc_search_tools", "toolc_describe_tool", "toolc_call_tool")
BULK = 130
"""Trivial operations of a second document: with them the project is past OpenAI's 128 tools a request, so
`GET /tools?provider=openai-chat` hands out the discovery form."""
ANSWERS: dict[str, tuple[int, str, bytes]] = {
    "good": (200, "application/json", json.dumps(GOOD).encode()),
    "broken": (200, "application/json", json.dumps(BROKEN).encode()),
    "list": (200, "application/json", b"[1, 2, 3]"),
    "text": (200, "text/plain", b"plain words, no JSON"),
    "empty": (204, "application/json", b""),
    "missing": (404, "application/json", b'{"message": "no widget named missing"}'),
    "boom": (500, "application/json", b'{"error": {"code": 5, "detail": "overheated"}}'),
}


def shape(kind: str) -> dict[str, Any]:
    """One `oneOf` branch, bulky enough (about 9 kB) that two of them are past the 16 kB served-schema budget."""
    notes = {f"note_{i}": {"type": "string", "description": f"{kind} note {i}: " + "words " * 30}
             for i in range(40)}
    return {"type": "object", "required": ["kind", "size"], "additionalProperties": False,
            "properties": {"kind": {"type": "string", "enum": [kind]}, "size": {"type": "number"}, **notes}}


def bulk_document() -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "bulk", "version": "1"},
            "paths": {f"/items{i}": {"get": {"operationId": f"getItem{i}", "summary": f"Item {i}",
                                             "responses": {"204": {"description": "nothing"}}}}
                      for i in range(BULK)}}


def document() -> dict[str, Any]:
    case = [{"name": "case", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "openapi": "3.0.3", "info": {"title": "answers", "version": "1"},
        "paths": {
            "/widgets/{case}": {"get": {"operationId": "getWidget", "parameters": case, "responses": {
                "200": {"description": "a widget", "content": {"application/json": {"schema": WIDGET}}},
                "404": {"description": "none", "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/shapes/{case}": {"get": {"operationId": "getShape", "parameters": case, "responses": {
                "200": {"description": "a shape", "content": {"application/json": {"schema": {
                    "type": "object", "oneOf": [{"$ref": "#/components/schemas/Circle"},
                                                {"$ref": "#/components/schemas/Square"}]}}}}}}},
            "/pairs/{case}": {"get": {"operationId": "getPair", "parameters": case, "responses": {
                "200": {"description": "both shapes", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"circle": {"$ref": "#/components/schemas/Circle"},
                                                     "square": {"$ref": "#/components/schemas/Square"}}}}}}}}},
            "/grants/{case}": {"get": {"operationId": "getGrant", "parameters": case, "responses": {
                "201": {"description": "granted", "content": {"application/json": {"schema": WIDGET}}},
                "204": {"description": "granted before: nothing to say"}}}},
            "/widgets": {"get": {"operationId": "listWidgets", "responses": {
                "200": {"description": "widgets", "content": {"application/json": {
                    "schema": {"type": "array", "items": WIDGET}}}}}}},
        },
        "components": {"schemas": {"Circle": shape("circle"), "Square": shape("square")}},
    }


class Answers(QuietHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/pairs/"):
            status, media_type, body = 200, "application/json", json.dumps(PAIR).encode()
        elif self.path.startswith("/grants/"):
            status, media_type, body = (201, "application/json", json.dumps(GOOD).encode()) \
                if self.path.endswith("/new") else (204, "application/json", b"")
        elif self.path.startswith("/shapes/"):
            status, media_type, body = 200, "application/json", b'{"kind": "circle", "size": 2.5}'
        elif self.path == "/widgets":
            status, media_type, body = 200, "application/json", json.dumps([GOOD]).encode()
        else:
            status, media_type, body = ANSWERS[self.path.rsplit("/", 1)[-1]]
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node = require_everything()
    folder = tmp_path_factory.mktemp("answers")
    (folder / "answers.json").write_text(json.dumps(document()))
    (folder / "bulk.json").write_text(json.dumps(bulk_document()))
    recording = json.loads((FIXTURES / "mcp" / "server-everything.json").read_text())
    for tool in (tool for page in recording["tools_list_pages"] for tool in page["tools"]):
        if tool["name"] == "get-structured-content":  # a schema the real server's answer breaks
            tool["outputSchema"]["properties"]["pressure"] = {"type": "number"}
            tool["outputSchema"]["required"].append("pressure")
    (folder / "strict.json").write_text(json.dumps(recording))
    everything = [node, str(EVERYTHING), "stdio"]
    config = {
        "name": "answers", "output": "out",
        "mcp_servers": [
            {"id": "everything", "command": everything,
             "recording": str(FIXTURES / "mcp" / "server-everything.json")},
            {"id": "strict", "command": everything, "recording": str(folder / "strict.json")},
        ],
        "openapi": [{"id": "answers", "path": "answers.json", "base_url": "${ANSWERS_API_URL}"},
                    {"id": "bulk", "path": "bulk.json", "base_url": "${ANSWERS_API_URL}"}],
        # `strict` is compiled from an edited listing on purpose: pinning would refuse its tools (its point here
        # is the output check; tests/router/test_pinning.py is pinning's).
        "gateway": {"pinning": {"off": ["strict"]}},
    }
    return compiled_project(folder, config)


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with loopback_http(Answers) as url:
        yield url


@pytest.fixture(scope="module")
def served(project: Path, api: str) -> Iterator[str]:
    with serving_http(project, serve_env(api, ANSWERS_API_URL=api)) as (url, _):
        yield f"{url}/mcp"


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def listed(client: Client) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.update({tool.name: tool for tool in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


async def test_a_conforming_answer_is_structured_content(served: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        tools = await listed(client)
        assert tools["getWidget"].output_schema["required"] == ["id", "name"]
        result = await client.call_tool("getWidget", {"case": "good"})  # the client checks it against the schema
        assert not result.is_error and result.structured_content == GOOD


@pytest.mark.parametrize(("case", "expected"), [
    ("broken", "/id: 'one' is not of type 'integer'"),
    ("list", "/: [1, 2, 3] is not of type 'object'"),
    ("text", "it holds no JSON value"),
    ("empty", "it is empty"),
])
async def test_a_success_that_breaks_the_schema_reaches_the_caller_as_text(served: str, case: str,
                                                                           expected: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        await listed(client)
        result = await client.call_tool("getWidget", {"case": case})  # never a RuntimeError from the client
        assert result.is_error and result.structured_content is None
        note = result.content[0].text
        assert note.startswith("The result does not match this tool's output schema") and expected in note
        assert text_of(result).endswith(ANSWERS[case][2].decode()) or case == "empty"


@pytest.mark.parametrize(("case", "status", "body"), [
    ("missing", "HTTP 404", "no widget named missing"),
    ("boom", "HTTP 500", "overheated"),
])
async def test_an_error_status_sends_its_body_as_text_only(served: str, case: str, status: str,
                                                           body: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        await listed(client)
        result = await client.call_tool("getWidget", {"case": case})
        # Structured content on an error result is checked too, by the TypeScript SDK (the MCP Inspector):
        # an error body is not what the output schema describes.
        assert result.is_error and result.structured_content is None
        assert result.content[0].text.startswith(status) and body in text_of(result)


async def test_a_one_of_schema_past_the_budget_is_not_published_with_stand_ins(served: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        tools = await listed(client)
        # Whole, it is past the budget; with a stand-in for one branch, one object would fit both branches.
        assert tools["getShape"].output_schema is None
        result = await client.call_tool("getShape", {"case": "circle"})
        assert not result.is_error and result.structured_content == {"kind": "circle", "size": 2.5}
        listing = await client.call_tool("listWidgets", {})  # an array: no schema published, text only
        assert tools["listWidgets"].output_schema is None
        assert not listing.is_error and listing.structured_content is None
        assert json.loads(text_of(listing)) == [GOOD]


async def test_past_the_budget_a_stand_in_is_published_where_it_only_loosens(served: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        tools = await listed(client)
        published = tools["getPair"].output_schema  # two properties: a looser one only accepts more
        assert published is not None and published["$defs"]["Circle"]["properties"]["kind"] == {
            "type": "string", "enum": ["circle"]}
        assert "not expanded" in published["$defs"]["Square"]["description"]
        result = await client.call_tool("getPair", {"case": "both"})
        assert not result.is_error and result.structured_content == PAIR


async def test_success_statuses_with_different_bodies_publish_no_schema(served: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        tools = await listed(client)
        assert tools["getGrant"].output_schema is None  # a 204 could never carry the 201's structured content
        new = await client.call_tool("getGrant", {"case": "new"})
        assert not new.is_error and new.structured_content == GOOD
        again = await client.call_tool("getGrant", {"case": "again"})
        assert not again.is_error and again.content == [] and again.structured_content is None


async def test_a_proxied_tool_result_is_checked_against_its_published_schema(served: str) -> None:
    async with Client(served, read_timeout_seconds=60) as client:
        tools = await listed(client)
        real, strict = tools["everything__get-structured-content"], tools["strict__get-structured-content"]
        assert "pressure" in strict.output_schema["required"] and "pressure" not in real.output_schema["required"]
        fits = await client.call_tool(real.name, {"location": "Chicago"})
        assert not fits.is_error and set(fits.structured_content) == {"temperature", "conditions", "humidity"}
        breaks = await client.call_tool(strict.name, {"location": "Chicago"})
        assert breaks.is_error and breaks.structured_content is None
        assert "'pressure' is a required property" in breaks.content[0].text
        assert json.loads(breaks.content[1].text) == fits.structured_content  # the answer still reaches the caller


@pytest.mark.parametrize("case", ["missing", "broken"])
def test_the_mcp_inspector_accepts_every_result(project: Path, api: str, case: str) -> None:
    """The TypeScript SDK behind the Inspector checks structured content on error results too (-32602 before)."""
    if not INSPECTOR.exists():
        pytest.skip("the MCP Inspector is not installed: npm ci --prefix tests/servers")
    command = [str(INSPECTOR), "--cli", "-e", f"ANSWERS_API_URL={api}", "--method", "tools/call", "--tool-name",
               "getWidget", "--tool-arg", f"case={case}", "--transport", "stdio", "--", sys.executable,
               *serve_args(project)]
    run = subprocess.run(command, env=serve_env(api), cwd=project.parent, capture_output=True, text=True,
                         timeout=120)
    # The Inspector prints the result and exits 5 for an error result ("tool_is_error"), not a rejected one.
    assert run.returncode == 5 and "tool_is_error" in run.stderr, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["isError"] is True and "structuredContent" not in result
    assert ANSWERS[case][2].decode() in "\n".join(block["text"] for block in result["content"])


def served_entries(text: str) -> dict[str, dict[str, Any]]:
    """`_serve.json`: one `"mcp name":{entry}` per line between its two header lines and its closing line."""
    decoder = json.JSONDecoder()
    entries: dict[str, dict[str, Any]] = {}
    for line in text.split("\n")[2:]:
        if line in ("}}", ""):
            break
        name, end = decoder.raw_decode(line)
        entries[name] = json.loads(line[end + 1:].removesuffix(","))
    return entries


def test_every_served_tool_has_a_description(project: Path) -> None:
    for folder in (ROOT / "generated", project.parent / "out"):
        entries = served_entries((folder / "python" / "toolc_router" / "_serve.json").read_text())
        assert len(entries) > 20 and all(entry["description"].strip() for entry in entries.values()), folder
    generated = served_entries((ROOT / "generated" / "python" / "toolc_router" / "_serve.json").read_text())
    assert generated["createPets"]["description"] == "POST /pets/batch"  # no summary, no description: method, path


def test_every_served_kubernetes_operation_has_a_description() -> None:
    build = compile_project(Config(root=ROOT, codegen=False),
                            adhoc_inputs([ROOT / "fixtures" / "corpus" / "openapi" / "kubernetes.json"], ROOT))
    tools = [tool for tool in build.catalog.tools if tool.source == build.catalog.sources[0].id]
    assert sum(not tool.description for tool in tools) == 2  # the document leaves two operations undescribed
    entries = served_entries(serve_file(build.catalog, tools, NamesConfig()).decode())
    assert len(entries) == len(tools) > 1000
    assert all(entry["description"].strip() for entry in entries.values())


async def test_the_discovery_form_handed_out_is_served(served: str) -> None:
    base = served.removesuffix("/mcp")
    async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
        form = (await http.get("/tools", params={"provider": "openai-chat"})).json()
        assert sorted(tool["function"]["name"] for tool in form) == sorted(META_TOOLS)  # too many tools for one
        headers = {"Content-Type": "application/json"}
        found = await http.post("/tools/toolc_search_tools/call?provider=openai-chat", headers=headers,
                                content=json.dumps({"query": "getWidget"}))
        assert found.status_code == 200, found.text
        hits = json.loads(found.json()["content"][0]["text"])  # a list: text only, not structured content
        assert hits[0]["id"] == "openapi:answers:getWidget", hits  # ranked, best first
        called = await http.post("/tools/toolc_call_tool/call?provider=openai-chat", headers=headers,
                                 content=json.dumps({"tool": "openapi:answers:getWidget",
                                                     "arguments": {"case": "good"}}))
        assert called.status_code == 200 and called.json()["structuredContent"] == GOOD
