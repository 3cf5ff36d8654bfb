"""tools.py formatted piece by piece (`compiler.codegen.piece_format`) is ruff's formatting of the module whole,
on every document here, hostile descriptions among them; and a piece the last compile formatted is taken from
the output folder only while it is what that compile wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen import formatting, piece_format
from compiler.codegen.stubs import stub_functions
from compiler.codegen.stubs.stub_packages import stub_files
from compiler.config import Config
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics
from compiler.pipeline import adhoc_inputs, compile_project
from tests.incremental.test_lowering_cache import compile_into
from tests.support.codegen import RECORDINGS, build_from
from tests.support.synthetic import synthetic_openapi

HOSTILE = ['He said "hi" and \'bye\'\\\\ then """ and \'\'\'', "\n\nasync def evil():\n    pass\n# toolc: keep\n",
           "x" * 300, "Tabs\tand\x0bodd\x0cspaces\u2028and\u2029separators", "# fmt: off\n  a  =  1\n# fmt: on",
           "ends with a backslash \\", "ünïcödé ✓ \U0001d4b3", "    indented\n        more\n  less", ""]


def _openapi(tmp_path: Path) -> Path:
    document = synthetic_openapi(30)
    operations = [op for methods in document["paths"].values() for op in methods.values() if "operationId" in op]
    for operation, text in zip(operations, HOSTILE, strict=False):
        operation["description"] = text
    path = tmp_path / "api.json"
    path.write_text(json.dumps(document))
    return path


def _whole_and_pieced(files: dict[str, bytes], pieced: dict[str, Any]) -> None:
    assert pieced, "every package here has a tools.py of pieces"
    made = piece_format.PieceFormats(None, {}, Diagnostics()).format(pieced)
    whole = formatting.run_ruff({path: files[path] for path in pieced})
    assert made == whole


@pytest.mark.parametrize("piece", [1, 3, 64])
def test_pieced_is_whole_on_recorded_servers(piece: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stub_functions, "PIECE", piece)
    stubs = stub_files(build_from((json.loads(path.read_text()), path.name) for path in RECORDINGS))
    _whole_and_pieced(stubs.files, stubs.pieced)


@pytest.mark.parametrize("piece", [1, 4])
def test_pieced_is_whole_on_an_openapi_document_with_hostile_descriptions(
        piece: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stub_functions, "PIECE", piece)
    monkeypatch.setenv("TOOLC_JOBS", "1")
    spec = _openapi(tmp_path)
    build = compile_project(Config(root=tmp_path), adhoc_inputs([spec], tmp_path), targets=())
    stubs = stub_files(build)
    _whole_and_pieced(stubs.files, stubs.pieced)


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stub_functions, "PIECE", 4)
    return _openapi(tmp_path)


def _reword(spec: Path, text: str) -> None:
    document = json.loads(spec.read_text())
    next(op for methods in document["paths"].values() for op in methods.values())["description"] = text
    spec.write_text(json.dumps(document))


@pytest.mark.parametrize("damage", ["a piece edited in the folder", "ranges past the module", "not json",
                                    "a piece's digests moved"])
def test_a_piece_that_does_not_check_out_is_formatted_again(spec: Path, tmp_path: Path, damage: str) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    tools_py = next(out.glob("python/*/tools.py"))
    path = store.cache_path(out, piece_format.KIND)
    data = json.loads(path.read_text())
    if damage == "a piece edited in the folder":  # same length: only the recorded hash tells
        tools_py.write_bytes(tools_py.read_bytes().replace(b"_arguments", b"_argumentz", 1))
    elif damage == "ranges past the module":
        for rows in data["payload"].values():
            for row in rows:
                row[1] += 10**15
    elif damage == "not json":
        path.write_text(path.read_text()[:50])
    else:
        for rows in data["payload"].values():
            for row in rows:
                row[0] = rows[-1][0]
    if damage in ("ranges past the module", "a piece's digests moved"):
        path.write_text(json.dumps(data))
    _reword(spec, "Reworded.")
    build, recompiled = compile_into(spec, out, codegen=True)
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and d.source == str(path)]
    assert len(notes) == (1 if damage == "not json" else 0)
    fresh = tmp_path / "clean" / "out"
    assert recompiled == compile_into(spec, fresh, codegen=True)[1]
