"""The import graph of a package folder, read from its source (nothing is imported): every import counts, at
the top of a module, inside a function (deferred) or under `if TYPE_CHECKING:` (type-only), so that neither can
hide a cycle."""

from __future__ import annotations

import ast
import graphlib
from dataclasses import dataclass
from pathlib import Path

TOP, DEFERRED, TYPE_ONLY = "top", "deferred", "type-only"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str
    line: int


def module_names(folder: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every module (`.py`, or a `.pyi` that stands for a generated one)."""
    found: dict[str, Path] = {}
    for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.pyi")]):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.setdefault(".".join([package, *parts]), path)
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it sits: module level, deferred (in a function) or type-only."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, kind))
            elif isinstance(child, ast.If) and _is_type_checking(child):
                visit(child, TYPE_ONLY)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, DEFERRED if kind == TOP else kind)
            else:
                visit(child, kind)

    visit(tree, TOP)
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, *([base] if base else [])])
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def _imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                      modules: dict[str, Path]) -> list[str]:
    targets = _targets(node, module, is_package)
    if isinstance(node, ast.Import):
        return targets
    submodules = [name for name in targets[:-1] if name in modules]
    return submodules or targets[-1:]


def import_edges(folder: Path, package: str) -> list[Edge]:
    """Edges between the package's own modules (`from a import b` names module `a.b` when it is one, else `a`)."""
    modules = module_names(folder, package)
    edges: list[Edge] = []
    for module, path in modules.items():
        for node, kind in _imports(ast.parse(path.read_text())):
            for target in _imported_modules(node, module, path.stem == "__init__", modules):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != module:
                    edges.append(Edge(module, target, kind, node.lineno))
    return edges


def find_cycle(edges: list[Edge]) -> list[str]:
    """One import cycle (its modules, the first repeated at the end), or [] when the graph has none."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []
