"""Issue 13: every API fits every provider. Toolsets that fit each request limit (GitHub, Kubernetes), routed calls
from a toolset file and through discovery mode, exact token counts, budgets, and the strict map / free-form round
trip (hypothesis) down to a loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import bpe_openai
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import pipeline
from compiler.build import Build, TargetOutput
from compiler.cli import main
from compiler.config import Config, ToolsetsConfig
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.providers import dialect
from compiler.providers.namemap import arguments_to_wire
from compiler.providers.registry import PROVIDERS
from compiler.providers.schemas import emit_providers
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.paths import ROOT
from tests.support.providers import json_documents
from tests.support.router import load_router
from tests.support.synthetic import synthetic_openapi

CORPUS = ROOT / "fixtures" / "corpus" / "openapi"
K8S_CONFIGMAP = ROOT / "fixtures" / "openapi" / "k8s-configmap.json"
ENCODING = bpe_openai.get_encoding("o200k_base")


def _tools_in(target: str, data: bytes) -> int:
    return len(PROVIDERS[target].definitions_of(json.loads(data)))


@pytest.mark.parametrize("spec", ["github.json", "kubernetes.json"])
def test_big_apis_split_into_toolsets_that_fit_openai_and_gemini(spec: str) -> None:
    config = Config(root=ROOT, codegen=False)
    build = compile_project(config, adhoc_inputs([CORPUS / spec], ROOT), targets=("openai-chat", "gemini"))
    assert not build.diagnostics.has_errors
    index = json.loads(build.files["schemas/toolsets/index.json"])
    tool_ids = {tool.id for tool in build.catalog.tools}
    assert len(tool_ids) > 512  # too many for one request of either target
    assert set(index["tools"]) == tool_ids and all(entry["toolsets"] for entry in index["tools"].values())
    for target in ("openai-chat", "gemini"):
        limit = PROVIDERS[target].caps.max_tools
        assert limit is not None
        written = {path: data for path, data in build.files.items()
                   if path.startswith("schemas/") and path.endswith(f"{target}.json")}
        assert len(written) > 2
        for path, data in written.items():  # every tools file toolc writes for the target fits one request
            assert _tools_in(target, data) <= limit, path
        in_sets = {tool for name, entry in index["toolsets"].items()
                   for tool in entry["tools"] if entry["targets"][target]["tools"]}
        assert in_sets == tool_ids
        assert index["targets"][target]["files"]["all"]["fits"] is False
        # schemas/<target>.json now holds the discovery form; the definitions stay readable from the build
        definitions = build.providers[target].tools
        assert set(definitions) <= tool_ids and len(definitions) == index["targets"][target]["files"]["all"]["tools"]
        toolset = next(entry for entry in index["toolsets"].values() if entry["targets"][target]["tools"])
        in_file = PROVIDERS[target].definitions_of(json.loads(build.files[toolset["targets"][target]["file"]]))
        assert in_file == [definitions[tool_id] for tool_id in toolset["tools"] if tool_id in definitions]
    codes = {d.code for d in build.diagnostics}
    assert "TC771" in codes


def test_token_counts_equal_a_direct_count_of_the_emitted_json(tmp_path: Path) -> None:
    config = Config(root=ROOT, codegen=False)
    build = compile_project(config, adhoc_inputs([ROOT / "fixtures/mcp/server-everything.json",
                                                  ROOT / "fixtures/openapi/params.yaml"], ROOT))
    index = json.loads(build.files["schemas/toolsets/index.json"])
    checked = 0
    for entry in index["toolsets"].values():
        for row in entry["targets"].values():
            assert row["tokens"] == len(ENCODING.encode_ordinary(build.files[row["file"]].decode()))
            checked += 1
    for target, row in index["targets"].items():
        for kind, form in row["files"].items():
            data = build.files[form["file"]].decode()
            if kind == "deferred":  # what the model sees before it searches, as the SDK sends it (compact JSON)
                tools = json.loads(data)
                view = [{key: value for key, value in tool.items() if key != "tools"}
                        for tool in tools if "defer_loading" not in tool]
                compact = json.dumps(view, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
                assert form["start_tokens"] == len(ENCODING.encode_ordinary(compact)), (target, form["file"])
                continue
            assert form["tokens"] == len(ENCODING.encode_ordinary(data)), (target, form["file"])
        assert build.summary(target)["tokens"] == row["files"]["all"]["tokens"]
    for tool_id, entry in index["tools"].items():
        for target, count in entry["tokens"].items():
            text = json.dumps(build.providers[target].tools[tool_id], sort_keys=True, indent=2, ensure_ascii=False)
            assert count == len(ENCODING.encode_ordinary(text + "\n"))
    assert checked > 4


def test_a_budget_breach_fails_compile_and_check_naming_the_largest_tools(tmp_path: Path) -> None:
    project = {"name": "budget", "output": "out", "targets": ["openai-chat"],
               "recordings": [{"id": "everything", "path": str(ROOT / "fixtures/mcp/server-everything.json")}],
               "budgets": {"openai": 300}, "codegen": False}
    (tmp_path / "toolc.yaml").write_text(yaml.safe_dump(project))
    runner = CliRunner()
    compiled = runner.invoke(main, ["compile", "-c", str(tmp_path / "toolc.yaml")])
    assert compiled.exit_code == 1 and "TC770" in compiled.output
    project["budgets"] = {"openai": 100_000}
    (tmp_path / "toolc.yaml").write_text(yaml.safe_dump(project))
    assert runner.invoke(main, ["compile", "-c", str(tmp_path / "toolc.yaml")]).exit_code == 0
    project["budgets"] = {"openai-chat": 300}
    (tmp_path / "toolc.yaml").write_text(yaml.safe_dump(project))
    checked = runner.invoke(main, ["check", "-c", str(tmp_path / "toolc.yaml")])
    assert checked.exit_code == 1
    assert "TC770" in checked.output and "over the budget of 300" in checked.output
    assert "largest: gzip-file-as-resource (" in checked.output  # the largest tools, by name


def test_budgets_and_toolsets_config_errors_are_located() -> None:
    from compiler.config import config_from_data
    from compiler.infra.diagnostics import CompilerError

    for data, pointer, text in (({"budgets": {"opnai": 5}}, "/budgets", "did you mean 'openai'"),
                                ({"budgets": {"gemini": 0}}, "/budgets", "positive"),
                                ({"toolsets": {"group": "tag"}}, "/toolsets/group", "did you mean 'group_by'")):
        with pytest.raises(CompilerError) as caught:
            config_from_data(data, root=ROOT, source="toolc.yaml")
        diagnostic = caught.value.diagnostic
        assert diagnostic.code == "TC110" and diagnostic.pointer == pointer and text in diagnostic.message


def test_toolsets_config_is_typed() -> None:
    with pytest.raises(ValueError):
        ToolsetsConfig.model_validate({"group_by": "tag", "glob": {}})
    with pytest.raises(ValueError):
        ToolsetsConfig.model_validate({"globs": {"Bad Name": ["*"]}})
    assert ToolsetsConfig.model_validate({"globs": {"pets": ["*Pet*"]}}).globs == {"pets": ("*Pet*",)}


# --- routed calls: a toolset file, discovery mode, and the strict map round trip (loopback HTTP) -------------

class Recorder(QuietHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        Recorder.requests.append({"path": self.path, "body": json.loads(self.rfile.read(length) or b"null")})
        self.send_json(201, b'{"kind": "ConfigMap"}')


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with loopback_http(Recorder) as url:
        yield url


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    out = tmp_path_factory.mktemp("k8s")
    project = {"name": "k8s", "output": "gen", "targets": ["openai-chat", "anthropic"],
               "openapi": [{"id": "k8s", "path": str(K8S_CONFIGMAP), "base_url": "${K8S_URL}"}],
               "toolsets": {"globs": {"configmaps": ["*ConfigMap*"]}}}
    (out / "toolc.yaml").write_text(yaml.safe_dump(project))
    from compiler.config import load_config

    config = load_config(out / "toolc.yaml")
    build = compile_project(config)
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics if d.severity.value == "error"]
    write_build(build, out / "gen")
    with load_router(out / "gen" / "python") as module:
        yield module, out / "gen"


FROZEN = {"mode": "execution", "project_id": "proj", "spec_frozen": True, "spec_hash": "sha256:abc"}


def _router(module: Any, api: str, tmp: Path) -> Any:
    environ = {**os.environ, "K8S_URL": api}
    router = module.configure(module.Router(audit_sink=module.SqliteAuditSink(tmp / "audit.db"), environ=environ))
    router.default_context = module.InvocationContext(**FROZEN)
    return router


def _openai_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _strict_tool(folder: Path) -> dict[str, Any]:
    tools = json.loads((folder / "schemas/toolsets/configmaps.openai-chat.json").read_text())
    (tool,) = [t for t in tools if "create" in t["function"]["name"].lower()]
    assert tool["function"]["strict"] is True
    return tool


labels = st.dictionaries(st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12),
                         st.text(max_size=20), max_size=5)


free_form = st.dictionaries(st.text(max_size=6), st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6), max_size=3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(labels=labels, annotations=labels, data=labels, fields=free_form)
def test_a_strict_call_with_maps_as_entries_reaches_the_wire_as_objects(
        k8s: tuple[Any, Path], api: str, tmp_path: Path, labels: dict[str, str], annotations: dict[str, str],
        data: dict[str, str], fields: dict[str, Any]) -> None:
    """Maps (labels, annotations, data) sent as {key, value} entries and a free-form object (managedFields'
    fieldsV1) sent as a JSON string arrive at the server as the original objects."""
    module, folder = k8s
    tool = _strict_tool(folder)
    assert "x-toolc" not in json.dumps(tool)  # markers never reach the provider
    assert tool["function"]["parameters"]["properties"]["data"]["type"] == ["array", "null"]

    def entries(mapping: dict[str, str]) -> list[dict[str, str]]:
        return [{"key": key, "value": value} for key, value in mapping.items()]

    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": entries(data), "binaryData": None, "immutable": None,
            "metadata": {"name": "cm", "labels": entries(labels), "annotations": entries(annotations),
                         "managedFields": [{"manager": "toolc", "fieldsV1": json.dumps(fields)}]}}
    names = json.loads((folder / "schemas/openai-chat.names.json").read_text())
    _tool_id, wire = arguments_to_wire("openai-chat", tool["function"]["name"], {"namespace": "default", **body},
                                       names)
    assert wire["metadata"]["labels"] == labels and wire["data"] == data and "binaryData" not in wire
    router = _router(module, api, tmp_path)
    try:
        Recorder.requests = []
        result = asyncio.run(router.call_openai_tool_call(_openai_call(tool["function"]["name"],
                                                                        {"namespace": "default", **body})))
    finally:
        router.audit.close()
    assert not result.is_error, result.content
    sent = Recorder.requests[-1]["body"]
    assert sent["metadata"]["labels"] == labels and sent["metadata"]["annotations"] == annotations
    assert sent["data"] == data and sent["kind"] == "ConfigMap" and "binaryData" not in sent
    assert sent["metadata"]["managedFields"] == [{"manager": "toolc", "fieldsV1": fields}]


def test_discovery_mode_reaches_the_loopback_server(k8s: tuple[Any, Path], api: str, tmp_path: Path) -> None:
    module, folder = k8s
    discovery = json.loads((folder / "schemas/discovery.openai-chat.json").read_text())
    assert {t["function"]["name"] for t in discovery} == {"toolc_search_tools", "toolc_describe_tool",
                                                          "toolc_call_tool"}
    router = _router(module, api, tmp_path)

    async def run() -> None:
        found = await router.call_openai_tool_call(_openai_call("toolc_search_tools", {"query": "create configmap",
                                                                                         "limit": None}))
        hit = found.structured[0]  # ranked, best first
        assert hit["id"].endswith(":createCoreV1NamespacedConfigMap"), found.structured
        described = await router.call_openai_tool_call(_openai_call("toolc_describe_tool", {"tool": hit["id"]}))
        assert "metadata" in json.dumps(described.structured["input_schema"])
        Recorder.requests = []
        body = {"metadata": {"name": "cm", "labels": {"app": "web"}}, "data": {"k": "v"}}
        # OpenAI strict sends `arguments` as a JSON string (a free-form object): the router decodes it.
        called = await router.call_openai_tool_call(_openai_call("toolc_call_tool", {
            "tool": hit["id"], "arguments": json.dumps({"namespace": "default", **body})}))
        assert not called.is_error, called.content
        assert Recorder.requests[-1]["body"] == body

    try:
        asyncio.run(run())
    finally:
        router.audit.close()
    # Claude's deferred form is the request's tools argument as is: the search tool, then every tool deferred.
    form = json.loads((folder / "schemas/anthropic.deferred.json").read_text())
    everything = json.loads((folder / "schemas/anthropic.json").read_text())
    assert form[0]["type"].startswith("tool_search_tool")
    assert form[1:] == [{**tool, "defer_loading": True} for tool in everything]


def test_explain_shows_transforms_tokens_and_toolsets() -> None:
    out = CliRunner().invoke(main, ["explain", "createCoreV1NamespacedConfigMap", "-p", "openai-chat", "--json",
                                    str(K8S_CONFIGMAP)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    pointers = {item["pointer"]: item["code"] for item in data["transforms"]}
    assert pointers["/properties/data"] == "TC422"
    assert "TC423" in pointers.values()
    text = json.dumps(data["definition"], sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert data["tokens"]["count"] == len(ENCODING.encode_ordinary(text))
    assert data["toolsets"] == ["k8s-configmap-core_v1"]
    shown = CliRunner().invoke(main, ["explain", "createCoreV1NamespacedConfigMap", "-p", "anthropic",
                                      str(K8S_CONFIGMAP)])
    assert "## reversible transforms (0;" in shown.output and "## toolsets\nk8s-configmap-core_v1" in shown.output


def test_list_tokens_shows_costs_toolsets_and_totals() -> None:
    out = CliRunner().invoke(main, ["list", "--tokens", "--target", "openai-chat", "--json", str(K8S_CONFIGMAP)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    (row,) = data["tools"]
    assert row["toolsets"] == ["k8s-configmap-core_v1"] and row["tokens"]["openai-chat"] > 100
    assert data["targets"]["openai-chat"]["method"].startswith("counted: o200k_base")
    table = CliRunner().invoke(main, ["list", "--tokens", "--target", "anthropic", str(K8S_CONFIGMAP)])
    assert "anthropic: 1 tools" in table.stdout and "estimated" in table.stdout


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(definitions=st.lists(st.dictionaries(st.text(max_size=8), json_documents, min_size=1, max_size=4),
                            max_size=5),
       target=st.sampled_from(sorted(PROVIDERS)), picks=st.lists(st.integers(0, 4), max_size=6))
def test_toolset_arrays_cut_from_spans_equal_encoding_them_again(
        tmp_path: Path, definitions: list[dict[str, Any]], target: str, picks: list[int]) -> None:
    """The fit stage's toolset files are byte ranges of the worker's tools file (`spans.py`): equal to encoding the
    chosen definitions again, with tokens equal to one direct count, per file and per tool."""
    from compiler.infra.serialize import canonical_json
    from compiler.ir import McpBinding, Tool
    from compiler.providers import spans
    from compiler.providers.dialect import Lowered

    tools = [Tool(id=f"mcp:s:t{index}", source="s", name=f"t{index}", description="", input_schema={},
                  binding=McpBinding(server="s", tool_name=f"t{index}")) for index in range(len(definitions))]
    ordered = [Lowered(tool=tool, name=tool.name, definition=definition, parameters=None, strict=False, losses=[],
                       problems=[]) for tool, definition in zip(tools, definitions, strict=True)]
    path = tmp_path / f"{target}.tools.json"
    _digests, layout = spans.write_array(path, target, ordered)
    dialect = PROVIDERS[target]
    assert path.read_bytes() == canonical_json(dialect.tools_array(definitions))
    chosen = [tools[pick].id for pick in picks if pick < len(tools)]
    expected = canonical_json(dialect.tools_array([definitions[int(tool_id[len("mcp:s:t"):])] for tool_id in chosen]))
    with path.open("rb") as source:
        assert b"".join(spans.array_chunks(layout, source, chosen)) == expected
    assert spans.array_tokens(layout, chosen) == len(ENCODING.encode_ordinary(expected.decode()))
    for tool, definition in zip(tools, definitions, strict=True):
        assert layout.spans[tool.id].tokens == len(ENCODING.encode_ordinary(canonical_json(definition).decode()))


def test_the_fit_stage_reads_the_providers_output_and_never_changes_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """What `schemas/<target>.json` holds is decided once, by the providers stage; the fit stage hands on its own
    result and leaves `build.providers` as the providers stage made it (the pytest plugin reads it)."""
    spec = tmp_path / "synthetic.json"
    spec.write_text(json.dumps(synthetic_openapi(200)))  # more tools than one OpenAI request holds (128)
    made: dict[str, TargetOutput] = {}

    def providers_stage(build: Build, meanwhile: Callable[[], None] | None = None) -> dict[str, TargetOutput]:
        made.update(emit_providers(build, meanwhile))
        return dict(made)

    monkeypatch.setattr(pipeline, "emit_providers", providers_stage)
    build = compile_project(Config(root=ROOT, codegen=False), adhoc_inputs([spec], ROOT), targets=("openai-chat",))
    output = build.providers["openai-chat"]
    assert output is made["openai-chat"] and not output.fits_one_request
    assert "tokens" not in output.summary and build.fit["openai-chat"].summary["fits_one_request"] is False
    assert _tools_in("openai-chat", build.files["schemas/openai-chat.json"]) == 3  # the discovery form, written once
    assert len(output.tools) == len(output.layout.spans) > 128  # the definitions, from the array as lowered
    first = output.layout.spans[next(iter(output.tools))]  # by its span: a grown tools file is not an array
    assert json.loads(output.array.read_bytes()[first.offset:first.offset + first.length]) == \
        output.tools[next(iter(output.tools))]


def test_the_meta_tools_read_the_builds_diagnostics_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery's and code mode's meta-tools share one lowering cache over every target: the pruned-recursion
    index reads the build's diagnostics once, not once per meta-tool (Microsoft Graph: 20 reads of 230,000)."""
    read: list[int] = []
    real = dialect._PrunedIndex.lookup

    def counting(index: Any, items: list[Any], tool_id: str) -> Any:
        if tool_id.startswith("mcp:toolc:"):
            read.append(len(items) - index.scanned)
        return real(index, items, tool_id)

    monkeypatch.setattr(dialect._PrunedIndex, "lookup", counting)
    build = compile_project(Config(root=ROOT, codegen=False), adhoc_inputs([CORPUS / "stripe.json"], ROOT))
    assert len(read) == 10  # three discovery and two code-mode tools for each target that inlines (two)
    assert len(build.diagnostics) > 1000 and sum(read) <= len(build.diagnostics)
