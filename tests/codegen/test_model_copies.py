"""Issue 11: a tool model folded as a duplicate of another tool's is a copy of it, never a subclass: no stub model
inherits from another tool's model (read with `ast` from the committed `generated/` and from a fresh run)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.stubs.identifiers import pascal_name
from compiler.codegen.stubs.model_chunks import generate_models
from tests.support.paths import ROOT

GENERATED = ROOT / "generated" / "python"


def _tool_models(tools_py: str) -> set[str]:
    """`<Tool>Input`/`<Tool>Output` of every stub tools.py defines (`codegen.stubs.stub_packages` names them so) that it uses."""
    tree = ast.parse(tools_py)
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_models"}
    stems = {pascal_name(node.name, fallback="Tool") for node in tree.body if isinstance(node, ast.AsyncFunctionDef)}
    return {f"{stem}{kind}" for stem in stems for kind in ("Input", "Output")} & used


def _bases(code: str) -> dict[str, list[str]]:
    return {node.name: [ast.unparse(base) for base in node.bases]
            for node in ast.parse(code).body if isinstance(node, ast.ClassDef)}


@pytest.mark.parametrize("package", sorted(p.parent.name for p in GENERATED.glob("*/tools.py")))
def test_no_generated_model_inherits_from_a_tool_model(package: str) -> None:
    tool_models = _tool_models((GENERATED / package / "tools.py").read_text())
    assert tool_models, package
    for module in sorted((GENERATED / package).glob("*models*.py")):
        for name, bases in _bases(module.read_text()).items():
            assert not set(bases) & tool_models, f"{module.name}: class {name}({', '.join(bases)})"


def test_a_folded_duplicate_is_an_independent_copy(tmp_path: Path) -> None:
    item = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {
        "$ref": "#/$defs/Tag"}}}, "required": ["id"]}
    table: dict[str, Any] = {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}},
                             "GetItemInput": item, "PeekItemInput": dict(item), "ListItemsInput": {"type": "object"}}
    keys = ["GetItemInput", "ListItemsInput", "PeekItemInput"]
    models = generate_models(table, keys, package="copies", header="# test", allow_calls=frozenset({"model_rebuild"}))
    code = models.files["models.py"]
    bases = _bases(code)
    assert bases["PeekItemInput"] == bases["GetItemInput"] == ["BaseModel"]
    module = models.for_key("PeekItemInput")
    assert module is not None and module.fields["PeekItemInput"] == module.fields["GetItemInput"]
    (tmp_path / "copies").mkdir()
    (tmp_path / "copies" / "__init__.py").write_text("")
    (tmp_path / "copies" / "models.py").write_text(code)
    sys.path.insert(0, str(tmp_path))
    try:
        loaded = importlib.import_module("copies.models")
    finally:
        sys.path.remove(str(tmp_path))
    peek = loaded.PeekItemInput.model_validate({"id": 3, "tags": [{"name": "x"}]})
    assert peek.id == 3 and peek.tags[0].name == "x"
    assert not issubclass(loaded.PeekItemInput, loaded.GetItemInput)
