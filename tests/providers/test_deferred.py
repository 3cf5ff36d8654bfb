"""Issue 24: the providers' own deferred loading, sendable as is. OpenAI Responses: `tool_search` and the tools in
`namespace` groups of fewer than 10 functions, each deferred and as strict as the tool allows; Claude: the tool
search tool and every tool deferred, while it fits a request. Checked against the official SDKs' request types,
sent through each SDK to a loopback API that records the body, and a namespaced call routed back by the router."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param
from openai.types.responses import NamespaceToolParam, ToolSearchToolParam
from openai.types.responses.namespace_tool_param import ToolFunction

from compiler.build import Build
from compiler.config import Config, load_config
from compiler.fit.namespaces import SIZE
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.providers import codes
from compiler.providers.anthropic import ANTHROPIC, AnthropicDialect
from tests.support.loopback import Recorder, recording_api
from tests.support.paths import ROOT
from tests.support.router import load_router
from tests.support.sdk import ProviderApi, conforms, provider_api

GITHUB = ROOT / "fixtures" / "corpus" / "openapi" / "github.json"
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TARGETS = ("openai-responses", "anthropic")


@pytest.fixture(scope="module")
def github() -> Build:
    build = compile_project(Config(root=ROOT, codegen=False), adhoc_inputs([GITHUB], ROOT), targets=TARGETS)
    assert not build.diagnostics.has_errors
    return build


def _forms(build: Build, target: str) -> dict[str, Any]:
    forms: dict[str, Any] = json.loads(build.files["schemas/toolsets/index.json"])["targets"][target]["forms"]
    return forms


def test_openai_namespaces_hold_every_tool_once_deferred_and_pass_the_sdk_types(github: Build) -> None:
    tools = json.loads(github.files["schemas/openai-responses.deferred.json"])
    search, *namespaces = tools
    conforms(search, ToolSearchToolParam)
    assert search == {"type": "tool_search"}
    definitions = github.providers["openai-responses"].tools  # as in schemas/openai-responses.json
    by_name = {definition["name"]: definition for definition in definitions.values()}
    seen: list[str] = []
    for namespace in namespaces:
        conforms(namespace, NamespaceToolParam)
        assert OPENAI_NAME.match(namespace["name"]) and 0 < len(namespace["description"]) <= 120
        assert 1 <= len(namespace["tools"]) <= SIZE  # OpenAI advises fewer than 10 per namespace
        for function in namespace["tools"]:
            conforms(function, ToolFunction)
            assert function == {**by_name[function["name"]], "defer_loading": True}  # strict as the tool allows
            seen.append(function["name"])
    assert sorted(seen) == sorted(by_name)  # every tool, once
    assert len({namespace["name"] for namespace in namespaces}) == len(namespaces)
    assert sum(function["strict"] for namespace in namespaces for function in namespace["tools"]) > 1000
    forms = _forms(github, "openai-responses")
    assert forms["all"]["sendable"] is False and forms["deferred"]["sendable"] is True
    assert forms["deferred"]["start_tokens"] <= 6_000  # the target for GitHub
    assert forms["discovery"]["start_tokens"] < forms["deferred"]["start_tokens"] < forms["toolsets"]["start_tokens"]


def test_claude_deferred_file_is_the_tools_argument_and_passes_the_sdk_types(github: Build) -> None:
    search, *tools = json.loads(github.files["schemas/anthropic.deferred.json"])
    conforms(search, ToolSearchToolBm25_20251119Param)
    everything = json.loads(github.files["schemas/anthropic.json"])
    assert tools == [{**tool, "defer_loading": True} for tool in everything]
    for tool in tools:
        conforms(tool, ToolParam)
    forms = _forms(github, "anthropic")
    assert forms["deferred"] == {"file": "schemas/anthropic.deferred.json", "sendable": True, "start_tokens": 25}


def test_a_deferred_form_over_the_request_limit_is_said_and_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    deferral = ANTHROPIC.deferral
    assert deferral is not None
    monkeypatch.setattr(AnthropicDialect, "deferral", replace(deferral, max_bytes=2_000))
    build = compile_project(Config(root=ROOT, codegen=False), adhoc_inputs([ROOT / "fixtures/openapi/params.yaml"],
                                                                             ROOT), targets=TARGETS)
    assert "schemas/anthropic.deferred.json" not in build.files
    (found,) = [d for d in build.diagnostics if d.code == codes.DEFERRED_OVER_LIMIT]
    assert found.provider == "anthropic" and "2,000-byte request limit" in found.message
    assert "schemas/toolsets/index.json" in found.message  # where to go instead
    assert _forms(build, "anthropic")["deferred"] == {"file": None, "sendable": False, "start_tokens": 25}
    assert "schemas/openai-responses.deferred.json" in build.files  # OpenAI documents no such limit


@pytest.fixture(scope="module")
def pets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """Two OpenAPI documents (two toolsets, two namespaces) compiled with the router."""
    out = tmp_path_factory.mktemp("pets")
    project = {"name": "pets", "output": "gen", "targets": list(TARGETS), "openapi": [
        {"id": "params", "path": str(ROOT / "fixtures/openapi/params.yaml"), "base_url": "${PETS_URL}/v1"},
        {"id": "petstore", "path": str(ROOT / "fixtures/corpus/oai-examples/v3.0/petstore-expanded.yaml"),
         "base_url": "${PETS_URL}/api"}]}
    (out / "toolc.yaml").write_text(yaml.safe_dump(project))
    build = compile_project(load_config(out / "toolc.yaml"))
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics]
    write_build(build, out / "gen")
    with load_router(out / "gen" / "python") as module:
        yield module, out / "gen"


FROZEN = {"mode": "execution", "project_id": "proj", "spec_frozen": True, "spec_hash": "sha256:abc"}


def _router(module: Any, api: str, tmp: Path) -> Any:
    router = module.configure(module.Router(audit_sink=module.SqliteAuditSink(tmp / "audit.db"),
                                            environ={**os.environ, "PETS_URL": api, "TOOLC_PARAMS_APIKEY": "k",
                                                     "TOOLC_PARAMS_BEARER": "b"}))
    router.default_context = module.InvocationContext(**FROZEN)
    return router


def _provider_name(folder: Path, target: str, tool_id: str) -> str:
    names = json.loads((folder / f"schemas/{target}.names.json").read_text())["tools"]
    (name,) = [name for name, entry in names.items() if entry["tool"] == tool_id]
    return name


def test_openai_sdk_sends_the_file_and_a_namespaced_call_routes_back(pets: tuple[Any, Path], tmp_path: Path) -> None:
    import openai

    module, folder = pets
    tools = json.loads((folder / "schemas/openai-responses.deferred.json").read_text())
    assert len(tools) == 3  # tool_search, then one namespace per document
    name = _provider_name(folder, "openai-responses", "openapi:params:getPet")
    (namespace,) = [item["name"] for item in tools[1:] if name in {f["name"] for f in item["tools"]}]
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": namespace, "name": name,
            "arguments": '{"id": 9}', "status": "completed"}
    answer = {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5.4", "status": "completed",
              "output": [call], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    with provider_api({"responses": answer}) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="test", max_retries=0)
        response = client.responses.create(model="gpt-5.4", input="Find pet 9", tools=tools)
    ((path, body),) = ProviderApi.requests
    assert path == "/v1/responses" and body["tools"] == tools  # what the SDK sends is the file, as is
    (item,) = response.output
    assert item.type == "function_call" and item.namespace == namespace

    with recording_api() as api:
        router = _router(module, api, tmp_path)
        try:
            result = asyncio.run(router.call_openai_tool_call(item))
        finally:
            router.audit.close()
    assert (result.tool_id, result.call_id, result.is_error) == ("openapi:params:getPet", "call_1", False)
    assert Recorder.requests[-1]["path"] == "/v1/pets/9"


def test_anthropic_sdk_sends_the_file_and_the_tool_use_routes_back(pets: tuple[Any, Path], tmp_path: Path) -> None:
    import anthropic

    module, folder = pets
    tools = json.loads((folder / "schemas/anthropic.deferred.json").read_text())
    assert isinstance(tools, list) and tools[0]["type"] == "tool_search_tool_bm25_20251119"
    assert len(tools) == 13 and all(tool["defer_loading"] is True for tool in tools[1:])  # the 12 operations
    name = _provider_name(folder, "anthropic", "openapi:petstore:find pet by id")
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
              "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": {"id": 4}}],
              "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    with provider_api({"messages": answer}) as url:
        client = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0)
        message = client.messages.create(model="claude-sonnet-5", max_tokens=64, tools=tools,
                                         messages=[{"role": "user", "content": "Find pet 4"}])
    ((path, body),) = ProviderApi.requests
    assert path == "/v1/messages" and body["tools"] == tools
    (block,) = message.content
    with recording_api() as api:
        router = _router(module, api, tmp_path)
        try:
            result = asyncio.run(router.call_anthropic_tool_use(block))
        finally:
            router.audit.close()
    assert (result.tool_id, result.is_error) == ("openapi:petstore:find pet by id", False)
    assert Recorder.requests[-1]["path"] == "/api/pets/4"


def test_report_and_list_tokens_say_what_each_form_costs(github: Build) -> None:
    from click.testing import CliRunner

    from compiler.cli import main

    forms = github.report_extra()["targets"]["openai-responses"]["forms"]
    assert set(forms) == {"all", "toolsets", "deferred", "discovery"} and forms == _forms(github, "openai-responses")
    out = CliRunner().invoke(main, ["list", "--tokens", "--target", "openai-responses,gemini",
                                    str(ROOT / "fixtures/openapi/params.yaml")])
    assert out.exit_code == 0, out.output
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith(("openai-responses ", "gemini "))]
    deferral = [row for row in rows if row[1:3] == ["native", "deferral"]]
    assert [row[0] for row in deferral] == ["openai-responses"]  # Gemini has no deferral: discovery is its way
    assert deferral[0][-1] == "schemas/openai-responses.deferred.json" and int(deferral[0][3].replace(",", "")) > 0
    assert sum(row[1] == "discovery" for row in rows) == 2


def test_namespaces_keep_resources_together_in_even_groups() -> None:
    from compiler.fit.namespaces import plan_namespaces
    from compiler.fit.toolsets import Toolset
    from compiler.ir import HttpBinding, Tool

    def operation(path: str, method: str, title: str) -> Tool:
        return Tool(id=f"openapi:api:{method}{path}", source="api", name=f"{method}{path}", description="",
                    title=title, input_schema={"type": "object"},
                    binding=HttpBinding(method=method, path=path, base_url="http://127.0.0.1", arguments=()))

    hooks = [operation(f"/repos/{{r}}/hooks{suffix}", method, f"{verb} a webhook")
             for suffix, method, verb in [("", "GET", "List"), ("", "POST", "Create"), ("/{id}", "GET", "Get"),
                                          ("/{id}", "PATCH", "Update"), ("/{id}", "DELETE", "Delete")]]
    keys = [operation(f"/repos/{{r}}/keys{suffix}", method, title)
            for suffix, method, title in [("", "GET", "List deploy keys"), ("", "POST", "Create a deploy key"),
                                          ("/{id}", "GET", "Get a deploy key"), ("/{id}", "DELETE", "Delete a deploy key"),
                                          ("/{id}/x", "GET", "Check a deploy key")]]
    tools = {tool.id: tool for tool in [*keys, *hooks]}
    toolset = Toolset("api-repos-1", tuple(sorted(tools)), "tag")
    first, second = plan_namespaces([toolset], tools)
    assert (len(first.tool_ids), len(second.tool_ids)) == (5, 5)  # 10 tools: 5 + 5, not 9 + 1
    assert {first.name, second.name} == {"api_repos_hooks", "api_repos_keys"}
    hooks_namespace = first if first.name.endswith("hooks") else second
    assert hooks_namespace.description == "Delete, list, get, update, create a webhook"  # by path, then method
    assert plan_namespaces([toolset], tools) == [first, second]  # deterministic
