"""Recompiles of the stubs (issue 27): whatever changed since the last compile (a description, an operation's
name, an operation added or removed, a `# toolc: keep` edit in tools.py), the output is byte for byte a compile
from nothing; names are made once per compile (the stubs and code mode share them) and not at all when the
tools' names are the same; a module checked by the last compile is not checked again; a damaged or foreign
cache is ignored with a TC140 note."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.stubs import literals, stub_functions, stub_names, stub_packages
from compiler.incremental import identity, store
from tests.incremental.test_lowering_cache import compile_into
from tests.support.synthetic import synthetic_openapi


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stub_functions, "PIECE", 8)
    path = tmp_path / "api.json"
    path.write_text(json.dumps(synthetic_openapi(40)))
    return path


def _edit(spec: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(spec.read_text())
    change(document)
    spec.write_text(json.dumps(document))


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for methods in document["paths"].values() for op in methods.values() if "operationId" in op]


def _describe(document: dict[str, Any]) -> None:
    _operations(document)[7]["description"] = "Reworded after a review."


def _rename(document: dict[str, Any]) -> None:
    _operations(document)[12]["operationId"] = "renamedByReview"


def _add(document: dict[str, Any]) -> None:
    document["paths"]["/added/by/review"] = {"get": {"operationId": "addedByReview", "description": "Added.",
                                                     "responses": {"200": {"description": "ok"}}}}


def _remove(document: dict[str, Any]) -> None:
    first = next(iter(document["paths"]))
    del document["paths"][first]


def _from_nothing(out: Path, tmp_path: Path, name: str) -> dict[str, bytes]:
    """A compile of the same document into a copy of `out` (its previous output, `# toolc: keep` edits and all)
    with no cache beside it."""
    fresh = tmp_path / name / "out"
    shutil.copytree(out, fresh)
    return compile_into(Path.cwd() / "api.json", fresh, codegen=True)[1]


CHANGES = {"a description": _describe, "a renamed operation": _rename, "an added operation": _add,
           "a removed operation": _remove}


def test_every_change_recompiles_to_a_compile_from_nothing(spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cold = compile_into(spec, out, codegen=True)[1]
    warm = compile_into(spec, out, codegen=True)[1]
    assert warm == cold == _from_nothing(out, tmp_path, "clean-warm")
    for index, (label, change) in enumerate(CHANGES.items()):
        _edit(spec, change)
        changed = compile_into(spec, out, codegen=True)[1]
        assert changed != cold, label
        assert changed == _from_nothing(out, tmp_path, f"clean-{index}"), label


def test_a_keep_edit_is_carried_over_as_from_nothing(spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    tools_py = next(out.glob("python/*/tools.py"))
    text = tools_py.read_text()
    first = text.index("\n\n\nasync def ") + 3
    name = text[first:].split("(", 1)[0].removeprefix("async def ")
    body = text.index("    _arguments = ", first)
    edited = text[:first] + "# toolc: keep\n" + text[first:body] + "    # my edit\n" + text[body:]
    tools_py.write_text(edited)
    _edit(spec, _describe)
    changed = compile_into(spec, out, codegen=True)[1]
    kept = changed[f"python/{tools_py.parent.name}/tools.py"].decode()
    assert "# my edit" in kept and f"# toolc: keep\nasync def {name}(" in kept
    assert "Reworded after a review." in kept
    assert changed == _from_nothing(out, tmp_path, "clean")


def test_names_are_made_once_and_kept(spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    real = stub_names.make_names
    monkeypatch.setattr(stub_names, "make_names", lambda names: made.append(1) or real(names))
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    assert len(made) == 1, "the stubs and code mode name the source's functions once"
    made.clear()
    _edit(spec, _describe)
    compile_into(spec, out, codegen=True)
    assert made == [], "the same tool names: named by the last compile"
    _edit(spec, _rename)
    recompiled = compile_into(spec, out, codegen=True)[1]
    assert len(made) == 1, "a renamed tool: named again"
    assert recompiled == _from_nothing(out, tmp_path, "clean")


def test_a_module_checked_last_time_is_not_checked_again(spec: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    real = literals.check_module

    def counting(code: str, *, filename: str, allow_calls: frozenset[str] = frozenset()) -> Any:
        checked.append(filename)
        return real(code, filename=filename, allow_calls=allow_calls)

    monkeypatch.setattr(stub_packages, "check_module", counting)
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    assert any(name.endswith("/__init__.py") for name in checked)
    checked.clear()
    _edit(spec, _describe)  # every module's digest changes, __init__.py's names do not
    compile_into(spec, out, codegen=True)
    assert not any(name.endswith("/__init__.py") for name in checked)
    checked.clear()
    _edit(spec, _add)  # a new name in __init__.py
    assert compile_into(spec, out, codegen=True)[1] == _from_nothing(out, tmp_path, "clean")
    assert any(name.endswith("/__init__.py") for name in checked)


_LIES = {"an entry damaged": lambda names: {name: "os.system" for name in names},
         "names that collide": lambda names: dict.fromkeys(names, "same"),
         "a keyword": lambda names: {name: "class" if index == 0 else f"f{index}" for index, name in enumerate(names)},
         "a reserved name": lambda names: {name: "tools" if index == 0 else f"f{index}"
                                           for index, name in enumerate(names)}}


@pytest.mark.parametrize("damage", ["not json", "another toolc", *_LIES])
def test_a_damaged_names_cache_is_ignored(spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          damage: str) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    path = store.cache_path(out, stub_names.KIND)
    data = json.loads(path.read_text())
    if damage == "not json":
        path.write_text(path.read_text()[:100])
    elif damage == "another toolc":
        monkeypatch.setattr(identity, "toolc_identity", lambda: "sha256:another toolc")
    else:
        for entry in data["payload"].values():
            entry[0] = _LIES[damage](entry[0])
        path.write_text(json.dumps(data))
    _edit(spec, _describe)
    build, recompiled = compile_into(spec, out, codegen=True)
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED and d.source == str(path)]
    assert len(notes) == (0 if damage in _LIES else 1), notes
    assert recompiled == _from_nothing(out, tmp_path, "clean")
