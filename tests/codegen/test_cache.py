"""Codegen is skipped only when its output provably cannot change, and skipping is invisible: same files, same
lock, same diagnostics as generating. The cache lives beside the output, never in the lock: a new toolc version
regenerates the same bytes and `toolc check` stays green."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import codes
from compiler.codegen import cache
from compiler.codegen import python as emit
from compiler.config import Config
from compiler.infra.output import read_tree
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from tests.support.paths import FIXTURES

INPUTS = [FIXTURES / "mcp" / "mcp-server-time.json", FIXTURES / "codegen" / "hostile.json"]


def _compile(out: Path) -> tuple[dict[str, bytes], list[str]]:
    build = compile_project(Config(root=Path.cwd()), adhoc_inputs(INPUTS, Path.cwd()), out_dir=out)
    write_build(build, out)
    return read_tree(out), [d.render() for d in build.diagnostics.sorted()]


def _refuse_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("codegen ran although nothing changed")

    monkeypatch.setattr(emit, "record", refuse)


def test_an_unchanged_project_reuses_its_code_and_replays_its_diagnostics(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    first_files, first_diagnostics = _compile(out)
    assert any(path.startswith("python/") for path in first_files)
    assert any("TC6" in line for line in first_diagnostics), "the hostile listing reports name collisions"
    _refuse_generation(monkeypatch)
    second_files, second_diagnostics = _compile(out)
    assert second_files == first_files
    assert second_diagnostics == first_diagnostics


def test_a_hand_edited_file_is_regenerated(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first_files, _ = _compile(out)
    edited = out / "python" / "toolc_router" / "policy.py"
    edited.write_text(edited.read_text() + "\nALLOW_EVERYTHING = True\n")
    second_files, _ = _compile(out)
    assert second_files == first_files


def test_a_changed_generator_or_input_regenerates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _compile(out)
    key = cache.fingerprint
    monkeypatch.setattr(emit, "fingerprint", lambda build: key(build) + "-new-generator")
    calls: list[str] = []
    monkeypatch.setattr(emit, "record", lambda k, *args: calls.append(k) or cache.record(k, *args))
    _compile(out)
    assert calls, "a different fingerprint must regenerate"


def test_the_fingerprint_covers_catalog_config_and_targets(tmp_path: Path) -> None:
    base = compile_project(Config(root=Path.cwd()), adhoc_inputs(INPUTS[:1], Path.cwd()), out_dir=tmp_path / "a")
    other_config = compile_project(Config(root=Path.cwd(), name="other"), adhoc_inputs(INPUTS[:1], Path.cwd()),
                                   out_dir=tmp_path / "a")
    other_catalog = compile_project(Config(root=Path.cwd()), adhoc_inputs(INPUTS, Path.cwd()), out_dir=tmp_path / "a")
    other_targets = compile_project(Config(root=Path.cwd()), adhoc_inputs(INPUTS[:1], Path.cwd()),
                                    targets=("anthropic",), out_dir=tmp_path / "a")
    keys = {cache.fingerprint(b) for b in (base, other_config, other_catalog, other_targets)}
    assert len(keys) == 4


def test_a_changed_registry_of_codes_invalidates_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replayed diagnostics keep their recorded severity: a severity changed in the registry must regenerate, or
    the replay would build diagnostics the registry refuses."""
    copy = tmp_path / "codes.py"
    copy.write_bytes(Path(codes.__file__).read_bytes())
    monkeypatch.setattr(codes, "__file__", str(copy))
    before = cache.generator_identity.__wrapped__()
    copy.write_text(copy.read_text().replace('Code("TC604", INFO', 'Code("TC604", WARNING'))
    assert cache.generator_identity.__wrapped__() != before


def test_the_fingerprint_hashes_the_catalog_file_instead_of_encoding_the_ir_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog stage already encoded the IR (`catalog.json`): the fingerprint hashes those bytes, and so
    still tells one description from another."""
    build = compile_project(Config(root=Path.cwd()), adhoc_inputs(INPUTS[:1], Path.cwd()), out_dir=tmp_path / "a")
    monkeypatch.setattr(cache, "catalog_to_json", lambda catalog: pytest.fail("the IR encoded a second time"))
    key = cache.fingerprint(build)
    del build.files["catalog.json"]
    build.files["catalog.json"] = b'{"format": "another catalog"}'
    assert cache.fingerprint(build) != key
