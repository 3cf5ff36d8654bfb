"""The router's optional parts (`router: {serve, postgres, codemode}`): a package holds only the parts its project file asks
for, still type-checks and calls tools without them, and says which setting to turn on where a missing part is
asked for (`toolc serve`: TC682; `TOOLC_AUDIT_DSN`: the router refuses to start)."""

from __future__ import annotations

import ast
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.codegen.router.parts import PART_FILES, included_parts
from compiler.config import AuditConfig, Config, RouterConfig, config_from_data
from compiler.infra.diagnostics import CompilerError
from tests.router.test_import_graph import graph
from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES, ROOT
from tests.support.router import load_router, make_build, write_router

VENV_BIN = Path(sys.executable).parent
LEAN = FIXTURES / "projects" / "lean" / "toolc.yaml"
OPTIONAL = frozenset(name for files in PART_FILES.values() for name in files)
FLEET_DSN = "host=127.0.0.1 dbname=audit user=toolc"


def compile_lean(folder: Path, **router: bool) -> Path:
    """The lean fixture project compiled into `folder` (its time server run by this interpreter); its package."""
    data = yaml.safe_load(LEAN.read_text())
    server = data["mcp_servers"][0]
    server["command"] = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    server["recording"] = str((LEAN.parent / server["recording"]).resolve())
    data["router"].update(router)
    project = folder / "toolc.yaml"
    project.write_text(yaml.safe_dump(data))
    result = run_toolc("compile", "-c", project)
    assert result.exit_code == 0, result.stderr
    return folder / "out" / "python" / "toolc_router"


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_lean(tmp_path_factory.mktemp("lean"))


def local_imports(package: Path) -> set[str]:
    found: set[str] = set()
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_serve_is_on_and_postgres_follows_audit_dsn_by_default() -> None:
    assert included_parts(Config()) == {"serve", "codemode"}
    assert included_parts(Config(audit=AuditConfig(dsn="${AUDIT_DSN}"))) == {"serve", "postgres", "codemode"}
    assert included_parts(Config(router=RouterConfig(serve=False, postgres=True, codemode=False))) == {"postgres"}
    fleet = {"rate_limits": {"rules": [{"calls": 100, "fleet": True}]}}
    assert included_parts(config_from_data({"gateway": fleet}, root=ROOT, source="toolc.yaml")) == {
        "serve", "postgres", "codemode"}


def test_postgres_off_with_an_audit_dsn_is_a_project_file_error() -> None:
    with pytest.raises(CompilerError) as caught:
        config_from_data({"audit": {"dsn": "${AUDIT_DSN}"}, "router": {"postgres": False}}, root=ROOT,
                         source="toolc.yaml")
    [diagnostic] = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.pointer) == ("TC110", "/router")
    assert "router.postgres is false but audit.dsn needs PostgreSQL" in diagnostic.message
    with pytest.raises(CompilerError) as fleet:
        config_from_data({"gateway": {"rate_limits": {"rules": [{"calls": 100, "fleet": True}]}},
                          "router": {"postgres": False}}, root=ROOT, source="toolc.yaml")
    assert "a `fleet: true` rate limit needs PostgreSQL" in fleet.value.diagnostics[0].message
    with pytest.raises(CompilerError) as typo:
        config_from_data({"router": {"postgre": True}}, root=ROOT, source="toolc.yaml")
    assert "did you mean 'postgres'?" in typo.value.diagnostics[0].message


def test_a_lean_package_holds_neither_part_nor_what_they_need(lean: Path) -> None:
    present = {path.name for path in lean.iterdir()}
    assert present & OPTIONAL == set()
    assert {"router.py", "audit.py", "_parts.py", "requirements.txt"} <= present
    assert "from .audit import configured_dsn, configured_sink" in (lean / "_parts.py").read_text()
    assert local_imports(lean) <= {path.stem for path in lean.glob("*.py")}  # nothing imports a missing module
    example = (lean / ".env.example").read_text()
    assert "TOOLC_AUDIT_DB" in example
    assert "TOOLC_AUDIT_DSN" not in example and "TOOLC_SERVE_TOKEN" not in example


def test_the_default_project_holds_every_part() -> None:
    package = ROOT / "generated" / "python" / "toolc_router"
    assert {name for name in OPTIONAL} <= {path.name for path in package.iterdir()}
    assert "from .audit_pg import configured_dsn, configured_sink" in (package / "_parts.py").read_text()


def test_only_parts_import_their_own_modules() -> None:
    """Outside `_parts` (the one choice point), no module imports an optional part's module but the part itself."""
    edges = graph()
    for part, files in PART_FILES.items():
        modules = {name.removesuffix(".py") for name in files if name.endswith(".py")}
        importers = {source for source, targets in edges.items() if targets & modules}
        assert importers - modules - {"_parts"} == set(), part


def test_a_lean_package_passes_mypy_strict(lean: Path) -> None:
    run = subprocess.run([str(VENV_BIN / "mypy"), "--strict", "--no-incremental", "--cache-dir", os.devnull,
                          "--python-executable", sys.executable, "-p", "toolc_router"],
                         cwd=lean.parent, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.servers
async def test_a_lean_package_calls_tools_audited_to_sqlite(lean: Path, tmp_path: Path) -> None:
    with load_router(lean.parent) as rt:
        router = rt.Router(environ={**os.environ, "TOOLC_AUDIT_DB": str(tmp_path / "audit.db")})
        assert isinstance(router.audit, rt.SqliteAuditSink)
        result = await router.call_tool("mcp:time:get_current_time", {"timezone": "UTC"},
                                        context=rt.InvocationContext())
        await router.aclose()
    assert not result.is_error, result.error
    assert result.structured["timezone"] == "UTC"
    with sqlite3.connect(tmp_path / "audit.db") as connection:
        events = [row[0] for row in connection.execute("SELECT event_type FROM task_audits ORDER BY id")]
    assert events == ["policy_decision", "tool_invocation_start", "tool_invocation_end"]


def test_a_fleet_dsn_without_postgres_refuses_to_start_the_router(lean: Path, tmp_path: Path) -> None:
    with load_router(lean.parent) as rt:
        with pytest.raises(rt.RouterError, match=r"TOOLC_AUDIT_DSN is set, but .* `router: \{postgres: true\}`"):
            rt.Router(environ={"TOOLC_AUDIT_DSN": FLEET_DSN, "TOOLC_AUDIT_DB": str(tmp_path / "audit.db")})
        assert not (tmp_path / "audit.db").exists()  # no silent SQLite trail instead
        empty = rt.Router(environ={"TOOLC_AUDIT_DSN": "", "TOOLC_AUDIT_DB": str(tmp_path / "audit.db")})
        assert isinstance(empty.audit, rt.SqliteAuditSink)  # an empty variable is an unset one, as with PostgreSQL


def test_a_package_with_postgres_takes_the_fleet_dsn(tmp_path: Path) -> None:
    folder = write_router(make_build(router={"postgres": True}), tmp_path / "gen")
    with load_router(folder) as rt:
        router = rt.Router(environ={"TOOLC_AUDIT_DSN": FLEET_DSN})
        assert isinstance(router.audit, rt.audit_pg.PostgresAuditSink)
        router.audit.close()


def test_toolc_serve_names_the_setting_when_the_server_was_left_out(lean: Path) -> None:
    project = lean.parents[2] / "toolc.yaml"
    result = run_toolc("serve", "-c", project)
    assert result.exit_code == 1 and "error[TC682]" in result.stderr, result.stderr
    assert "router: {serve: true}" in result.stderr and "Traceback" not in result.stderr


def test_toolc_serve_refuses_a_fleet_dsn_its_package_cannot_write(tmp_path: Path) -> None:
    package = compile_lean(tmp_path, serve=True)
    assert (package / "serve.py").is_file() and not (package / "audit_pg.py").exists()
    env = {**os.environ, "TOOLC_AUDIT_DSN": FLEET_DSN}
    run = subprocess.run([str(VENV_BIN / "toolc"), "serve", "-c", str(tmp_path / "toolc.yaml")], env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "router: {postgres: true}" in run.stderr and "Traceback" not in run.stderr


def test_toolc_serve_names_the_setting_when_code_mode_was_left_out(tmp_path: Path) -> None:
    package = compile_lean(tmp_path, serve=True)
    assert (package / "serve_codemode.py").is_file() and not (package / "codemode.py").exists()
    run = subprocess.run([str(VENV_BIN / "toolc"), "serve", "-c", str(tmp_path / "toolc.yaml"), "--code-mode"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "compiled without code mode" in run.stderr and "router: {codemode: true}" in run.stderr
    assert "Traceback" not in run.stderr
