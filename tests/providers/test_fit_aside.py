"""The toolset files of a big catalog's later targets, written by a forked child while the compile writes the
earlier ones (`compiler.fit.aside`): the same files, with the sha256 the project record takes, as when one
process writes them all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from compiler.build import Build, Layout, Span
from compiler.config import Config
from compiler.fit import aside, forms
from compiler.infra.output import FileSet, read_tree
from compiler.infra.parallel import can_fork
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from tests.support.synthetic import synthetic_openapi

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


def _compile(tmp_path: Path, name: str) -> tuple[Build, dict[str, bytes]]:
    spec = tmp_path / "api.json"
    if not spec.exists():
        spec.write_text(json.dumps(synthetic_openapi(200)))  # past OpenAI's 128 tools: several toolsets
    out = tmp_path / name / "out"
    config = Config(root=tmp_path).model_copy(update={"codegen": False})
    build = compile_project(config, adhoc_inputs([spec], tmp_path), targets=TARGETS, out_dir=out)
    write_build(build, out)
    return build, read_tree(out)


@pytest.mark.skipif(not can_fork(), reason="the child is forked")
@pytest.mark.parametrize("spool_min", [FileSet.SPOOL_MIN, 4096], ids=["kept-in-memory", "spooled"])
def test_toolsets_written_aside_are_the_files_and_digests_of_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spool_min: int) -> None:
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.setattr(FileSet, "SPOOL_MIN", spool_min)  # 4096: every toolset file spooled, as a big API's are
    _build, alone = _compile(tmp_path, "alone")
    chosen: list[list[str]] = []
    real = aside._aside
    monkeypatch.setattr(aside, "_aside", lambda outputs: chosen.append(real(outputs)) or chosen[-1])
    monkeypatch.setattr(aside, "WRITE_ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(aside, "cores", lambda: 2)
    build, beside = _compile(tmp_path, "aside")
    assert beside == alone
    assert chosen and chosen[0] and chosen[0] == list(TARGETS)[-len(chosen[0]):]
    taken = [path for path in alone if path.startswith("schemas/toolsets/") and path.split(".")[-2] in chosen[0]]
    assert taken
    for path in taken:  # the project record's digests, as the child hashed them (none for a file kept in memory)
        spooled = len(alone[path]) >= spool_min
        assert build.files.known_digest(path) == ("sha256:" + hashlib.sha256(alone[path]).hexdigest()
                                                  if spooled else "")
        assert (build.files.spooled_path(path) is not None) == spooled
    build.files.release_spool()


def _output(target: str, megabytes: int) -> Any:
    class Output:
        layout = Layout(target, {"t": Span(0, megabytes << 20, 0, 0)}, "")

    return Output()


def test_the_child_takes_the_last_targets_holding_at_most_half_the_bytes() -> None:
    megabytes = {"openai-chat": 184, "openai-responses": 173, "anthropic": 273, "gemini": 76}  # Microsoft Graph's
    outputs = {target: _output(target, size) for target, size in megabytes.items()}
    assert aside._aside(outputs) == ["anthropic", "gemini"]  # 349 MB of 706, written while this process does 357
    assert aside._aside({"anthropic": _output("anthropic", 273)}) == []  # one target: this process would wait
    assert aside._aside({target: _output(target, 1) for target in megabytes}) == []  # 4 MB: not worth a fork


@pytest.mark.skipif(not can_fork(), reason="the child is forked")
def test_the_child_writes_the_deferred_form_no_byte_limit_applies_to(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI Responses' deferred form has no byte limit: the child writes it, and this process takes it in after
    its last target, its size put in the index as one process writing it would. Claude's has one (its size decides
    whether it is sent): written here, as before."""
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.setattr(FileSet, "SPOOL_MIN", 4096)
    _build, alone = _compile(tmp_path, "alone")
    written_here: list[str] = []
    real = forms._write_deferred
    monkeypatch.setattr(forms, "_write_deferred", lambda build, kept, path, *rest: written_here.append(path) or real(
        build, kept, path, *rest))
    monkeypatch.setattr(aside, "WRITE_ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(aside, "cores", lambda: 2)
    build, beside = _compile(tmp_path, "aside")
    assert beside == alone
    deferred = "schemas/openai-responses.deferred.json"
    assert deferred in beside and written_here == ["schemas/anthropic.deferred.json"]
    assert build.files.known_digest(deferred) == "sha256:" + hashlib.sha256(alone[deferred]).hexdigest()
    index = json.loads(beside["schemas/toolsets/index.json"])
    assert index["targets"]["openai-responses"]["files"]["deferred"]["bytes"] == len(alone[deferred])
    build.files.release_spool()
