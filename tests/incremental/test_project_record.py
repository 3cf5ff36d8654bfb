"""The project record (`compiler.incremental.project`): `toolc check` proves an unchanged project without
compiling, and anything that could change the output (an input, a `$ref`ed file, the project file, an output
file, toolc itself) sends it back to the full check. A corrupted or foreign record is ignored with a note."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from compiler.cli import main
from compiler.commands import check as check_command
from compiler.config import load_config
from compiler.incremental import identity, project, store
from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.pipeline import check_targets
from tests.support.paths import ROOT

MULTIFILE = ROOT / "fixtures" / "openapi" / "multifile"


@pytest.fixture
def compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of several files (the document `$ref`s files in sub-folders), compiled without stubs."""
    shutil.copytree(MULTIFILE, tmp_path / "api")
    (tmp_path / "toolc.yaml").write_text("output: out\ncodegen: false\nopenapi:\n  - id: pets\n    path: api/openapi.yaml\n")
    monkeypatch.chdir(tmp_path)
    result = run("compile", "-q")
    assert result.exit_code == 0, result.output
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def compiles(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Counts the compiles `toolc check` runs."""
    seen: list[bool] = []
    real = check_command.compile_project
    monkeypatch.setattr(check_command, "compile_project", lambda *a, **k: seen.append(True) or real(*a, **k))
    return seen


def prove(root: Path) -> tuple[project.ProjectRecord | None, Diagnostics]:
    config = load_config(root / "toolc.yaml")
    diagnostics = Diagnostics()
    return project.prove_unchanged(config, None, check_targets(config.targets, Diagnostics()), config.output_dir,
                                   diagnostics), diagnostics


def test_an_unchanged_project_is_checked_without_compiling(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_file = store.cache_path(compiled / "out", project.KIND)
    assert record_file.is_file() and not record_file.is_relative_to(compiled / "out")
    reads = orjson.loads(record_file.read_bytes())["payload"]["reads"]
    assert any(path.endswith("openapi.yaml") for path in reads)
    assert any("/schemas/" in path for path in reads), "files the document `$ref`s are part of the proof"
    seen = compiles(monkeypatch)
    result = run("check")
    assert result.exit_code == 0, result.output
    assert "0 changes" in result.output and not seen


@pytest.mark.parametrize("edit", ["document", "referenced file", "project file"])
def test_any_changed_input_is_compiled_and_its_drift_found(compiled: Path, monkeypatch: pytest.MonkeyPatch,
                                                           edit: str) -> None:
    if edit == "document":
        path = compiled / "api" / "openapi.yaml"
        path.write_text(path.read_text().replace("title:", "title: Renamed", 1))
    elif edit == "referenced file":
        path = next((compiled / "api" / "schemas").glob("*.yaml"))
        path.write_text(path.read_text() + "description: a new description\n")
    else:
        (compiled / "toolc.yaml").write_text((compiled / "toolc.yaml").read_text() + "targets: [anthropic]\n")
    seen = compiles(monkeypatch)
    result = run("check")
    assert seen, "a changed input must be compiled"
    assert result.exit_code == 1 and "changed" in result.output and "failed to compile" not in result.output, \
        result.output


def test_an_edited_output_file_is_not_proved_current(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = compiled / "out" / "catalog.json"
    catalog.write_bytes(catalog.read_bytes() + b"\n")
    seen = compiles(monkeypatch)
    result = run("check")
    assert seen and result.exit_code == 1, result.output
    assert "catalog.json" in result.output


def test_an_extra_output_file_is_not_proved_current(compiled: Path) -> None:
    (compiled / "out" / "stray.txt").write_text("not toolc's")
    assert prove(compiled)[0] is None
    assert run("check").exit_code == 1


@pytest.mark.parametrize("damage", ["not json", "truncated", "wrong shape", "other format"])
def test_a_corrupted_record_is_ignored_with_a_note(compiled: Path, monkeypatch: pytest.MonkeyPatch,
                                                   damage: str) -> None:
    record_file = store.cache_path(compiled / "out", project.KIND)
    raw = record_file.read_bytes()
    data = orjson.loads(raw)
    if damage == "not json":
        record_file.write_bytes(b"\x00\xff garbage")
    elif damage == "truncated":
        record_file.write_bytes(raw[: len(raw) // 2])
    elif damage == "wrong shape":
        data["payload"]["outputs"] = ["catalog.json"]
        record_file.write_bytes(orjson.dumps(data))
    else:
        data["format"] = 99
        record_file.write_bytes(orjson.dumps(data))
    record, diagnostics = prove(compiled)
    assert record is None
    notes = [d for d in diagnostics if d.code == store.CACHE_IGNORED]
    assert len(notes) == 1 and notes[0].severity is Severity.INFO and notes[0].source == str(record_file)
    seen = compiles(monkeypatch)
    result = run("check")
    assert seen and result.exit_code == 0, result.output


def test_a_record_from_another_toolc_is_not_trusted(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record names the toolc that wrote it; a new toolc (another identity) compiles instead of trusting it."""
    monkeypatch.setattr(identity, "toolc_identity", lambda: "sha256:another-toolc")
    record, diagnostics = prove(compiled)
    assert record is None
    assert [d.message for d in diagnostics if d.code == store.CACHE_IGNORED] == [
        "cache ignored: written by another toolc (version, code or libraries differ); compiling without it"]
    seen = compiles(monkeypatch)
    assert run("check").exit_code == 0 and seen


def test_toolc_identity_covers_its_code_templates_and_libraries() -> None:
    first = identity.toolc_identity()
    assert first.startswith("sha256:") and first == identity.toolc_identity()
    libraries = identity._library_versions()
    assert any(name.startswith("ruff-0.17.6") for name in libraries)
    assert any(name.startswith("datamodel_code_generator-") for name in libraries)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_proof_reports_what_a_full_check_reports(compiled: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    seen = compiles(monkeypatch)
    proved = run("check", "--format", fmt)
    assert not seen
    store.cache_path(compiled / "out", project.KIND).unlink()
    full = run("check", "--format", fmt)
    assert seen
    assert (proved.exit_code, proved.output) == (full.exit_code, full.output)


def test_a_files_digest_is_its_bytes_sha256_read_in_pieces(tmp_path: Path) -> None:
    """`stream_digest` hashes through one buffer (`hashlib.file_digest`): the same sha256 as the bytes whole,
    over several of its pieces, for an empty file, and None for a file that cannot be read."""
    content = bytes(range(256)) * 5000 + b"tail"  # ~1.3 MB: several of the buffer's 256 KB pieces
    (tmp_path / "big").write_bytes(content)
    (tmp_path / "empty").write_bytes(b"")
    assert project.stream_digest(tmp_path / "big") == "sha256:" + hashlib.sha256(content).hexdigest()
    assert project.stream_digest(tmp_path / "empty") == "sha256:" + hashlib.sha256(b"").hexdigest()
    assert project.stream_digest(tmp_path / "missing") is None
