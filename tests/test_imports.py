"""Imports run one way in `compiler/`: no cycle, and no edge from a lower floor up to a higher one (the router's
static modules: `tests/router/test_import_graph.py`). Every import counts, deferred or type-only too
(`tests/support/imports.py`), so neither can stand in for a design that breaks a cycle."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tests.support.imports import DEFERRED, TOP, TYPE_ONLY, Edge, find_cycle, import_edges
from tests.support.paths import ROOT

COMPILER = ROOT / "compiler"

FLOORS: tuple[tuple[str, frozenset[str]], ...] = (
    ("vocabulary", frozenset({"ir", "schema", "targets", "codes"})),
    ("infrastructure", frozenset({"infra"})),
    ("rules", frozenset({"server_shapes", "policy"})),
    ("project and references", frozenset({"config", "refs"})),
    ("caches", frozenset({"incremental"})),
    ("hand-off types", frozenset({"build"})),
    ("sources", frozenset({"sources", "catalog_json", "preset_secrets"})),
    ("providers", frozenset({"providers"})),
    ("fit", frozenset({"fit"})),
    ("outputs", frozenset({"codegen", "drift"})),
    ("pipeline", frozenset({"pipeline"})),
    ("commands", frozenset({"commands"})),
    ("entry points", frozenset({"cli", "__main__", "__init__"})),
)
"""`compiler/`'s top-level modules and packages, lowest floor first: an import may point to its own floor or
below, never above."""


@cache
def _compiler_edges() -> list[Edge]:
    return import_edges(COMPILER, "compiler")


def _unit(module: str) -> str:
    """`compiler.fit.forms` → `providers`; `compiler` → `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _floor(unit: str) -> int:
    for index, (_name, units) in enumerate(FLOORS):
        if unit in units:
            return index
    raise AssertionError(f"compiler/{unit} is on no floor: add it to FLOORS in tests/test_imports.py")


def test_compiler_has_no_import_cycle() -> None:
    assert find_cycle(_compiler_edges()) == []


def test_compiler_imports_point_down() -> None:
    upward = [f"{edge.source}:{edge.line} imports {edge.target}" for edge in _compiler_edges()
              if _floor(_unit(edge.source)) < _floor(_unit(edge.target))]
    assert upward == []


def test_every_compiler_module_is_on_a_floor() -> None:
    units = {_unit(edge.source) for edge in _compiler_edges()} | {_unit(edge.target) for edge in _compiler_edges()}
    assert units - frozenset().union(*(floor for _name, floor in FLOORS)) == set()


def test_no_type_only_import_of_our_own_modules() -> None:
    """`if TYPE_CHECKING:` is how a cycle hides from the interpreter; our own modules are imported for real."""
    hidden = [f"{edge.source}:{edge.line} {edge.target}" for edge in _compiler_edges()
              if edge.kind == TYPE_ONLY]
    assert hidden == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_deferred_or_type_only_import_does_not_hide_a_cycle(tmp_path: Path) -> None:
    folder = _package(tmp_path / "pkg", {
        "__init__.py": "",
        "config.py": "from pkg.registry import TARGETS\n",
        "registry.py": "from pkg import dialect\nTARGETS = ()\n",
        "dialect.py": "def names():\n    from pkg.config import X\n    return X\n",
        "names.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .dialect import names\n",
        "leaf.py": "from . import names\n",
    })
    edges = import_edges(folder, "pkg")
    assert {(edge.source, edge.target, edge.kind) for edge in edges} == {
        ("pkg.config", "pkg.registry", TOP), ("pkg.registry", "pkg.dialect", TOP),
        ("pkg.dialect", "pkg.config", DEFERRED), ("pkg.names", "pkg.dialect", TYPE_ONLY), ("pkg.leaf", "pkg.names", TOP)}
    cycle = find_cycle(edges)
    assert set(cycle) == {"pkg.config", "pkg.registry", "pkg.dialect"} and cycle[0] == cycle[-1]
    acyclic = [edge for edge in edges if edge.kind != DEFERRED]
    assert find_cycle(acyclic) == []


def test_an_upward_import_is_found() -> None:
    """What `test_compiler_imports_point_down` reports for a stage that imports the pipeline."""
    edge = Edge("compiler.providers.schemas", "compiler.pipeline", TOP, 1)
    assert _floor(_unit(edge.source)) < _floor(_unit(edge.target))
