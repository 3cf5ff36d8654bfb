"""A hostile listing (fixtures/codegen/hostile.json): names and text that try to break out of generated code.

The generated package must compile, run nothing on import, keep every tool callable and send every argument
under its wire (schema) name."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.stubs.stub_packages import generate_stubs
from tests.support.codegen import (
    HOSTILE,
    build_from_files,
    call_every_stub,
    router_files,
    run_isolated,
    tool,
    write_files,
)

PACKAGE = "hostile_server"


def _listing() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(HOSTILE.read_text())["tools_list_pages"][0]["tools"]
    return tools


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    build = build_from_files([HOSTILE])
    files = generate_stubs(build)
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics]
    folder = tmp_path_factory.mktemp("hostile")
    write_files(folder, {**router_files(build), **files})
    return folder, files


def _top_level_is_inert(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return not getattr(node, "decorator_list", [])
    if isinstance(node, ast.Expr):
        if isinstance(node.value, ast.Constant):
            return True
        call = node.value  # pydantic's Model.model_rebuild(), nothing else
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "model_rebuild" and not call.args)
    if isinstance(node, ast.Assign | ast.AnnAssign):
        return node.value is None or not any(isinstance(n, ast.Call) for n in ast.walk(node.value))
    if isinstance(node, ast.If):
        return ast.unparse(node.test) == "TYPE_CHECKING" and all(isinstance(n, ast.ImportFrom) for n in node.body)
    return False


def test_every_module_compiles_and_is_inert(generated: tuple[Path, dict[str, bytes]]) -> None:
    _, files = generated
    modules = {path: content for path, content in files.items() if path.endswith(".py")}
    assert sorted(modules) == [f"{PACKAGE}/{m}" for m in ("__init__.py", "models.py", "tools.py")]
    for path, content in modules.items():
        tree = ast.parse(content, filename=path)
        compile(tree, path, "exec")
        assert all(_top_level_is_inert(node) for node in tree.body), path
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            defaults = [*function.args.defaults, *function.args.kw_defaults]
            assert all(d is None or isinstance(d, ast.Constant) for d in defaults), (path, function.name)


def test_nothing_runs_on_import(generated: tuple[Path, dict[str, bytes]]) -> None:
    folder, _ = generated
    result = run_isolated(folder, f"import {PACKAGE}.tools, {PACKAGE}.models\nprint('compiler' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
    assert not (folder / "CANARY").exists() and not Path("CANARY").exists()


def test_docstrings_keep_the_text(generated: tuple[Path, dict[str, bytes]]) -> None:
    _, files = generated
    tree = ast.parse(files[f"{PACKAGE}/tools.py"])
    docs = {n.name: ast.get_docstring(n) or "" for n in tree.body if isinstance(n, ast.AsyncFunctionDef)}
    assert docs["class_"].startswith('\\N{BULLET} looks like an escape; so does \\x41 and \\u0041. Ends with a quote"')
    evil = next(d for name, d in docs.items() if name.startswith("evil"))
    assert evil.startswith("Ends a docstring early: \"\"\"\n__import__('os').system('touch CANARY')\n\"\"\"")
    assert "\u202e" not in files[f"{PACKAGE}/tools.py"].decode()  # bidi override written as an escape


def test_names_are_sanitised(generated: tuple[Path, dict[str, bytes]]) -> None:
    _, files = generated
    tree = ast.parse(files[f"{PACKAGE}/tools.py"])
    names = [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)]
    assert len(names) == len(set(names)) == len(_listing())
    assert {"class_", "import_", "match_", "get_data", "init", "tool_1st", "models_", "context_"} <= set(names)
    assert all(n.isascii() and n.isidentifier() and not n.startswith("_") for n in names)
    evil = next(n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name.startswith("evil"))
    params = [a.arg for a in evil.args.kwonlyargs]
    assert params[-1] == "context" and params.count("context") == 1
    assert {"self_", "context_", "from_", "p_1st", "import_", "print_", "match_", "type_"} <= set(params)
    assert all(p.isascii() and p.isidentifier() and not p.startswith("_") for p in params)


def test_every_tool_is_callable_with_its_wire_names(generated: tuple[Path, dict[str, bytes]]) -> None:
    folder, _ = generated
    data = call_every_stub(folder, PACKAGE)
    assert data["compiler_loaded"] is False
    listing = {f'mcp:hostile"""server:{t["name"]}': t for t in _listing()}
    report = data["report"]
    assert sorted(call["tool_id"] for call in report.values()) == sorted(listing)
    for name, call in report.items():
        schema = listing[call["tool_id"]]["inputSchema"]
        properties = schema.get("properties", {})
        assert set(call["arguments"]) <= set(properties), name
        assert set(schema.get("required", [])) <= set(call["arguments"]), name
        string_args = {v for v in call["passed"].values() if isinstance(v, str) and v.startswith("v:")}
        assert string_args == {v for v in call["arguments"].values() if isinstance(v, str) and v.startswith("v:")}
        assert call["context"] == "CTX"
    evil = next(call for name, call in report.items() if name.startswith("evil"))
    assert set(evil["arguments"]) == set(listing[evil["tool_id"]]["inputSchema"]["properties"])
    assert evil["arguments"]["from"] == evil["passed"]["from_"]
    assert evil["arguments"]["context"] == evil["passed"]["context_"]
    assert evil["arguments"]["\uff46\uff52\uff4f\uff4d"] != evil["arguments"]["from"]  # NFKC twins stay two arguments
    assert {"", '"""', "\\", "\u202eevil", "_support", "InvocationContext"} <= set(evil["arguments"])
    literals = report["literals"]
    assert literals["arguments"]["mode"] == "a'b" and literals["error"] is None


def test_ruff_and_mypy_strict(generated: tuple[Path, dict[str, bytes]]) -> None:
    folder, _ = generated
    ruff = tool("ruff", "check", "--no-cache", PACKAGE, cwd=folder)
    assert ruff.returncode == 0, ruff.stdout
    mypy = tool("mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", PACKAGE, cwd=folder)
    assert mypy.returncode == 0, mypy.stdout
