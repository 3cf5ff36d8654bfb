"""The generated router reads the providers' name maps (format 1, `compiler.providers.namemap`) and maps a model's
tool call back to the tool id and wire arguments exactly as `namemap.arguments_to_wire` does."""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.build import Build
from compiler.cli import main
from compiler.config import Config, load_config
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Tool
from compiler.pipeline import compile_project
from compiler.providers.namemap import arguments_to_wire
from compiler.providers.schemas import emit_providers
from compiler.refs import RefResolver, unescape_token
from tests.support.paths import FIXTURES, ROOT
from tests.support.providers import catalog_of, make_tool, parameters_of
from tests.support.router import catalog_from, load_router, make_build, name_map, with_name_maps, write_router

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")
NOWHERE = Path("/nonexistent-toolc-out")  # no previous output: nothing `# toolc: keep` could carry over
MAX_DEPTH = 4  # recursive schemas ($ref cycles) are unrolled this deep


# Projects: the default one, and one whose name maps use every shape feature ---------------------------------

@dataclass
class Project:
    build: Build
    providers: Any
    """The generated router's `providers` module."""

    def pairs(self) -> list[tuple[str, str, Any]]:
        """(target, provider tool name, lowered parameters schema) for every tool of every target."""
        found = []
        for target in TARGETS:
            output = self.build.providers[target]
            for name, entry in output.names["tools"].items():
                found.append((target, name, parameters_of(target, output.tools[entry["tool"]])))
        return found


def _generated_providers(folder: Path) -> Any:
    # The functions under test only use their own module's globals, so they outlive the import context.
    with load_router(folder):
        return importlib.import_module("toolc_router.providers")


def default_build() -> Build:
    return compile_project(load_config(ROOT / "toolc.yaml"), out_dir=NOWHERE)


def shapes_tools() -> list[Tool]:
    """Schemas whose lowerings need every rewrite: renamed keys (Claude), nulls for optionals at any depth,
    unions of objects and arrays, recursive definitions (OpenAI strict)."""
    tools = [make_tool(json.loads(path.read_text())["schema"], name=path.stem, source=path.parent.name)
             for folder in ("edge", "rules") for path in sorted((FIXTURES / "providers" / folder).glob("*.json"))]
    tools.append(make_tool({"type": "object", "properties": {
        "u": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"c": {"type": "string"}}},
            {"type": "array", "items": {"type": "object", "properties": {"d": {"type": "string"}}}}]},
        "v": {"anyOf": [  # an array member first: an object must not be taken for it
            {"type": "array", "items": {"type": "object", "properties": {"d": {"type": "string"}}}},
            {"type": "object", "properties": {"c": {"type": "string"}}}]},
        "filter[id]": {"type": "string"},
        "page size": {"type": "object", "properties": {"n": {"type": "integer"}}}}}, name="unions", source="hand"))
    return tools


def shapes_build() -> Build:
    diagnostics = Diagnostics()
    build = Build(config=Config(root=ROOT), catalog=catalog_of(*shapes_tools()), resolver=RefResolver(diagnostics),
                  diagnostics=diagnostics, targets=TARGETS)
    build.providers = emit_providers(build)
    return build


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Project]:
    default = default_build()
    folder = tmp_path_factory.mktemp("default")
    for path, content in default.files.items():
        if path.startswith("python/toolc_router/"):  # the router `toolc compile` itself emitted
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(content)
    shapes = shapes_build()
    return {"default": Project(default, _generated_providers(folder / "python")),
            "shapes": Project(shapes, _generated_providers(write_router(shapes, tmp_path_factory.mktemp("shapes"))))}


# (a) The real name maps are read: no spurious TC635 --------------------------------------------------------

def test_toolc_compile_reads_the_name_maps_without_tc635(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["compile", "--config", str(ROOT / "toolc.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "TC635" not in result.output and "TC637" not in result.output, result.output
    # The router's name tables (`_tables.json`) route every provider name back to its tool.
    tables = json.loads((tmp_path / "python" / "toolc_router" / "_tables.json").read_text())
    for target in TARGETS:
        names = json.loads((tmp_path / "schemas" / f"{target}.names.json").read_text())
        table = tables["name_tables"][tables["name_maps"][target]]
        for name, entry in names["tools"].items():
            assert table[name]["tool_id"] == entry["tool"], (target, name)


def test_every_entry_of_the_default_project_is_baked(projects: dict[str, Project]) -> None:
    project = projects["default"]
    assert not [d for d in project.build.diagnostics if d.code in {"TC635", "TC637"}]
    tables = project.providers.NAME_MAPS
    for target in TARGETS:
        names = project.build.providers[target].names["tools"]
        assert set(tables[target]) == set(names)
        for name, entry in names.items():
            baked = tables[target][name]
            assert (baked.tool_id, dict(baked.arguments), dict(baked.defs)) == \
                (entry["tool"], entry.get("arguments", {}), entry.get("defs", {}))


def test_foreign_name_maps_are_bugs_not_diagnostics() -> None:
    """A name map the providers stage did not make in this process cannot reach codegen: refusing one is an
    internal error (TC999 at the CLI), not a user-facing warning."""
    catalog = catalog_from(recordings=("mcp-server-time",), openapi=())
    from compiler.codegen.router.router_package import generate_router

    for maps in ({"gemini": {"get_current_time": "mcp:mcp-server-time:get_current_time"}},  # no format
                 {"openai-chat": name_map("gemini", {})},  # another target's map
                 {"anthropic": name_map("anthropic", {"broken": {"tool_id": "mcp:mcp-server-time:convert_time"}})}):
        with pytest.raises(AssertionError):
            generate_router(make_build(catalog, name_maps=maps))


# (b) Equivalence with the reference implementation ---------------------------------------------------------

LEAVES = st.none() | st.booleans() | st.integers(-3, 9) | st.sampled_from(["", "a", "x y"])


def _deref(node: Any, root: Any) -> Any:
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return (root.get("$defs") or {}).get(unescape_token(ref[len("#/$defs/"):]))
    return node


def examples(node: Any, root: Any, leaf: Any, depth: int = 0) -> list[Any]:
    """Values shaped like `node`, at least one per union member it reaches: every declared key present, arrays
    holding one value per variant, scalars `leaf` (None: every optional key at every level carries OpenAI strict
    mode's null, so each union member's own undo is needed to get the wire form right)."""
    node = _deref(node, root)
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return [leaf]
    found: list[Any] = []
    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        variants = {key: examples(sub, root, leaf, depth + 1) for key, sub in properties.items()}
        width = max(len(values) for values in variants.values())
        found += [{key: values[i % len(values)] for key, values in variants.items()} for i in range(width)]
    if isinstance(node.get("items"), dict):
        found.append(examples(node["items"], root, leaf, depth + 1))
    for branch in [*(node.get("anyOf") or []), *(node.get("oneOf") or [])]:
        found += examples(branch, root, leaf, depth + 1)
    return found or [leaf]


def provider_values(node: Any, root: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values a model could send where the lowered schema has `node`: objects with any subset of the declared keys
    (each null or a value) plus an undeclared one, arrays of items, union members, or a bare scalar. Validity is
    not required: the two implementations must agree on anything they are given."""
    node = _deref(node, root)
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return LEAVES
    options: list[st.SearchStrategy[Any]] = [LEAVES]
    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        fields = {key: st.none() | provider_values(sub, root, depth + 1) for key, sub in properties.items()}
        options.append(st.fixed_dictionaries({}, optional={**fields, "undeclared": LEAVES}))
    if isinstance(node.get("items"), dict):
        options.append(st.lists(provider_values(node["items"], root, depth + 1), max_size=3))
    options.extend(provider_values(branch, root, depth + 1)
                   for branch in [*(node.get("anyOf") or []), *(node.get("oneOf") or [])])
    return st.one_of(options)


def provider_arguments(schema: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A tool call's arguments object: every declared key maybe present, each null or a value."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    fields = {key: st.none() | provider_values(sub, schema, 1) for key, sub in (properties or {}).items()}
    return st.fixed_dictionaries({}, optional={**fields, "undeclared": LEAVES})


def assert_same(project: Project, target: str, name: str, arguments: dict[str, Any]) -> None:
    expected = arguments_to_wire(target, name, copy.deepcopy(arguments),
                                 project.build.providers[target].names)
    entry = project.providers.resolve(target, name)
    assert entry is not None, (target, name)
    converted, problem = project.providers.to_tool_arguments(entry, copy.deepcopy(arguments))
    assert problem is None
    got = (entry.tool_id, converted)
    # repr: same keys in the same order, and True stays True (True == 1 for ==).
    assert repr(got) == repr(expected), (target, name, arguments)


@pytest.mark.parametrize("which", ["default", "shapes"])
def test_every_tool_and_target_maps_like_the_reference(projects: dict[str, Project], which: str) -> None:
    project = projects[which]
    pairs = project.pairs()
    assert len(pairs) == 4 * len(project.build.catalog.tools)
    for target, name, params in pairs:
        for leaf in (None, "x", 0):
            for arguments in examples(params, params, leaf):
                assert_same(project, target, name, arguments if isinstance(arguments, dict) else {})


def test_the_shapes_project_exercises_every_rewrite(projects: dict[str, Project]) -> None:
    text = json.dumps([projects["shapes"].build.providers[t].names for t in TARGETS])
    for key in ("rename", "optional", "properties", "items", "anyOf", "keys", "ref", "defs"):
        assert f'"{key}"' in text, key


@pytest.mark.parametrize("which", ["default", "shapes"])
def test_generated_provider_arguments_map_like_the_reference(projects: dict[str, Project], which: str) -> None:
    """Random calls, for every tool whose name-map entry rewrites anything (the others are copied as they are,
    which the test above covers)."""
    project = projects[which]
    rewriting = [(target, name, params) for target, name, params in project.pairs()
                 if "arguments" in project.build.providers[target].names["tools"][name]]
    assert rewriting
    for target, name, params in rewriting:
        check_calls(project, target, name, provider_arguments(params))


def check_calls(project: Project, target: str, name: str, calls: st.SearchStrategy[dict[str, Any]]) -> None:
    @settings(max_examples=30, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls)
    def check(arguments: dict[str, Any]) -> None:
        assert_same(project, target, name, arguments)

    check()


def test_unknown_names_are_refused_and_tool_ids_pass_through(projects: dict[str, Project]) -> None:
    providers = projects["default"].providers
    assert providers.resolve("openai-chat", "no_such_tool") is None
    tool_id = "mcp:time:get_current_time"
    entry = providers.resolve("openai-chat", tool_id)
    assert entry is not None and entry.tool_id == tool_id
    assert providers.to_tool_arguments(entry, {"timezone": None}) == ({"timezone": None}, None)


# (c) End to end: a model's call in each provider's format reaches an in-process MCP server in wire form ------

NOTE_SCHEMA = {"type": "object", "required": ["text"], "properties": {
    "text": {"type": "string"},
    "folder": {"type": "string"},
    "where": {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
              "required": ["path"]},
    "filter[tag]": {"type": "string"}}}
FROZEN = {"mode": "execution", "project_id": "p", "spec_frozen": True, "spec_hash": "h"}


def notes_server(received: list[dict[str, Any]]) -> Any:
    """A low-level MCP server that records the arguments exactly as they arrive (no validation, no defaults)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="save_note", input_schema=NOTE_SCHEMA)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        received.append(dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text="saved")])

    return Server("notes", on_list_tools=list_tools, on_call_tool=call_tool)


@dataclass
class Notes:
    build: Build
    router: Any
    context: Any
    received: list[dict[str, Any]]
    """The arguments of every call, as the MCP server got them."""

    def name(self, target: str) -> str:
        names = self.build.providers[target].names["tools"]
        return next(str(name) for name, entry in names.items() if entry["tool"] == "mcp:notes:save_note")


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[Notes]:
    build = with_name_maps(make_build(catalog_of(make_tool(NOTE_SCHEMA, name="save_note", source="notes"))))
    received: list[dict[str, Any]] = []
    with load_router(write_router(build, tmp_path)) as module:
        router = module.Router(audit_sink=module.MemoryAuditSink(), environ={})
        router.set_server_factory("notes", lambda: notes_server(received))
        yield Notes(build, router, module.InvocationContext(**FROZEN), received)


async def test_provider_tool_calls_arrive_in_wire_form(notes: Notes) -> None:
    from anthropic.types import ToolUseBlock
    from google.genai import types as gemini
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function
    from openai.types.responses import ResponseFunctionToolCall

    router, context = notes.router, notes.context
    wire = {"text": "hi", "where": {"path": "a.txt"}}

    # OpenAI strict mode makes every key required: the model sends null for the ones it leaves out.
    strict = {"text": "hi", "folder": None, "where": {"path": "a.txt", "line": None}, "filter[tag]": None}
    chat = ChatCompletionMessageFunctionToolCall(id="call_1", type="function", function=Function(
        name=notes.name("openai-chat"), arguments=json.dumps(strict)))
    result = await router.call_openai_tool_call(chat, context=context)
    assert (result.is_error, result.call_id, result.tool_id) == (False, "call_1", "mcp:notes:save_note"), result.error
    assert notes.received[-1] == wire

    responses = ResponseFunctionToolCall(call_id="fc_2", name=notes.name("openai-responses"),
                                         arguments=json.dumps(strict), type="function_call")
    result = await router.call_openai_tool_call(responses, context=context)
    assert (result.is_error, result.call_id) == (False, "fc_2") and notes.received[-1] == wire

    # Claude and Gemini definitions keep optional keys optional (no strict-mode nulls to undo): what the model
    # leaves out stays out, and a key Claude cannot carry (`filter[tag]`) is sent under a safe name that the
    # router gives back its original.
    claude_names = notes.build.providers["anthropic"].names["tools"][notes.name("anthropic")]
    safe_key = next(k for k, v in claude_names["arguments"]["rename"].items() if v == "filter[tag]")
    block = ToolUseBlock(id="toolu_3", name=notes.name("anthropic"), type="tool_use",
                         input={"text": "hi", "where": {"path": "a.txt"}, safe_key: "red"})
    result = await router.call_anthropic_tool_use(block, context=context)
    assert (result.is_error, result.call_id) == (False, "toolu_3") and notes.received[-1] == {**wire, "filter[tag]": "red"}

    part = gemini.Part(function_call=gemini.FunctionCall(id="g4", name=notes.name("gemini"),
                                                         args={"text": "hi", "where": {"path": "a.txt"}}))
    result = await router.call_gemini_function_call(part, context=context)
    assert (result.is_error, result.call_id) == (False, "g4") and notes.received[-1] == wire

    # Each of those is what the reference implementation makes of the same call.
    chat_map = notes.build.providers["openai-chat"].names
    assert arguments_to_wire("openai-chat", notes.name("openai-chat"), strict, chat_map)[1] == wire
    await router.aclose()
