"""A chunk above SPLIT_WEIGHT runs as its shared definitions plus leaf chunks that import them
(compiler/codegen/stubs/model_chunks.py): the models still import, validate and keep their fields."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.stubs import literals, model_chunks
from compiler.codegen.stubs.literals import UnsafeModule
from compiler.codegen.stubs.model_chunks import GeneratedModels, generate_models
from compiler.codegen.stubs.models import run_datamodel_codegen

_SHARED: dict[str, Any] = {
    "graph.colour": {"type": "string", "enum": ["red", "blue"]},
    "graph.node": {"type": "object", "properties": {
        "id": {"type": "string"}, "colour": {"$ref": "#/$defs/graph.colour"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/graph.node"}}}, "required": ["id"]},
    "graph.edge": {"type": "object", "properties": {
        "source": {"$ref": "#/$defs/graph.node"}, "target": {"$ref": "#/$defs/graph.node"}}},
}


def _table() -> tuple[dict[str, Any], list[str]]:
    table = dict(_SHARED)
    keys = []
    for i in range(8):  # distinct tool models (not folded), all reaching the shared ones: one component
        key = f"Tool{i}Input"
        table[key] = {"type": "object", "properties": {
            f"edge{i}": {"$ref": "#/$defs/graph.edge"}, "node": {"$ref": "#/$defs/graph.node"},
            "colour": {"$ref": "#/$defs/graph.colour"}}, "required": ["node"]}
        keys.append(key)
    return table, keys


def _generate(monkeypatch: pytest.MonkeyPatch, *, split: bool) -> GeneratedModels:
    monkeypatch.setattr(model_chunks, "SPLIT_WEIGHT", 0 if split else 10**9)
    monkeypatch.setattr(model_chunks, "CHUNK_WEIGHT", 600)
    table, keys = _table()
    return generate_models(table, keys, package="splitpkg", header="# test", allow_calls=frozenset({"model_rebuild"}))


def _import(files: GeneratedModels, root: Path, package: str) -> Any:
    (root / package).mkdir()
    (root / package / "__init__.py").write_text("")
    for name, code in files.files.items():
        (root / package / name).write_text(code)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(f"{package}.models")
    finally:
        sys.path.remove(str(root))


def test_big_chunk_splits_into_shared_and_leaf_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    models = _generate(monkeypatch, split=True)
    assert len(models.files) > 3  # models.py, the shared chunk, several leaf chunks
    shared = models.files["_models_0.py"]
    assert "class GraphNode(" in shared and "toolc_stand_in" not in shared
    leaves = [code for name, code in models.files.items() if name not in {"models.py", "_models_0.py"}]
    for code in leaves:
        assert "from . import _models_0" in code
        assert "toolc_stand_in" not in code and "class GraphNode(" not in code
    module = _import(models, tmp_path, "splitpkg")
    tool = module.Tool3Input.model_validate({"node": {"id": "a", "children": [{"id": "b", "colour": "red"}]},
                                             "edge3": {"source": {"id": "s"}, "target": {"id": "t"}}})
    assert isinstance(tool.node, module.GraphNode)
    assert tool.node.children[0].model_dump(mode="json")["colour"] == "red"
    assert tool.edge3.source.id == "s"
    with pytest.raises(ValueError):
        module.Tool3Input.model_validate({"node": {"id": "a", "colour": "green"}})


def test_split_keeps_every_tool_models_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _generate(monkeypatch, split=False)
    split = _generate(monkeypatch, split=True)
    _, keys = _table()
    for key in keys:
        before, after = whole.for_key(key), split.for_key(key)
        assert before is not None and after is not None
        assert after.fields[key] == before.fields[key]


@pytest.mark.parametrize("where", ["_swap_stand_ins", "_check_stand_ins"])  # in the leaf's worker, then after
def test_a_stand_in_that_does_not_line_up_falls_back_to_one_run(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    def mismatch(*args: object) -> object:
        raise model_chunks._StandInMismatch("test")

    monkeypatch.setattr(model_chunks, where, mismatch)
    split = _generate(monkeypatch, split=True)
    whole = _generate(monkeypatch, split=False)
    assert split.files == whole.files


def test_each_chunk_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leaf chunk as generated is only read (its stand-ins found); the gate compiles what is emitted, once."""
    compiled: list[str] = []

    def counting(source: Any, filename: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(filename)
        return compile(source, filename, *args, **kwargs)

    monkeypatch.setenv("TOOLC_JOBS", "1")  # every chunk in this process, where the calls are counted
    monkeypatch.setattr(literals, "compile", counting, raising=False)  # the module's global shadows the builtin
    models = _generate(monkeypatch, split=True)
    emitted = sorted(f"splitpkg/{name}" for name in models.files)
    assert sorted(compiled) == emitted


def test_a_leaf_chunk_that_runs_code_on_import_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its rewrite is gated: a top-level call outside the stand-ins fails the source, as in a whole chunk."""
    def with_a_call(schema: Any, *, header: str, aliases: Any = None) -> str:
        code = run_datamodel_codegen(schema, header=header, aliases=aliases)
        leaf = any(name.startswith("graph.") for name in schema["$defs"]) and "Tool0Input" in schema["$defs"]
        return f"{code}\nprint('imported')\n" if leaf else code

    monkeypatch.setattr(model_chunks, "run_datamodel_codegen", with_a_call)
    with pytest.raises(UnsafeModule, match="top-level Expr"):
        _generate(monkeypatch, split=True)
