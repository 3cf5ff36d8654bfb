"""Every command takes the inputs `compile` takes (PATHs or `-c/--config`), and imports run one way only:
commands → pipeline → stages."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES, ROOT

PARAMS = FIXTURES / "openapi" / "params.yaml"
TIME = FIXTURES / "mcp" / "mcp-server-time.json"


def test_list_takes_paths() -> None:
    result = run_toolc("list", PARAMS, TIME, "--json")
    assert result.exit_code == 0, result.stderr
    ids = [row["id"] for row in json.loads(result.stdout)]
    assert "openapi:params:getPet" in ids  # an ad-hoc input's ids come from its file name
    assert "mcp:mcp-server-time:get_current_time" in ids


def test_list_takes_a_project_file_or_a_document_as_config(tmp_path: Path) -> None:
    shutil.copy(PARAMS, tmp_path / "params.yaml")
    (tmp_path / "project.yaml").write_text("openapi:\n  - path: params.yaml\n")
    by_project = run_toolc("list", "-c", tmp_path / "project.yaml", "--json")
    by_document = run_toolc("list", "-c", PARAMS, "--json")
    assert by_project.exit_code == by_document.exit_code == 0, by_project.stderr + by_document.stderr
    assert json.loads(by_project.stdout) == json.loads(by_document.stdout)


def test_explain_and_check_take_paths(tmp_path: Path) -> None:
    explained = run_toolc("explain", "getPet", PARAMS, "-p", "claude", "--json")
    assert explained.exit_code == 0, explained.stderr
    assert json.loads(explained.stdout)["tool"] == "openapi:params:getPet"
    out = tmp_path / "out"
    assert run_toolc("compile", PARAMS, "--out", out, "--no-codegen").exit_code == 0
    assert run_toolc("check", PARAMS, "--out", out).exit_code == 1  # check generates code: python/ is missing
    assert run_toolc("compile", PARAMS, "--out", out).exit_code == 0
    checked = run_toolc("check", PARAMS, "--out", out)
    assert checked.exit_code == 0, checked.output
    assert run_toolc("check", PARAMS).exit_code == 2  # PATHs need --out


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_imports_run_one_way() -> None:
    """Only `cli.py` and `compiler/commands/` may import a command; the stages never import the pipeline."""
    package = ROOT / "compiler"
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("commands/") or relative in ("cli.py", "__main__.py"):
            continue
        upward = {name for name in _imports(path)
                  if name.startswith(("compiler.commands", "compiler.cli"))
                  or (name == "compiler.pipeline" and relative != "pipeline.py")}
        assert not upward, f"compiler/{relative} imports {sorted(upward)} against the pipeline's direction"
