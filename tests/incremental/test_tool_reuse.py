"""The tools cache (`compiler.sources.reuse`, keyed per operation by `compiler.sources.openapi.reuse`): a recompile
builds only the tools of operations whose inputs changed, takes the others' tools, catalog entries and IR hashes
from the last compile, and its output and diagnostics are those of a compile from nothing, whatever changed (a
description, a shared component an operation reaches, a path item's parameters, the source's settings in
toolc.yaml) and whatever the cache holds (damaged, another toolc's)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.build import Build
from compiler.config import load_config
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.output import read_tree
from compiler.infra.serialize import ToolReader, tool_to_json
from compiler.pipeline import compile_project, write_build
from compiler.sources import reuse
from compiler.sources.openapi import reader
from tests.support.synthetic import project_in, synthetic_openapi

TARGETS = ("openai-chat", "anthropic")
PROJECT = """\
output: out
codegen: false
targets: [openai-chat, anthropic]
openapi:
  - path: api.json
    id: api
{settings}"""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    document = synthetic_openapi(24)
    shared = {"name": "tenant", "in": "query", "schema": {"type": "string"}}
    document["components"]["parameters"] = {"Tenant": shared}
    document["paths"]["/family0/items"]["parameters"] = [{"$ref": "#/components/parameters/Tenant"}]
    path = project_in(tmp_path, monkeypatch, document)
    _settings(tmp_path, "")
    return path


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The operations whose tool the reader built (a tool taken from the cache is not built)."""
    seen: list[str] = []
    real = reader.build_tool

    def counting(ctx: Any, operation: Any, *args: Any) -> Any:
        seen.append(operation.name)
        return real(ctx, operation, *args)

    monkeypatch.setattr(reader, "build_tool", counting)
    return seen


def _settings(folder: Path, settings: str) -> None:
    (folder / "toolc.yaml").write_text(PROJECT.format(settings=settings))


def _compile(folder: Path, out: str = "out") -> tuple[Build, dict[str, bytes]]:
    config = load_config(folder / "toolc.yaml").model_copy(update={"output": out})
    build = compile_project(config)
    assert not build.diagnostics.has_errors, build.diagnostics.sorted()[:3]
    write_build(build, config.output_dir)
    build.files.release_spool()
    return build, read_tree(config.output_dir)


def _diagnostics(build: Build) -> list[str]:
    return sorted(str(d) for d in build.diagnostics.sorted() if d.code != store.CACHE_IGNORED)


def _clean(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """A compile from nothing: an output folder of its own, in a cache folder of its own."""
    clean = folder / "clean"
    clean.mkdir(exist_ok=True)
    for name in ("api.json", "toolc.yaml"):
        (clean / name).write_bytes((folder / name).read_bytes())
    build, files = _compile(clean)
    return files, _diagnostics(build)


def _edit(spec: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(spec.read_text())
    change(document)
    spec.write_text(json.dumps(document))


def _reword(document: dict[str, Any]) -> None:
    document["paths"]["/family1/items"]["get"]["description"] = "Reworded after a review."


def _shared_component(document: dict[str, Any]) -> None:
    """`Money` is reached by every family's level-0 schema, through `$ref`s: no operation names it."""
    document["components"]["schemas"]["Money"]["properties"]["currency"] = {"type": "string", "minLength": 3}


def _shared_parameter(document: dict[str, Any]) -> None:
    document["components"]["parameters"]["Tenant"]["schema"] = {"type": "integer"}


def _path_parameters(document: dict[str, Any]) -> None:
    document["paths"]["/family2/items/{itemId}"]["parameters"] = [
        {"name": "trace", "in": "header", "schema": {"type": "string"}}]


def _operations(spec: Path) -> int:
    return sum(1 for item in json.loads(spec.read_text())["paths"].values() for key in item if key != "parameters")


def test_a_warm_compile_builds_no_tool_and_a_changed_description_one(spec: Path, built: list[str]) -> None:
    folder = spec.parent
    cold_build, cold = _compile(folder)
    assert len(built) == _operations(spec) == len(cold_build.catalog.tools)
    assert store.cache_path(folder / "out", reuse.KIND).is_file()
    built.clear()
    warm_build, warm = _compile(folder)
    assert built == [] and warm == cold
    assert warm_build.catalog == cold_build.catalog
    assert [list(tool.input_schema["properties"]) for tool in warm_build.catalog.tools] == \
        [list(tool.input_schema["properties"]) for tool in cold_build.catalog.tools], "in the order they were built"
    assert set(warm_build.known_tools) == {tool.id for tool in warm_build.catalog.tools}
    assert all(known.ir is not None for known in warm_build.known_tools.values()), "IR hashes come back too"
    _edit(spec, _reword)
    changed_build, changed = _compile(folder)
    assert built == ["listFamily1"]
    assert changed != cold
    assert (changed, _diagnostics(changed_build)) == _clean(folder)


def test_the_cache_is_written_when_worth_it(spec: Path, built: list[str]) -> None:
    """Not by a warm compile, nor after one changed description (the next compile builds that tool again, and
    takes the others); after a change to most tools, or tools without the IR hash a compile made."""
    folder = spec.parent
    cache = store.cache_path(folder / "out", reuse.KIND, suffix=".blob")

    def stamp() -> tuple[int, int]:
        return cache.stat().st_ino, cache.stat().st_mtime_ns

    config = load_config(folder / "toolc.yaml").model_copy(update={"targets": ()})
    build = compile_project(config)
    write_build(build, config.output_dir)
    build.files.release_spool()
    without_hashes = stamp()
    built.clear()
    _compile(folder)
    assert built == [] and stamp() != without_hashes, "the IR hashes this compile made are kept"
    written = stamp()
    _compile(folder)
    assert stamp() == written, "nothing changed: not written"
    _edit(spec, _reword)
    built.clear()
    build, changed = _compile(folder)
    assert built == ["listFamily1"] and stamp() == written
    built.clear()
    again, twice = _compile(folder)
    assert built == ["listFamily1"] and twice == changed
    assert (twice, _diagnostics(again)) == _clean(folder)
    _edit(spec, _shared_component)
    _compile(folder)
    assert stamp() != written, "every tool built: written"


@pytest.mark.parametrize(("change", "rebuilt"), [
    (_reword, ["listFamily1"]),
    (_shared_component, None),
    (_shared_parameter, None),
    (_path_parameters, ["deleteFamily2", "getFamily2", "updateFamily2"]),
], ids=["description", "shared component", "shared parameter", "path item parameters"])
def test_a_changed_document_compiles_as_from_nothing(spec: Path, built: list[str],
                                                     change: Callable[[dict[str, Any]], None],
                                                     rebuilt: list[str] | None) -> None:
    """Only the operations that read what changed are built again (`components` is in every key: all of them)."""
    folder = spec.parent
    _compile(folder)
    _edit(spec, change)
    built.clear()
    build, changed = _compile(folder)
    assert sorted(built) == rebuilt if rebuilt is not None else len(built) == _operations(spec)
    assert (changed, _diagnostics(build)) == _clean(folder)


@pytest.mark.parametrize("settings", [
    '    risk: {"*Family3": critical}\n',
    "    base_url: https://api.example.test/v2\n",
    '    fixed_params: {"listFamily0": {"tenant": "acme"}}\n',
    "    deny_tools: [deleteFamily4]\n",
], ids=["risk", "base_url", "fixed_params", "deny_tools"])
def test_changed_settings_compile_as_from_nothing(spec: Path, built: list[str], settings: str) -> None:
    folder = spec.parent
    _compile(folder)
    _settings(folder, settings)
    built.clear()
    build, changed = _compile(folder)
    assert built, "the source's settings are in every operation's key"
    assert (changed, _diagnostics(build)) == _clean(folder)
    built.clear()
    again, warm = _compile(folder)
    assert (warm, _diagnostics(again)) == (changed, _diagnostics(build))
    if "risk" not in settings:
        assert built == [], "taken from the cache under the new settings"


def test_a_tool_the_risk_settings_replace_is_encoded_and_hashed_as_itself(spec: Path, built: list[str]) -> None:
    """Risk settings replace a tool after it is read: the cached catalog entry and IR hash are the tool's before."""
    folder = spec.parent
    _settings(folder, '    risk: {"*Family3": critical}\n')
    _compile(folder)
    built.clear()
    build, warm = _compile(folder)
    assert built == []
    replaced = build.catalog.tool("openapi:api:getFamily3")
    assert replaced.risk.label == "critical"
    known = build.known(replaced)
    assert known is not None and known.entry["risk"] == "critical", "the catalog's entry is the replaced tool's"
    assert json.loads(warm["catalog.json"])["tools"][[t.id for t in build.catalog.tools].index(replaced.id)][
        "risk"] == "critical"
    assert (warm, _diagnostics(build)) == _clean(folder)


def _corrupt_blob(out: Path) -> None:
    blob = store.cache_path(out, reuse.KIND, suffix=".blob")
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 1
    blob.unlink()  # a hard link to the file it recorded: never written in place
    blob.write_bytes(bytes(data))


def _corrupt_envelope(out: Path) -> None:
    store.cache_path(out, reuse.KIND).write_bytes(b"{not json")


def _foreign(out: Path) -> None:
    path = store.cache_path(out, reuse.KIND)
    data = orjson.loads(path.read_bytes())
    data["toolc"] = "another toolc"
    path.write_bytes(orjson.dumps(data))


def _rewritten_blob(out: Path, raw: bytes) -> None:
    """The blob replaced by `raw` and the envelope made to hold its digest: consistent, but not what toolc wrote."""
    store.cache_path(out, reuse.KIND, suffix=".blob").unlink()
    partial = out.parent / "blob-partial"
    partial.write_bytes(raw)
    store.save_with_blob(out, reuse.KIND, store.Entry(reuse.PAYLOAD_KEY, None, hashlib.sha256(raw).hexdigest()),
                         partial)


def _not_json_with_its_digest(out: Path) -> None:
    _rewritten_blob(out, b"[")


def _too_deep_with_its_digest(out: Path) -> None:
    _rewritten_blob(out, b"[" * 2000 + b"]" * 2000)


def _negative_places(out: Path) -> None:
    """Every HTTP argument named by place -1 (Python would index from the end: another argument)."""
    blob = store.cache_path(out, reuse.KIND, suffix=".blob")
    sources = orjson.loads(blob.read_bytes())
    for source in sources.values():
        for entry in source["tools"].values():
            binding = entry["tool"]["binding"]
            if binding["kind"] == "http":
                binding["arguments"] = [-1 for _ in binding["arguments"]]
    _rewritten_blob(out, orjson.dumps(sources))


def _sparse_blob(out: Path) -> None:
    """A blob of 8 GiB (sparse: no disk) in place of the cache's, which a reader that reads it whole before it
    checks it would hold in memory."""
    blob = store.cache_path(out, reuse.KIND, suffix=".blob")
    blob.unlink()
    with blob.open("wb") as file:
        file.truncate(8 << 30)


@pytest.mark.parametrize("damage", [_corrupt_blob, _corrupt_envelope, _foreign, _not_json_with_its_digest,
                                    _too_deep_with_its_digest, _sparse_blob],
                         ids=["altered tools", "corrupted envelope", "another toolc's", "not JSON, its digest held",
                              "nested past the decoder's depth, its digest held", "a sparse giant in its place"])
def test_a_damaged_or_foreign_cache_is_ignored_with_a_note(spec: Path, built: list[str],
                                                           damage: Callable[[Path], None]) -> None:
    folder = spec.parent
    build, changed = _reworded_after(spec, built, damage)
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and f".{reuse.KIND}." in d.source]
    assert notes, "a TC140 note says the tools cache was not used"
    assert len(built) == _operations(spec), "every tool built again"
    assert (changed, _diagnostics(build)) == _clean(folder)


def _reworded_after(spec: Path, built: list[str], damage: Callable[[Path], None]) -> tuple[Build, dict[str, bytes]]:
    """A compile, `damage` done to its output's tools cache, one description reworded, then the recompile (what it
    built is in `built`)."""
    _compile(spec.parent)
    damage(spec.parent / "out")
    _edit(spec, _reword)
    built.clear()
    return _compile(spec.parent)


def test_a_source_whose_operations_do_more_than_build_a_tool_is_not_kept(spec: Path, built: list[str]) -> None:
    """A dropped `x-` keyword in an operation's schema is counted once per source (TC310): which operation counts a
    shared one depends on the others, so such a source is read from nothing every time."""
    folder = spec.parent
    _edit(spec, lambda document: document["paths"]["/family0/items"]["get"]["parameters"][0]["schema"].update(
        {"x-internal": True}))
    _compile(folder)
    assert not store.cache_path(folder / "out", reuse.KIND).exists()
    built.clear()
    build, files = _compile(folder)
    assert len(built) == _operations(spec)
    assert (files, _diagnostics(build)) == _clean(folder)


def test_an_operation_with_an_effect_among_reused_ones_reads_the_source_again(spec: Path, built: list[str]) -> None:
    """The first compile is clean and kept; the change gives one operation an effect: the attempt that reused the
    others is dropped, diagnostics and all, and the source is read from nothing."""
    folder = spec.parent
    _compile(folder)
    _edit(spec, lambda document: document["paths"]["/family1/items"]["get"]["parameters"][0]["schema"].update(
        {"x-internal": True}))
    built.clear()
    build, files = _compile(folder)
    assert len(built) > _operations(spec), "the attempt, then every operation again"
    assert [d.code for d in build.diagnostics].count("TC310") == 1
    assert (files, _diagnostics(build)) == _clean(folder)
    assert not store.cache_path(folder / "out", reuse.KIND).exists(), "not kept: the next compile reads it whole"


def test_an_operation_that_points_into_paths_is_always_built(spec: Path, built: list[str]) -> None:
    """A `$ref` into `paths` reads another path item, which is in no key of this operation's."""
    folder = spec.parent

    def borrow(document: dict[str, Any]) -> None:
        document["paths"]["/family3/items"]["get"]["responses"] = {
            "$ref": "#/paths/~1family4~1items/get/responses"}

    _edit(spec, borrow)
    _compile(folder)
    built.clear()
    _compile(folder)
    assert built == ["listFamily3"]
    _edit(spec, lambda document: document["paths"]["/family4/items"]["get"]["responses"]["200"].update(
        {"description": "Changed"}))
    built.clear()
    build, files = _compile(folder)
    assert sorted(built) == ["listFamily3", "listFamily4"]
    assert (files, _diagnostics(build)) == _clean(folder)


def test_tools_read_back_equal_the_tools_built(spec: Path) -> None:
    build, _ = _compile(spec.parent)
    read = ToolReader()
    for tool in build.catalog.tools:
        again = read.tool(orjson.loads(orjson.dumps(tool_to_json(tool))))
        assert again == tool
        assert list(again.input_schema["properties"]) == list(tool.input_schema["properties"]), "key order kept"


def test_arguments_named_by_a_negative_place_are_built_again(spec: Path, built: list[str]) -> None:
    build, changed = _reworded_after(spec, built, _negative_places)
    assert built, "a tool whose arguments the cache names by a negative place is built, not decoded"
    assert (changed, _diagnostics(build)) == _clean(spec.parent)


def test_a_blob_not_of_its_recorded_size_is_refused_unread(spec: Path) -> None:
    """Refused by its size before a byte is read: reading the sparse giant to hash it would hold 8 GiB."""
    folder = spec.parent
    _compile(folder)
    _sparse_blob(folder / "out")
    diagnostics = Diagnostics()
    assert reuse.load(folder / "out", diagnostics).prior == {}
    assert [d.code for d in diagnostics.items] == [store.CACHE_IGNORED]
    assert "not the size recorded with it" in diagnostics.items[0].message
