"""Per source package reuse (`compiler.codegen.stubs.package_reuse`): after one changed description the models
are neither bundled nor generated again and only the tools.py piece holding that tool is rendered, and the
output is byte for byte a compile from nothing, whatever the cache holds (another toolc's, a corrupted file, a
damaged entry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.codegen.stubs import chunk_reuse, model_chunks, stub_functions, stub_packages
from compiler.codegen.stubs.package_reuse import KIND
from compiler.incremental import identity, store
from tests.incremental.test_lowering_cache import compile_into
from tests.support.synthetic import synthetic_openapi

PIECE = 8
"""Functions per piece here: the 60 stubs make 8 pieces, so one changed tool is one piece of several."""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stub_functions, "PIECE", PIECE)
    path = tmp_path / "api.json"
    path.write_text(json.dumps(synthetic_openapi(60)))
    return path


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What the stubs generated: bundled model tables (per source), model chunks, tools.py pieces (by start)."""
    seen: dict[str, list[Any]] = {"bundled": [], "chunks": [], "pieces": []}
    combined, run, piece = stub_packages.SourcePackage.combined, model_chunks._run, stub_functions._piece

    def counting_combined(self: stub_packages.SourcePackage, stubs: Any) -> Any:
        seen["bundled"].append(self.source.id)
        return combined(self, stubs)

    monkeypatch.setattr(stub_packages.SourcePackage, "combined", counting_combined)
    monkeypatch.setattr(model_chunks, "_run", lambda job: seen["chunks"].append(job.filename) or run(job))
    monkeypatch.setattr(stub_functions, "_piece", lambda job, start: seen["pieces"].append(start) or piece(job, start))
    return seen


def _clear(made: dict[str, list[Any]]) -> None:
    for found in made.values():
        found.clear()


def _reword(spec: Path, index: int, text: str) -> str:
    """Give the `index`th operation (document order) a new description; returns its operationId."""
    document = json.loads(spec.read_text())
    operations = [op for methods in document["paths"].values() for op in methods.values() if "operationId" in op]
    operations[index]["description"] = text
    spec.write_text(json.dumps(document))
    return str(operations[index]["operationId"])


def _clean(spec: Path, tmp_path: Path, name: str) -> dict[str, bytes]:
    return compile_into(spec, tmp_path / name / "out", codegen=True)[1]


def test_a_changed_description_reuses_the_models_and_every_other_piece(spec: Path, tmp_path: Path,
                                                                      made: dict[str, list[Any]]) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    assert made["bundled"] and made["chunks"] and len(made["pieces"]) == 8, "a compile from nothing makes it all"
    name = _reword(spec, 20, "Reworded after a review.")
    _clear(made)
    build, recompiled = compile_into(spec, out, codegen=True)
    stubs = sorted((tool for tool in build.catalog.tools), key=lambda tool: tool.id)
    position = next(i for i, tool in enumerate(stubs) if tool.name == name)
    assert made["bundled"] == [], "the models' schemas did not change: nothing is bundled"
    assert made["chunks"] == [], "nor generated"
    assert made["pieces"] == [position - position % PIECE], "only the piece holding the reworded tool is rendered"
    assert b"Reworded after a review." in recompiled[next(p for p in recompiled if p.endswith("/tools.py"))]
    assert recompiled == _clean(spec, tmp_path, "clean")


def test_a_changed_schema_generates_the_models_again(spec: Path, tmp_path: Path, made: dict[str, list[Any]]) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    document = json.loads(spec.read_text())
    schema = next(s for s in document["components"]["schemas"].values() if "properties" in s)
    schema["properties"]["added_by_review"] = {"type": "string", "description": "a new field"}
    spec.write_text(json.dumps(document))
    _clear(made)
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert made["bundled"] and made["chunks"], "a changed definition changes the models"
    assert recompiled == _clean(spec, tmp_path, "clean")


def test_a_reused_package_keeps_its_model_chunks_cached(spec: Path, tmp_path: Path,
                                                         made: dict[str, list[Any]]) -> None:
    """Models reused whole still leave their chunks in `chunk_reuse`'s file, for a later change to a schema."""
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    chunks = orjson.loads(store.cache_path(out, chunk_reuse.KIND).read_bytes())["payload"]
    _reword(spec, 3, "First review.")
    compile_into(spec, out, codegen=True)
    _reword(spec, 4, "Second review.")
    _clear(made)
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert made["bundled"] == [] and made["chunks"] == [] and len(made["pieces"]) == 1
    assert orjson.loads(store.cache_path(out, chunk_reuse.KIND).read_bytes())["payload"] == chunks
    assert recompiled == _clean(spec, tmp_path, "clean")


def test_models_reused_whole_neither_read_nor_write_the_chunk_cache(spec: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunks of models reused whole are already in `chunk_reuse`'s file: it is left as it is, never decoded."""
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    path = store.cache_path(out, chunk_reuse.KIND)
    saved = (path.stat().st_ino, path.stat().st_mtime_ns)
    loaded: list[str] = []
    real = store.load
    monkeypatch.setattr(store, "load", lambda out_dir, kind, *args, **kwargs: loaded.append(kind) or real(out_dir, kind, *args, **kwargs))
    _reword(spec, 3, "Reworded.")
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert chunk_reuse.KIND not in loaded and KIND in loaded
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == saved
    assert recompiled == _clean(spec, tmp_path, "clean")


def test_the_cache_keeps_each_models_module_once(spec: Path, tmp_path: Path) -> None:
    """A models file that is a module's code is named by the module's index, not stored a second time."""
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    [entry] = orjson.loads(store.cache_path(out, KIND).read_bytes())["payload"]["models"].values()
    codes = [module["code"] for module in entry["modules"]]
    by_index = [code for _name, code in entry["files"] if isinstance(code, int)]
    assert sorted(by_index) == list(range(len(codes))), "every module's file refers to it"
    assert not any(code in codes for _name, code in entry["files"] if isinstance(code, str))


DAMAGES = ["not json", "another toolc", "models entry damaged", "a header swapped", "pieces damaged",
           "a file's module index out of range"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_or_foreign_cache_never_changes_the_output(spec: Path, tmp_path: Path, made: dict[str, list[Any]],
                                                            monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    _reword(spec, 10, "Reworded.")
    path = store.cache_path(out, KIND)
    data = orjson.loads(path.read_bytes())
    entry = next(iter(data["payload"]["models"].values()))
    if damage == "not json":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "another toolc":  # a toolc upgrade: every key is another
        monkeypatch.setattr(identity, "toolc_identity", lambda: "sha256:another toolc")
    elif damage == "models entry damaged":
        entry["owner"] = dict.fromkeys(entry["owner"], 99)
    elif damage == "a header swapped":
        entry["header"] = "# not the header these modules begin with"
    elif damage == "a file's module index out of range":
        entry["files"] = [[name, len(entry["modules"]) if isinstance(code, int) else code]
                          for name, code in entry["files"]]
    else:
        data["payload"]["pieces"] = {key: [3, None, "x"] for key in data["payload"]["pieces"]}
    if damage not in ("not json", "another toolc"):
        path.write_bytes(orjson.dumps(data))
    _clear(made)
    build, recompiled = compile_into(spec, out, codegen=True)
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and d.source == str(path)]
    assert len(notes) == (1 if damage in ("not json", "another toolc") else 0), notes
    if damage == "pieces damaged":
        assert not made["bundled"] and len(made["pieces"]) == 8, "every piece rendered again, the models reused"
    elif damage in ("not json", "another toolc"):
        assert made["bundled"] and len(made["pieces"]) == 8, "nothing reused from a file not ours"
    else:  # the models made again are the same: the pieces that read them are still reused
        assert made["bundled"] and len(made["pieces"]) == 1, "models not reused from a damaged entry"
    assert recompiled == _clean(spec, tmp_path, "clean")
