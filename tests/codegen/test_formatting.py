"""Generated Python goes through the pinned ruff formatter (`codegen.formatting`): stable, isolated from the
caller's ruff config, and a formatter that cannot run is a TC638 diagnostic, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler.codegen import formatting
from compiler.codegen.formatting import FORMAT_FAILED, RUFF_TOML, format_python
from compiler.codegen.python import emit_python
from tests.support.cli import run_toolc
from tests.support.codegen import RECORDINGS, ROOT, build_from_files

UGLY = b"x = {'a':1,\n 'b' : [1,2,3]}\ndef f( a ):\n  return a\n"


def test_python_files_are_formatted_and_other_files_kept() -> None:
    files = {"pkg/mod.py": UGLY, "pkg/data.json": b"{'a':1}", "pkg/py.typed": b""}
    out = format_python(files)
    assert out["pkg/mod.py"] == b'x = {"a": 1, "b": [1, 2, 3]}\n\n\ndef f(a):\n    return a\n'
    assert out["pkg/data.json"] == files["pkg/data.json"] and out["pkg/py.typed"] == b""
    assert format_python(out) == out  # idempotent: formatting formatted output changes nothing


@pytest.mark.parametrize("folder", ["dist", "venv", "node_modules", "_build", ".venv"])
def test_a_package_in_a_folder_ruff_excludes_by_default_is_formatted(folder: str) -> None:
    # A source named `dist` gives the package `dist/`; ruff's default excludes would leave it unformatted.
    out = format_python({f"{folder}/mod.py": UGLY, "pkg/mod.py": UGLY})
    assert out[f"{folder}/mod.py"] == out["pkg/mod.py"] != UGLY


def test_the_callers_ruff_config_does_not_change_the_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = format_python({"m.py": UGLY})
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 40\n[tool.ruff.format]\nquote-style = "single"\n')
    monkeypatch.chdir(tmp_path)
    assert format_python({"m.py": UGLY}) == expected


def test_the_settings_file_matches_what_the_formatter_runs_with(tmp_path: Path) -> None:
    # A file formatted in-process passes `ruff format --check` under the python/ruff.toml written beside it.
    (tmp_path / "ruff.toml").write_bytes(RUFF_TOML)
    long_def = b"def f(" + b", ".join(b"a%d" % i for i in range(20)) + b"): pass\n"
    (tmp_path / "m.py").write_bytes(format_python({"m.py": long_def})["m.py"])
    result = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_formatter_that_cannot_run_is_a_diagnostic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(formatting, "ruff_binary", lambda: str(tmp_path / "no-such-ruff"))
    build = build_from_files(RECORDINGS[:1])
    assert emit_python(build) is None
    failed = [d for d in build.diagnostics if d.code == FORMAT_FAILED]
    assert failed and build.diagnostics.has_errors
    assert not [path for path in build.files if path.startswith("python/")]


def test_ruff_run_on_the_output_passes_and_its_cache_is_not_drift(tmp_path: Path) -> None:
    # ruff writes `.ruff_cache` beside its nearest config, python/ruff.toml: `toolc check` must not call that drift.
    params, out = ROOT / "fixtures" / "openapi" / "params.yaml", tmp_path / "out"
    assert run_toolc("compile", params, "--out", out).exit_code == 0
    formatted = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "."], cwd=out / "python",
                               capture_output=True, text=True)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    assert (out / "python" / ".ruff_cache").is_dir()
    checked = run_toolc("check", params, "--out", out)
    assert checked.exit_code == 0, checked.output
