"""`toolc check` against a scratch project: the lock, file drift, classification, formats and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from compiler.cli import main
from compiler.codegen import cache
from compiler.codegen import python as emit
from compiler.config import load_config
from compiler.drift.check import check_build, refresh_command
from compiler.drift.lock import LOCK_FILE, lock_data, parse_lock
from compiler.incremental import identity
from compiler.infra.diagnostics import CompilerError, Diagnostics
from compiler.pipeline import compile_project
from tests.support.paths import ROOT

MCP = ROOT / "fixtures" / "drift" / "mcp"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(MCP / "server-filesystem@2025.7.1.json", tmp_path / "fs.json")
    (tmp_path / "toolc.yaml").write_text("output: out\nrecordings:\n  - id: fs\n    path: fs.json\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["compile"])
    assert result.exit_code == 0, result.output
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_lock_is_the_last_stage_and_lives_in_the_output(project: Path) -> None:
    lock = parse_lock((project / "out" / LOCK_FILE).read_bytes(), source=LOCK_FILE)
    build = compile_project(load_config(project / "toolc.yaml"))
    assert build.lock == lock == lock_data(build.catalog, build.providers)  # hashes exactly what was handed on
    assert set(lock) == {"format", "tools"}, "the lock holds only what drift means: no cache, no fingerprint"
    assert set(lock["tools"]) == {t["id"] for t in json.loads((project / "out" / "catalog.json").read_bytes())["tools"]}
    entry = lock["tools"]["mcp:fs:read_file"]
    assert entry["ir"].startswith("sha256:") and len(entry["ir"]) == 71
    assert set(entry.get("providers", {})) <= {"openai-chat", "openai-responses", "anthropic", "gemini"}


def test_lock_is_deterministic_and_ignores_key_order(project: Path) -> None:
    first = (project / "out" / LOCK_FILE).read_bytes()
    listing = json.loads((project / "fs.json").read_text())
    for page in listing["tools_list_pages"]:
        for tool in page["tools"]:
            tool["inputSchema"] = dict(reversed(list(tool["inputSchema"].items())))
    (project / "fs.json").write_text(json.dumps(listing, indent=3))
    build = compile_project(load_config(project / "toolc.yaml"))
    assert build.files[LOCK_FILE] == first


def test_upgrading_toolc_leaves_check_green(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new toolc (simulated: its generator's identity and toolc's own change, as a one-line comment in
    codegen/env.py would) regenerates the code, gets the same bytes, and an unchanged project stays green; only
    the caches go stale (the project record, written by another toolc, no longer proves anything)."""
    cached = cache.cache_file(project / "out")
    assert cached.is_file() and not cached.is_relative_to(project / "out")
    assert (cached.parent / ".gitignore").read_text().splitlines()[-1] == "*"
    lock_before = (project / "out" / LOCK_FILE).read_bytes()
    monkeypatch.setattr(cache, "generator_identity", lambda: "toolc-next-version")
    monkeypatch.setattr(identity, "toolc_identity", lambda: "toolc-next-version")
    regenerated: list[str] = []
    real_record = cache.record
    monkeypatch.setattr(emit, "record", lambda key, *args: regenerated.append(key) or real_record(key, *args))
    result = run("check")
    assert result.exit_code == 0, result.output
    assert "0 changes" in result.output
    assert regenerated, "the stale cache must not be trusted: the code was generated again"
    assert (project / "out" / LOCK_FILE).read_bytes() == lock_before


def test_a_new_toolc_copy_with_an_edited_source_file_checks_green(project: Path, tmp_path: Path) -> None:
    """The real thing, not a monkeypatch: a copy of toolc whose `codegen/env.py` gained a comment (what any upgrade
    does to the generator's fingerprint) runs `toolc check` on the project the installed toolc compiled."""
    copy = tmp_path / "toolc-next"
    shutil.copytree(ROOT / "compiler", copy / "compiler", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", copy / "compiler" / "templates", ignore=shutil.ignore_patterns("__pycache__"))
    env_py = copy / "compiler" / "codegen" / "env.py"
    env_py.write_text(env_py.read_text() + "# toolc-next: a comment is enough to change the fingerprint\n")
    # -S: no site hooks, so the editable install's finder cannot bring the original package back.
    path = os.pathsep.join([str(copy), *site.getsitepackages()])
    probe = ("import compiler.codegen.cache as c; print(c.__file__); print(c.generator_identity())")
    found = subprocess.run([sys.executable, "-S", "-c", probe], env={**os.environ, "PYTHONPATH": path},
                           capture_output=True, text=True, check=True).stdout.split()
    assert found[0].startswith(str(copy)) and found[1] != cache.generator_identity()
    checked = subprocess.run([sys.executable, "-S", "-m", "compiler", "check"], cwd=project,
                             env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 changes" in checked.stdout


def test_a_missing_or_broken_cache_only_costs_time(project: Path) -> None:
    cached = cache.cache_file(project / "out")
    cached.write_text("{ not json")
    assert run("check").exit_code == 0
    cached.unlink()
    assert run("check").exit_code == 0


def test_bad_lock_is_a_diagnostic() -> None:
    with pytest.raises(CompilerError) as caught:
        parse_lock(b"{]", source="out/toolc.lock")
    assert caught.value.diagnostic.code == "TC702"


def test_check_passes_when_nothing_changed(project: Path) -> None:
    result = run("check")
    assert result.exit_code == 0, result.output
    assert "0 changes" in result.output


def test_check_fails_on_a_breaking_change_and_names_the_fix(project: Path) -> None:
    listing = json.loads((project / "fs.json").read_text())
    tools = listing["tools_list_pages"][0]["tools"]
    listing["tools_list_pages"][0]["tools"] = [t for t in tools if t["name"] != "move_file"]
    (project / "fs.json").write_text(json.dumps(listing))
    result = run("check")
    assert result.exit_code == 1
    assert "ERR  mcp:fs:move_file [tool-removed]" in result.output
    assert "run `toolc compile` to refresh the output" in result.output
    assert "changed  catalog.json" in result.output


def test_additions_fail_only_through_stale_files(project: Path) -> None:
    shutil.copy(MCP / "server-filesystem@2026.8.31.json", project / "fs.json")
    result = run("check", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["summary"]["worst"] == "WARN"
    assert data["summary"]["files"]["catalog.json"] == "changed"
    assert {c["change"] for c in data["changes"]} >= {"tool-added", "output-schema-added", "input-constraint-set"}
    # Once compiled, the same project is clean again.
    assert run("compile").exit_code == 0
    assert run("check", "--fail-on", "INFO").exit_code == 0


def test_hand_edited_output_is_drift(project: Path) -> None:
    target = project / "out" / "catalog.json"
    target.write_bytes(target.read_bytes() + b"\n")
    (project / "out" / "stray.txt").write_text("x")
    result = run("check", "--format", "github")
    assert result.exit_code == 1
    assert "::error file=catalog.json,title=toolc drift::catalog.json is changed" in result.output
    assert "stray.txt is extra" in result.output


def test_provider_only_change_is_reported(project: Path) -> None:
    build = compile_project(load_config(project / "toolc.yaml"), out_dir=project / "out")
    lock = json.loads(build.previous_output[LOCK_FILE])
    entry = lock["tools"]["mcp:fs:read_file"]
    if not entry.get("providers"):
        pytest.skip("no provider targets compiled")
    target = sorted(entry["providers"])[0]
    entry["providers"][target] = "sha256:" + "0" * 64
    build.previous_output[LOCK_FILE] = json.dumps(lock).encode()
    report = check_build(build, where="out", refresh="toolc compile", diagnostics=Diagnostics())
    assert [(c.tool, c.change, c.pointer) for c in report.changes] == [
        ("mcp:fs:read_file", "provider-output-changed", f"/providers/{target}")]
    assert report.files == {LOCK_FILE: "changed"}


def test_without_catalog_changes_are_listed_unclassified(project: Path) -> None:
    (project / "out" / "catalog.json").unlink()
    listing = json.loads((project / "fs.json").read_text())
    listing["tools_list_pages"][0]["tools"][0]["description"] = "changed"
    (project / "fs.json").write_text(json.dumps(listing))
    build = compile_project(load_config(project / "toolc.yaml"), out_dir=project / "out")
    diagnostics = Diagnostics()
    report = check_build(build, where="out", refresh="toolc compile", diagnostics=diagnostics)
    assert "TC703" in diagnostics.codes()
    assert [c.change for c in report.changes] == ["tool-changed"]


def test_never_compiled_project(project: Path) -> None:
    shutil.rmtree(project / "out")
    result = run("check", "--format", "markdown")
    assert result.exit_code == 1
    assert "TC701" in result.output
    assert "> missing  catalog.json" in result.output and "> drift:" in result.output


def test_a_project_that_no_longer_compiles_is_compared_with_nothing(project: Path) -> None:
    (project / "fs.json").write_text('{"tools": [{"name": "read"}], "tools_list_pages": 3}')
    result = run("check")
    assert result.exit_code == 1
    assert "toolc: error[TC704]: toolc.yaml failed to compile; nothing compared" in result.output


def test_refresh_command_for_live_projects() -> None:
    assert refresh_command(live=False, config_arg=None) == "toolc compile"
    assert refresh_command(live=True, config_arg="p.yaml") == "toolc record -c p.yaml && toolc compile -c p.yaml"


@pytest.mark.parametrize("part, value", [("annotations", [1]), ("annotations", "x")])
def test_a_catalog_json_with_a_part_of_the_wrong_shape_is_a_diagnostic(project: Path, part: str, value: object) -> None:
    """A damaged or hand-edited catalog.json (a tool's annotations not an object) is reported as unreadable, never a
    traceback (its reader shares objects through `.items()`, which raised AttributeError past the check)."""
    catalog = project / "out" / "catalog.json"
    data = json.loads(catalog.read_bytes())
    data["tools"][0][part] = value
    catalog.write_text(json.dumps(data))
    listing = json.loads((project / "fs.json").read_text())
    listing["tools_list_pages"][0]["tools"].pop()  # a change: the old catalog is read to classify it
    (project / "fs.json").write_text(json.dumps(listing))
    result = run("check")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "catalog.json is unreadable (TypeError)" in result.output
