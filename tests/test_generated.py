"""The committed golden record `generated/` is code people commit: it must lint, type-check strictly and import
where the compiler is not installed. (That it is up to date is `commands/test_compile.py`'s golden-record test.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

PYTHON_OUT = ROOT / "generated" / "python"
PACKAGES = sorted(p.name for p in PYTHON_OUT.iterdir() if (p / "__init__.py").exists())


def test_the_default_project_generates_a_router_and_one_package_per_source() -> None:
    assert "toolc_router" in PACKAGES
    assert {"time_", "everything", "petstore", "params"} <= set(PACKAGES)


def test_ruff_check_passes_on_generated_code() -> None:
    # ruff's own defaults (what a user's `ruff check` applies to code they commit), plus whitespace and imports.
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--extend-select",
                             "W,I", str(PYTHON_OUT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_with_the_project_config_passes_on_generated_code() -> None:
    # This repository's own rule set, forced onto generated/ (its pyproject excludes the folder from plain runs).
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                             "--select", "E,F,W,I,B,UP,SIM,RUF", "--ignore", "E501", str(PYTHON_OUT)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_code_is_stable_under_ruff_format() -> None:
    # Both as a user with no ruff config runs it and as it runs here (python/ruff.toml is the nearest config).
    for extra in (["--isolated"], []):
        result = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", *extra,
                                 str(PYTHON_OUT)], capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "already formatted" in result.stdout


def test_models_have_no_stray_root_model_and_short_provenance() -> None:
    for path in sorted(PYTHON_OUT.glob("*/*.py")):
        text = path.read_text()
        assert "class Model(RootModel" not in text, path
        for line in text.splitlines():
            if "sha256:" in line:
                assert len(line) <= 88, (path, line)


def test_mypy_strict_passes_on_generated_code() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir=/dev/null",
                             *PACKAGES], capture_output=True, text=True, cwd=PYTHON_OUT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_packages_import_without_the_compiler() -> None:
    script = textwrap.dedent(f"""
        import importlib, sys
        sys.modules["compiler"] = None  # any `import compiler` now fails
        sys.path.insert(0, {str(PYTHON_OUT)!r})
        for name in {PACKAGES!r}:
            importlib.import_module(name)
        leaked = [m for m in sys.modules if m == "compiler" or m.startswith("compiler.")]
        assert leaked == ["compiler"], leaked
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, cwd="/")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
