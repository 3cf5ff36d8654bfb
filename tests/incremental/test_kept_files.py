"""Output files kept from the last compile (`compiler.incremental.kept_files`): a toolset file or deferred form made of
the same definitions as last time is the output folder's file, linked into the new output, never made again; so is a
tools file whose every definition the lowering cache gives back where it was (`reuse.PriorLowerings.unchanged_file`).
The output is byte for byte a compile from nothing, whatever the record or the old files hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.build import Build
from compiler.config import Config
from compiler.fit import aside
from compiler.incremental import identity, kept_files, store
from compiler.infra.output import read_tree
from compiler.infra.parallel import can_fork
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.providers import reuse, schemas, spans
from tests.support.synthetic import project_in, synthetic_openapi

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """200 operations: past OpenAI's 128 tools, so several toolsets per target."""
    return project_in(tmp_path, monkeypatch, synthetic_openapi(200))


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The targets of the toolset files cut out of a tools file in this process (a kept file is not)."""
    seen: list[str] = []
    real = spans.array_chunks

    def counting(layout: Any, *args: Any) -> Any:
        seen.append(layout.target)
        return real(layout, *args)

    monkeypatch.setattr(spans, "array_chunks", counting)
    return seen


def compile_into(spec: Path, out: Path) -> tuple[Build, dict[str, bytes]]:
    config = Config(root=spec.parent).model_copy(update={"codegen": False})
    build = compile_project(config, adhoc_inputs([spec], spec.parent), targets=TARGETS, out_dir=out)
    assert not build.diagnostics.has_errors, build.diagnostics.sorted()[:3]
    write_build(build, out)
    build.files.release_spool()
    return build, read_tree(out)


def clean(spec: Path, tmp_path: Path) -> dict[str, bytes]:
    """A compile from nothing, into a folder of its own (no cache beside it)."""
    return compile_into(spec, tmp_path / "clean" / "out")[1]


def inodes(out: Path) -> dict[str, int]:
    """Inode of each toolset file and deferred form: a kept file is the last compile's, linked."""
    return {path.relative_to(out).as_posix(): path.stat().st_ino
            for path in sorted((out / "schemas").rglob("*.json"))
            if (path.parent.name == "toolsets" and path.name != "index.json") or path.name.endswith(".deferred.json")}


def reword(spec: Path, index: int) -> str:
    """Give the `index`th operation a new description; its operationId."""
    document = json.loads(spec.read_text())
    operations = [operation for methods in document["paths"].values() for operation in methods.values()]
    operations[index]["description"] = "Reworded after a review."
    spec.write_text(json.dumps(document))
    return str(operations[index]["operationId"])


def files_holding(out: Path, operation_id: str) -> set[str]:
    """The toolset files and deferred forms that hold the operation's tool."""
    index = json.loads((out / "schemas/toolsets/index.json").read_bytes())
    tool_id = next(tool for tool in index["tools"] if tool.endswith(f":{operation_id}"))
    holding = {row["file"] for name in index["tools"][tool_id]["toolsets"]
               for row in index["toolsets"][name]["targets"].values()}
    return holding | {row["files"]["deferred"]["file"] for row in index["targets"].values()
                      if row["files"].get("deferred", {}).get("file")}


def test_a_warm_compile_keeps_every_file_and_a_changed_one_makes_only_those_holding_the_change(
        spec: Path, tmp_path: Path, made: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    first = inodes(out)
    assert len(first) > 2 * len(TARGETS) and made
    made.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold
    assert not made, "no toolset file is cut out of a tools file again"
    assert inodes(out) == first, "every toolset file and deferred form is the last compile's, linked"
    operation_id = reword(spec, 150)
    made.clear()
    _build, changed = compile_into(spec, out)
    holding = files_holding(out, operation_id)
    assert len(made) == len([path for path in holding if "/toolsets/" in path]) == len(TARGETS)
    now = inodes(out)
    assert {path for path in now if now[path] != first[path]} == holding
    assert changed == clean(spec, tmp_path)


def test_a_file_edited_since_the_last_compile_is_made_again(spec: Path, tmp_path: Path, made: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    edited = next(path for path in sorted(inodes(out)) if "/toolsets/" in path)
    content = (out / edited).read_bytes()
    (out / edited).write_bytes(content.replace(b'"description"', b'"descriptioN"', 1))  # same size, in place
    made.clear()
    _build, again = compile_into(spec, out)
    assert again == cold
    assert made == [edited.split(".")[-2]], "only the edited file is made again"


@pytest.mark.parametrize("damage", ["not json", "foreign envelope", "malformed", "another recipe"])
def test_a_damaged_record_never_changes_the_output(spec: Path, tmp_path: Path, made: list[str], damage: str) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    path = store.cache_path(out, kept_files.KIND)
    data = orjson.loads(path.read_bytes())
    if damage == "not json":
        path.write_bytes(b"{" + path.read_bytes()[:100])
    elif damage == "foreign envelope":
        data["toolc"] = "sha256:0"
        path.write_bytes(orjson.dumps(data))
    elif damage == "malformed":
        data["payload"][next(iter(data["payload"]))] = ["a recipe"]
        path.write_bytes(orjson.dumps(data))
    else:  # a record that says another file's recipe made this one: it is still made from its own
        rows = data["payload"]
        first, second = sorted(path for path in rows if "/toolsets/" in path)[:2]
        rows[first] = [rows[second][0], *rows[first][1:]]
        path.write_bytes(orjson.dumps(data))
    made.clear()
    build, again = compile_into(spec, out)
    assert again == cold and made
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and kept_files.KIND in d.source]
    assert len(notes) == (0 if damage == "another recipe" else 1), notes


def test_another_toolc_keeps_nothing(spec: Path, tmp_path: Path, made: list[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    before = inodes(out)
    monkeypatch.setattr(identity, "toolc_identity", lambda: "sha256:the-next-toolc")
    made.clear()
    _build, again = compile_into(spec, out)
    assert again == cold and made
    assert not set(inodes(out).items()) & set(before.items()), "nothing of the last compile's is kept"


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The targets whose tools file was written (a tools file used as it is was not)."""
    seen: list[str] = []
    real = schemas.write_array

    def counting(path: Path, target: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(target)
        return real(path, target, *args, **kwargs)

    monkeypatch.setattr(schemas, "write_array", counting)
    return seen


def tools_files(out: Path) -> dict[str, int]:
    """Inode of each target's tools file: the lowering cache's blob, and `schemas/<target>.json` where it holds it."""
    found = {target: store.cache_path(out, reuse.kind(target), suffix=".blob").stat().st_ino for target in TARGETS}
    return {**found, **{path: (out / path).stat().st_ino for path in (f"schemas/{target}.json" for target in TARGETS)
                        if (out / path).stat().st_ino in found.values()}}


def test_a_warm_compile_uses_every_tools_file_as_it_is(spec: Path, tmp_path: Path, written: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    first = tools_files(out)
    assert len(first) > len(TARGETS), "some target's schemas/<target>.json is its tools file"
    written.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold and not written
    assert tools_files(out) == first
    reword(spec, 150)
    _build, changed = compile_into(spec, out)
    in_output = sorted(target for target in TARGETS if schemas.fits_one_request(target, 200))
    assert sorted(written) == in_output, "a file in the output holding a changed definition is written"
    grown = {target: inode for target, inode in tools_files(out).items() if target in TARGETS and target not in in_output}
    assert grown == {target: first[target] for target in grown}, "one only in the cache grows instead"
    assert changed == clean(spec, tmp_path)


def test_a_tools_file_altered_since_is_written_again(spec: Path, tmp_path: Path, written: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    blob = store.cache_path(out, reuse.kind("anthropic"), suffix=".blob")
    content = blob.read_bytes()
    blob.unlink()  # linked into the output: altered as a file of its own, keeping its size
    blob.write_bytes(content.replace(b"\n    ", b"\n   \t", 1))
    written.clear()
    build, again = compile_into(spec, out)
    assert again == cold and written
    assert any(d.code == store.CACHE_IGNORED for d in build.diagnostics), "the altered definition is noted"


@pytest.mark.skipif(not can_fork(), reason="the child is forked")
def test_the_child_writing_toolsets_aside_keeps_them_too(spec: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aside, "WRITE_ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(aside, "cores", lambda: 2)
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    first = inodes(out)
    _build, warm = compile_into(spec, out)
    assert warm == cold and inodes(out) == first
    operation_id = reword(spec, 150)
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path)
    now = inodes(out)
    assert {path for path in now if now[path] != first[path]} == files_holding(out, operation_id)
