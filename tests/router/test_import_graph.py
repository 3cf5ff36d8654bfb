"""The router package's import graph: no cycle, no upward edge between its layers, every import at module level.

The modules are read from `templates/router/static/` and the golden `generated/python/toolc_router/` (which adds
`_tables.py` and the modules shared with the compiler). A new module must be placed in a layer below; an import
inside a function or under `if TYPE_CHECKING:` is refused, so no deferred import can stand in for a design.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (ROOT / "templates" / "router" / "static", ROOT / "generated" / "python" / "toolc_router")
PACKAGE = "__init__"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundation", frozenset({"shapes", "ranking", "_types", "_env", "redact"})),
    ("baked tables", frozenset({"_tables"})),
    ("rules", frozenset({"environment", "wire", "wire_styles", "wire_keys", "wire_bodies", "validate", "policy",
                         "audit", "telemetry", "scope", "result_budget"})),
    ("parts", frozenset({"http_dispatch", "mcp_dispatch", "audit_pg", "discovery", "providers", "guards",
                         "rate_limits"})),
    ("router", frozenset({"router"})),
    ("serving", frozenset({"serve_catalog", "serve_limits", "serve_mcp", "serve_http", "serve"})),
    ("package", frozenset({PACKAGE, "stubs"})),
)
"""Lowest first: a module may import from its own layer or one below, never from one above."""


def module_sources() -> dict[str, str]:
    sources: dict[str, str] = {}
    for folder in FOLDERS:
        for path in sorted(folder.glob("*.py")):
            sources.setdefault(path.stem, path.read_text(encoding="utf-8"))
    return sources


def local_imports(tree: ast.Module, modules: frozenset[str] | set[str]) -> set[str]:
    """The package's modules `tree` imports (relative imports; `from . import X` names module X or the package)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level != 1:
            continue
        if node.module is not None:
            found.add(node.module.split(".")[0])
        else:
            found.update(alias.name if alias.name in modules else PACKAGE for alias in node.names)
    return found


def nested_imports(tree: ast.Module) -> list[int]:
    """Lines of imports that are not statements of the module itself (in a function, a class, an `if`)."""
    top = {id(node) for node in tree.body}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in top]


def graph() -> dict[str, set[str]]:
    sources = module_sources()
    names = set(sources)
    return {name: local_imports(ast.parse(text), names) - {name} for name, text in sources.items()}


def cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of `edges` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def layer_of(module: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        if module in members:
            return index
    raise AssertionError(f"{module}.py is in no layer: place it in LAYERS ({__file__})")


def upward_edges(edges: Mapping[str, set[str]]) -> list[str]:
    return [f"{source} ({LAYERS[layer_of(source)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
            for source, targets in sorted(edges.items()) for target in sorted(targets)
            if layer_of(target) > layer_of(source)]


def test_the_router_package_has_no_import_cycle() -> None:
    edges = graph()
    assert {"router", "providers", "discovery", "guards"} <= set(edges)
    assert cycle(edges) is None, " → ".join(cycle(edges) or [])


def test_no_module_imports_from_a_layer_above_it() -> None:
    assert upward_edges(graph()) == []


@pytest.mark.parametrize("module", sorted(module_sources()))
def test_every_import_is_at_module_level(module: str) -> None:
    source = module_sources()[module]
    assert "TYPE_CHECKING" not in source
    assert nested_imports(ast.parse(source)) == []


def test_the_checks_catch_what_they_look_for() -> None:
    assert cycle({"router": {"providers"}, "providers": {"discovery"}, "discovery": {"router"}}) == [
        "discovery", "router", "providers", "discovery"]
    assert cycle({"router": {"providers"}, "providers": {"discovery"}, "discovery": set()}) is None
    assert upward_edges({"discovery": {"router"}}) == ["discovery (parts) imports router (router)"]
    deferred = ast.parse("import os\ndef f():\n    from .router import Router\nif TYPE_CHECKING:\n    import x\n")
    assert nested_imports(deferred) == [3, 5]
    assert local_imports(ast.parse("from . import discovery, call_tool\nfrom .router import Router\n"),
                         {"discovery", "router"}) == {"discovery", PACKAGE, "router"}
