"""The generated router for the default fixtures is lint-clean, type-clean and stands alone (no `compiler`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.codegen.env import templates_dir
from tests.support.paths import ROOT
from tests.support.router import TIME_SERVER, make_build, with_name_maps, write_router

VENV_BIN = Path(sys.executable).parent
# Three rule sets: ruff's own defaults (which include BLE001 and TRY004 since ruff 0.17), the project's own
# configuration (pyproject.toml; its RUF100 reports suppressions its rules do not need), and both at once.
RUFF_RUNS = {
    "defaults": ["--isolated"],
    "project": ["--config", str(ROOT / "pyproject.toml")],
    "both": ["--isolated", "--extend-select", "E,F,W,I,B,UP,SIM,RUF,BLE", "--ignore", "E501", "--target-version",
             "py311"],
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # With the real name maps: their shapes are literals in `_tables.py` that mypy checks too.
    return write_router(with_name_maps(make_build(servers=[TIME_SERVER])), tmp_path_factory.mktemp("generated"))


@pytest.mark.parametrize("rules", sorted(RUFF_RUNS))
def test_generated_router_passes_ruff(generated: Path, rules: str) -> None:
    run = subprocess.run([str(VENV_BIN / "ruff"), "check", *RUFF_RUNS[rules], "toolc_router"],
                         cwd=generated, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "noqa" not in "".join(p.read_text() for p in (generated / "toolc_router").glob("*.py"))


def test_generated_router_passes_mypy_strict(generated: Path) -> None:
    run = subprocess.run([str(VENV_BIN / "mypy"), "--strict", "--no-incremental", "--python-executable", sys.executable,
                          "-p", "toolc_router"], cwd=generated, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_generated_router_imports_without_compiler(generated: Path) -> None:
    # `sys.modules["compiler"] = None` makes any `import compiler...` fail, even though toolc is installed.
    script = (
        "import sys\n"
        "sys.modules['compiler'] = None\n"
        "import toolc_router\n"
        "from toolc_router import call_tool, InvocationContext, ToolResult\n"
        "from toolc_router._tables import TOOLS\n"
        "import toolc_router.serve, toolc_router.serve_http  # the server stands alone too\n"
        "assert 'mcp:mcp-server-time:get_current_time' in TOOLS\n"
        "assert not [m for m, v in sys.modules.items() if m.startswith('compiler') and v is not None]\n"
        "print(len(TOOLS))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", script], cwd=generated, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) > 30


def test_templates_live_in_the_shipped_package() -> None:
    shipped = templates_dir()  # where the installed package's importlib.resources put them, not the checkout
    assert (shipped / "router" / "_tables.py.jinja").is_file()
    assert (shipped / "stubs" / "tools.py.jinja").is_file()
