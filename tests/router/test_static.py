"""The router's static modules: real files in `templates/router/static/` (plus the shared `compiler/providers/`
modules, `shapes.py` and `ranking.py`),
clean under ruff and mypy where they live, copied byte for byte into every router, and stable under toolc's
formatter. `_tables.pyi`, their typed stand-in for the one generated module, declares what `_tables.py` defines."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.codegen.formatting import LINE_LENGTH, TARGET_VERSION, format_python
from compiler.codegen.router.router_package import PACKAGE, SHARED_MODULES, generate_router, static_files
from tests.support.paths import ROOT
from tests.support.router import make_build

STATIC = ROOT / "templates" / "router" / "static"
GOLDEN = ROOT / "generated" / "python" / PACKAGE
SHARED = [f"compiler/providers/{name}" for name in SHARED_MODULES]
VENV_BIN = Path(sys.executable).parent
# ruff's own defaults, the project's rules (through the folder's ruff.toml, which extends pyproject.toml), and
# every rule the generated code is held to at once (tests/router/test_generated.py).
RUFF_RUNS = {
    "defaults": ["--isolated"],
    "project": [],
    "both": ["--isolated", "--extend-select", "E,F,W,I,B,UP,SIM,RUF,BLE", "--ignore", "E501", "--target-version",
             "py311"],
}


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "ruff"), *args], cwd=ROOT, capture_output=True, text=True)


def test_every_router_module_but_tables_is_a_static_file() -> None:
    templates = sorted(p.name for p in (ROOT / "templates" / "router").iterdir() if p.is_file())
    assert templates == ["_tables.py.jinja"]
    files = static_files()
    assert {"__init__.py", "router.py", "providers.py", "shapes.py", "ranking.py", "stubs.py",
            "requirements.txt"} <= set(files)
    for name, path in files.items():
        text = path.read_text()
        assert "{{" not in text and "{%" not in text, name  # no template syntax left to render
    assert "_tables.py" not in files and "_tables.pyi" not in files and "ruff.toml" not in files


def test_generated_static_modules_are_byte_identical_to_the_repository_files() -> None:
    build = make_build()
    files = generate_router(build)
    assert files, [d.render() for d in build.diagnostics]
    for name, path in static_files().items():
        assert files[f"{PACKAGE}/{name}"] == path.read_bytes(), name
    # The committed golden record (after toolc's formatter ran): the same bytes.
    for name, path in static_files().items():
        assert (GOLDEN / name).read_bytes() == path.read_bytes(), name
    generated = {p.name for p in GOLDEN.iterdir() if p.is_file()}
    assert generated - set(static_files()) == {"_tables.py", "_tables.json", "py.typed", "_schemas.json",
                                               "_catalog.json", "_serve.json", ".env.example"}


def test_the_formatter_leaves_static_modules_unchanged() -> None:
    sources = {name: path.read_bytes() for name, path in static_files().items() if name.endswith(".py")}
    assert format_python(sources) == sources


def test_static_modules_are_ruff_formatted_in_the_repository() -> None:
    run = _ruff("format", "--check", "--no-cache", str(STATIC))
    assert run.returncode == 0, run.stdout + run.stderr
    # The shared modules sit among the compiler's (110 columns): held to the generated code's settings instead.
    run = _ruff("format", "--check", "--no-cache", "--isolated", f"--line-length={LINE_LENGTH}",
                f"--target-version={TARGET_VERSION}", *SHARED)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("rules", sorted(RUFF_RUNS))
def test_static_modules_pass_ruff(rules: str) -> None:
    run = _ruff("check", "--no-cache", *RUFF_RUNS[rules], str(STATIC), *SHARED)
    assert run.returncode == 0, run.stdout + run.stderr


def test_static_modules_pass_mypy_strict_in_the_repository() -> None:
    run = subprocess.run([str(VENV_BIN / "mypy"), "--strict", "--no-incremental", "--cache-dir", "/dev/null",
                          "--python-executable", sys.executable, str(STATIC)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _declared(tree: ast.Module) -> dict[str, str]:
    """Public module-level names → their declared type (`Final` alone: the type of the call it is bound to)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            annotation = ast.unparse(node.annotation)
            if annotation == "Final" and isinstance(node.value, ast.Call):
                annotation = f"Final[{ast.unparse(node.value.func)}]"
            if not name.startswith("_"):
                names[name] = annotation
        elif isinstance(node, ast.Assign):
            names.update({t.id: "?" for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_")})
    return names


def _generated_tables() -> list[str]:
    fresh = generate_router(make_build())[f"{PACKAGE}/_tables.py"].decode()
    return [fresh, (GOLDEN / "_tables.py").read_text()]


@pytest.mark.parametrize("which", ["fresh", "golden"])
def test_the_tables_stand_in_declares_what_a_generated_tables_module_defines(which: str) -> None:
    source = _generated_tables()[0 if which == "fresh" else 1]
    stand_in = _declared(ast.parse((STATIC / "_tables.pyi").read_text()))
    assert stand_in == _declared(ast.parse(source))
    assert "?" not in stand_in.values()


def test_the_name_map_rules_are_written_once() -> None:
    """`shapes.py` is the one implementation: no static module defines a function of the same name again."""
    shared = {node.name for node in ast.parse(static_files()["shapes.py"].read_text()).body
              if isinstance(node, ast.FunctionDef)}
    assert {"rewrite", "_restore", "_fits"} <= shared
    for name, path in static_files().items():
        if name.endswith(".py") and name != "shapes.py":
            defined = {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}
            assert not defined & shared, (name, defined & shared)
    namemap = ast.parse((ROOT / "compiler" / "providers" / "namemap.py").read_text())
    assert not shared & {node.name for node in ast.walk(namemap) if isinstance(node, ast.FunctionDef)}


def test_a_changed_static_module_invalidates_the_codegen_cache(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache fingerprints the generator's own files: the copied modules are among them, wherever they live."""
    from compiler.codegen import cache

    copies = {name: tmp_path / name for name in static_files()}
    for name, path in static_files().items():
        copies[name].write_bytes(path.read_bytes())
    monkeypatch.setattr(cache, "static_files", lambda: copies)
    before = cache.generator_identity.__wrapped__()
    copies["shapes.py"].write_bytes(copies["shapes.py"].read_bytes() + b"# changed\n")
    assert cache.generator_identity.__wrapped__() != before
