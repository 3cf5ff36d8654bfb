"""Per tool reuse of the router's data files (`compiler.codegen.router.reuse`): after one changed operation only
its tool's pieces of `_catalog.json`, `_codemode.json`, `_schemas.json`, `_tables.json` and `_serve.json` are
made again, and
the output is byte for byte a compile from nothing, whatever changed (a description, a parameter, a tool added,
removed, or renamed so that its function name collides) and whatever the cache holds (another toolc's, a
corrupted file, ranges that no longer match, an output folder edited since)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import orjson
import pytest

from compiler.codegen import python
from compiler.codegen.router import reuse, router_package
from compiler.codegen.router.reuse import KIND, FilePieces
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.parallel import Once, can_fork
from compiler.pipeline import adhoc_inputs, compile_project
from tests.incremental.test_lowering_cache import TARGETS, compile_into, config
from tests.support.synthetic import project_in, synthetic_openapi

BAD_PATTERN = "(unclosed"
"""A parameter pattern Python's `re` refuses: its tool's `_schemas.json` piece comes with a TC650."""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    document = synthetic_openapi(30)
    listing = document["paths"]["/family0/items"]["get"]
    listing["parameters"].append({"name": "code", "in": "query", "schema": {"type": "string", "pattern": BAD_PATTERN}})
    return project_in(tmp_path, monkeypatch, document)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the pieces made (not reused) by the compiles of a test."""
    seen: list[str] = []
    real = FilePieces.piece

    def counting(self: FilePieces, key: str, make: Callable[[], Any], diagnostics: Diagnostics | None = None) -> bytes:
        def counted() -> Any:
            seen.append(key)
            return make()

        return real(self, key, counted, diagnostics)

    monkeypatch.setattr(FilePieces, "piece", counting)
    return seen


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for methods in document["paths"].values() for op in methods.values() if "operationId" in op]


def _edit(spec: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(spec.read_text())
    change(document)
    spec.write_text(json.dumps(document))


def _reword(document: dict[str, Any]) -> None:
    _operations(document)[7]["description"] = "Reworded after a review."


def _add_parameter(document: dict[str, Any]) -> None:
    _operations(document)[7].setdefault("parameters", []).append(
        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}})


def _add_tool(document: dict[str, Any]) -> None:
    document["paths"]["/family0/archive"] = {"post": {"operationId": "archiveFamily0", "summary": "Archive.",
                                                      "responses": {"200": {"description": "OK"}}}}


def _remove_tool(document: dict[str, Any]) -> None:
    del document["paths"]["/family1/items/{itemId}"]["delete"]


def _rename_to_collide(document: dict[str, Any]) -> None:
    """`getFamily3` becomes `list_family2`: the same function name as `listFamily2`'s, which it takes (it is the
    name as written), so `listFamily2`'s function gets another (`unique_names`, chosen over the whole source)."""
    next(op for op in _operations(document) if op["operationId"] == "getFamily3")["operationId"] = "list_family2"


def _clean(spec: Path, tmp_path: Path) -> tuple[dict[str, bytes], list[str]]:
    build, files = compile_into(spec, tmp_path / "clean" / "out", codegen=True)
    return files, sorted(map(str, build.diagnostics.sorted()))


def _diagnostics(build: Any) -> list[str]:
    return sorted(map(str, build.diagnostics.sorted()))


def test_a_warm_compile_makes_no_piece_and_a_changed_description_only_its_tools(spec: Path, tmp_path: Path,
                                                                                 made: list[str]) -> None:
    out = tmp_path / "out"
    build, cold = compile_into(spec, out, codegen=True)
    routed = len(build.catalog.tools)
    assert len(made) >= 5 * routed, "a compile from nothing makes every piece"
    assert store.cache_path(out, KIND).is_file()
    made.clear()
    _edit(spec, _add_parameter)  # a first change, so the next compile regenerates the router from the pieces
    compile_into(spec, out, codegen=True)
    made.clear()
    _edit(spec, _reword)
    build, recompiled = compile_into(spec, out, codegen=True)
    assert len(made) == 5, "one tool's catalog entry, function, schema line, table row and served entry: no other"
    clean, clean_diagnostics = _clean(spec, tmp_path)
    assert recompiled == clean
    assert _diagnostics(build) == clean_diagnostics
    assert any(BAD_PATTERN in line for line in clean_diagnostics), "the TC650 a reused piece replays"
    assert recompiled != cold


@pytest.mark.parametrize("change", [_reword, _add_parameter, _add_tool, _remove_tool, _rename_to_collide],
                         ids=["description", "parameter", "new tool", "removed tool", "colliding rename"])
def test_a_changed_compile_is_a_compile_from_nothing(spec: Path, tmp_path: Path, made: list[str],
                                                     change: Callable[[dict[str, Any]], None]) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    _edit(spec, change)
    made.clear()
    build, recompiled = compile_into(spec, out, codegen=True)
    assert len(made) <= 10, "the pieces of the tools changed (and of the one a rename renames), no others"
    clean, clean_diagnostics = _clean(spec, tmp_path)
    assert recompiled == clean
    assert _diagnostics(build) == clean_diagnostics


def test_the_colliding_rename_renames_the_other_function(spec: Path, tmp_path: Path) -> None:
    """The case the test above covers really moves a name the renamed tool does not own."""
    out = tmp_path / "out"
    before = orjson.loads(compile_into(spec, out, codegen=True)[1]["python/toolc_router/_codemode.json"])
    _edit(spec, _rename_to_collide)
    after = orjson.loads(compile_into(spec, out, codegen=True)[1]["python/toolc_router/_codemode.json"])
    [module] = after["modules"]

    def name_of_list_family2(codemode: dict[str, Any]) -> str:
        return next(name for name, entry in codemode["modules"][module].items()
                    if entry["tool"].endswith(":listFamily2"))

    assert name_of_list_family2(before) == "list_family2"
    assert name_of_list_family2(after).startswith("list_family2_"), "its name went to the renamed tool"


@pytest.mark.skipif(not can_fork(), reason="the router is made in a forked child only where fork exists")
def test_the_router_made_in_a_child_hands_its_pieces_back(spec: Path, tmp_path: Path, made: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python, "BACKGROUND_MIN_TOOLS", 1)
    monkeypatch.setattr(python, "cores", lambda: 2)
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    assert store.load(out, KIND, Diagnostics()) is not None, "saved by the parent with the output folder"
    _edit(spec, _reword)
    build, recompiled = compile_into(spec, out, codegen=True)
    clean, clean_diagnostics = _clean(spec, tmp_path)
    assert recompiled == clean and _diagnostics(build) == clean_diagnostics


class _TakenBy(Once):
    """A `Once` only `taker` can take (`parent`, the process making the stubs, or `child`, the router's): which
    of the two makes `_catalog.json`, decided rather than raced."""

    def __init__(self, taker: str) -> None:
        super().__init__()
        self._parent, self._taker = os.getpid(), taker

    def take(self) -> bool:
        return ("parent" if os.getpid() == self._parent else "child") == self._taker and super().take()


@pytest.mark.skipif(not can_fork(), reason="the router is made in a forked child only where fork exists")
@pytest.mark.parametrize("taker", ["parent", "child"])
def test_the_catalog_is_made_by_whichever_process_takes_it(spec: Path, tmp_path: Path, made: list[str],
                                                           monkeypatch: pytest.MonkeyPatch, taker: str) -> None:
    monkeypatch.setattr(python, "BACKGROUND_MIN_TOOLS", 1)
    monkeypatch.setattr(python, "cores", lambda: 2)
    monkeypatch.setattr(python, "Once", lambda: _TakenBy(taker))
    out = tmp_path / "out"
    build, _cold = compile_into(spec, out, codegen=True)
    assert len(made) == (len(build.catalog.tools) if taker == "parent" else 0), "made here only when taken here"
    assert "_catalog.json" in _cached(out)["payload"], "its pieces kept, whichever process made them"
    _edit(spec, _reword)
    made.clear()
    build, recompiled = compile_into(spec, out, codegen=True)
    assert len(made) == (1 if taker == "parent" else 0), "the reworded tool's piece, the others reused"
    clean, clean_diagnostics = _clean(spec, tmp_path)
    assert recompiled == clean and _diagnostics(build) == clean_diagnostics


@pytest.mark.skipif(not can_fork(), reason="the router is made in a forked child only where fork exists")
def test_a_router_that_failed_gets_no_catalog_made_beside_it(spec: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """TC636 (its `_tables.py` did not render): no router file at all, though this process took the catalog."""
    monkeypatch.setattr(python, "BACKGROUND_MIN_TOOLS", 1)
    monkeypatch.setattr(python, "cores", lambda: 2)
    monkeypatch.setattr(python, "Once", lambda: _TakenBy("parent"))

    def failing(template: str, **context: Any) -> str:
        raise jinja2.TemplateError("broken on purpose")

    monkeypatch.setattr(router_package, "render", failing)
    build = compile_project(config(codegen=True), adhoc_inputs([spec], spec.parent), targets=TARGETS,
                            out_dir=tmp_path / "out")
    assert [d.code for d in build.diagnostics if d.code == router_package.RENDER_FAILED]
    assert not [path for path in build.files if path.startswith("python/toolc_router/")]
    build.files.release_spool()


def _cached(out: Path) -> dict[str, Any]:
    data = orjson.loads(store.cache_path(out, KIND).read_bytes())
    assert isinstance(data, dict)
    return data


def _corrupt(out: Path) -> None:
    store.cache_path(out, KIND).write_bytes(b"{not json")


def _foreign(out: Path) -> None:
    data = _cached(out)
    data["toolc"] = "another toolc"
    store.cache_path(out, KIND).write_bytes(orjson.dumps(data))


@pytest.mark.parametrize("damage", [_corrupt, _foreign], ids=["corrupted", "another toolc's"])
def test_a_damaged_or_foreign_cache_is_ignored_with_a_note(spec: Path, tmp_path: Path, made: list[str],
                                                           damage: Callable[[Path], None]) -> None:
    out = tmp_path / "out"
    build, _cold = compile_into(spec, out, codegen=True)
    routed = len(build.catalog.tools)
    damage(out)
    _edit(spec, _reword)
    made.clear()
    build, recompiled = compile_into(spec, out, codegen=True)
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and d.source.endswith(f".{KIND}.json")]
    assert notes, "a TC140 note says the cache was not used"
    assert len(made) >= 5 * routed, "every piece made again"
    assert recompiled == _clean(spec, tmp_path)[0]


def _swap_ranges(out: Path) -> None:
    """Well-formed JSON whose ranges point at other pieces' bytes: each must fail its own digest."""
    data = _cached(out)
    pieces = data["payload"]["_catalog.json"]
    keys = list(pieces)
    for first, second in zip(keys[::2], keys[1::2], strict=False):
        pieces[first][:2], pieces[second][:2] = pieces[second][:2], pieces[first][:2]
    store.cache_path(out, KIND).write_bytes(orjson.dumps(data))


def _edit_folder(out: Path) -> None:
    path = out / "python" / "toolc_router" / "_catalog.json"
    path.write_bytes(path.read_bytes().replace(b"updateFamily", b"upd8teFamily"))


@pytest.mark.parametrize("damage", [_swap_ranges, _edit_folder], ids=["ranges swapped", "output edited"])
def test_pieces_that_do_not_check_out_are_made_again(spec: Path, tmp_path: Path, made: list[str],
                                                     damage: Callable[[Path], None]) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    damage(out)
    _edit(spec, _reword)
    made.clear()
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert len(made) > 5, "the pieces whose bytes no longer match are made again"
    assert recompiled == _clean(spec, tmp_path)[0]


def test_a_piece_keeps_and_replays_its_diagnostics(tmp_path: Path) -> None:
    folder_file = tmp_path / "data.json"
    diagnostic = Diagnostic.of("TC650", "a pattern", source="api", tool="api:t")
    first = FilePieces({}, None, keep=True)
    content = first.frame(b"[") + first.piece("k", lambda: (b'"x"', [diagnostic])) + first.frame(b"]")
    folder_file.write_bytes(content)
    assert first.now is not None
    replayed = Diagnostics()
    second = FilePieces(first.now, folder_file, keep=True)
    second.frame(b"[[")
    assert second.piece("k", lambda: pytest.fail("reused, not made"), replayed) == b'"x"'
    second.close()
    assert replayed.items == [diagnostic]
    assert second.now == {"k": [2, 3, first.now["k"][2], [diagnostic.to_row()]]}, "its new range is kept"


@pytest.mark.parametrize("offset, length", [(0, 10**15), (10**15, 3), (2, -1), (-1, 3)],
                         ids=["length past the file", "offset past the file", "negative length", "negative offset"])
def test_a_crafted_range_in_the_index_is_made_again_not_read(tmp_path: Path, offset: int, length: int) -> None:
    """A piece's range beyond its file (a damaged or crafted index) is never read: a length of 10**15 would be
    allocated before the read."""
    folder_file = tmp_path / "data.json"
    folder_file.write_bytes(b'["x"]')
    pieces = FilePieces({"k": [offset, length, "0" * 64, []]}, folder_file, keep=True)
    assert pieces.piece("k", lambda: (b'"y"', [])) == b'"y"'
    pieces.close()


def test_without_an_output_folder_nothing_is_kept(tmp_path: Path) -> None:
    router = reuse.RouterReuse(None, None, Diagnostics())
    with router.pieces("_catalog.json") as pieces:
        assert pieces.piece("k", lambda: (b"x", [])) == b"x"
    assert router.entry() is None


def test_a_data_file_as_recorded_has_its_pieces_reused_unhashed(spec: Path, tmp_path: Path, made: list[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The data files in the output folder keep the stamps recorded as it was written: a recompile hashes only the
    pieces it makes, not the ones it reads back (`reuse.stamps`); a file touched since has its pieces checked."""
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    hashed: list[int] = []
    real = reuse._sha256
    monkeypatch.setattr(reuse, "_sha256", lambda data: hashed.append(len(data)) or real(data))
    monkeypatch.setattr(python, "can_fork", lambda: False)  # the router made here, where it is counted
    _edit(spec, _reword)
    made.clear()
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert recompiled == _clean(spec, tmp_path)[0]
    assert made and len(hashed) == len(made), "only the pieces made are hashed"
    catalog = out / "python" / "toolc_router" / "_catalog.json"
    found = catalog.stat()
    os.utime(catalog, ns=(found.st_atime_ns, found.st_mtime_ns + 1_000_000_000))
    _edit(spec, lambda document: _operations(document)[7].update(description="Reworded once more."))
    hashed.clear()
    made.clear()
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert len(hashed) > len(made), "the touched file's pieces are checked"
