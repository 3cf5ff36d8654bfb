"""ruff's formatting reused per module (`compiler.codegen.format_reuse`): after one changed description only the
modules that differ by more than the source digest they quote go through ruff again, and the output is byte for
byte a compile from nothing, whatever the cache or the output folder holds."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import orjson
import pytest

from compiler.codegen import formatting
from compiler.codegen.format_reuse import KIND, FormatReuse
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics
from compiler.pipeline import adhoc_inputs, compile_project
from tests.incremental.test_lowering_cache import TARGETS, compile_into, config
from tests.incremental.test_stub_reuse import _clean, _reword, spec

__all__ = ["spec"]  # the fixture, shared with the stub reuse tests


@pytest.fixture
def formatted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modules ruff was run on."""
    seen: list[str] = []
    real = formatting.run_ruff

    def counting(sources: Mapping[str, bytes]) -> dict[str, bytes]:
        seen.extend(sources)
        return real(sources)

    monkeypatch.setattr(formatting, "run_ruff", counting)
    return seen


def test_a_changed_description_formats_only_the_module_that_says_it(spec: Path, tmp_path: Path,
                                                                    formatted: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out, codegen=True)
    modules = [path for path in cold if path.startswith("python/") and path.endswith(".py")]
    assert sorted(_modules(formatted)) == sorted(path.removeprefix("python/") for path in modules)
    formatted.clear()
    _reword(spec, 3, "Reworded after a review.")
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert _tools_pieces(formatted) == 1, "the docstring changed there; elsewhere only the source digest did"
    assert recompiled == _clean(spec, tmp_path, "clean")
    formatted.clear()
    _reword(spec, 4, "Reworded again.")
    _build, again = compile_into(spec, out, codegen=True)
    assert _tools_pieces(formatted) == 1, "the entries the last recompile reused are kept for the next"
    assert again == _clean(spec, tmp_path, "clean-again")


def _modules(formatted: list[str]) -> set[str]:
    """The modules ruff was run on: tools.py's pieces (`piece_format`, one file per piece) count as tools.py."""
    return {path.split("/", 1)[1] if path.split("/", 1)[0].isdigit() else path for path in formatted}


def _tools_pieces(formatted: list[str]) -> int:
    """How many of tools.py's pieces of functions (never its head, piece 0) ruff was run on, and only those."""
    assert all(path.endswith("/api/tools.py") and int(path.split("/", 1)[0]) > 0 for path in formatted), formatted
    return len(formatted)


def test_a_compile_whose_output_is_not_written_leaves_the_formatting_cache_as_it_was(
        spec: Path, tmp_path: Path, formatted: list[str]) -> None:
    """The cache describes the output folder (a hit reads the module there), so only a compile that writes the
    folder saves it: a failed compile or `toolc check` in between must not cost the next one every module."""
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    _reword(spec, 3, "Reworded, then compiled without writing.")
    unwritten = compile_project(config(codegen=True), adhoc_inputs([spec], spec.parent), targets=TARGETS, out_dir=out)
    unwritten.files.release_spool()
    formatted.clear()
    _reword(spec, 4, "Reworded again, and written.")
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert 1 <= _tools_pieces(formatted) <= 2, "the pieces of the two reworded tools, against the folder's"
    assert recompiled == _clean(spec, tmp_path, "clean")


@pytest.mark.parametrize("damage", ["module edited", "cache corrupted", "another toolc"])
def test_a_damaged_cache_or_an_edited_module_never_changes_the_output(spec: Path, tmp_path: Path,
                                                                      formatted: list[str], damage: str) -> None:
    out = tmp_path / "out"
    compile_into(spec, out, codegen=True)
    path = store.cache_path(out, KIND)
    if damage == "module edited":  # same length: only the recorded hash tells
        models = out / "python" / "api" / "models.py"
        models.write_bytes(models.read_bytes().replace(b"class ", b"klass ", 1))
    elif damage == "cache corrupted":
        path.write_bytes(path.read_bytes()[:-40])
    else:
        data = orjson.loads(path.read_bytes())
        data["toolc"] = "sha256:0"
        path.write_bytes(orjson.dumps(data))
    formatted.clear()
    _reword(spec, 3, "Reworded after a review.")
    _build, recompiled = compile_into(spec, out, codegen=True)
    assert recompiled == _clean(spec, tmp_path, "clean")
    if damage == "module edited":
        assert "api/models.py" in formatted
    else:
        assert len(formatted) > 1, "nothing reused from a cache that is not ours"


def test_digests_go_back_in_order_and_a_module_whose_digests_ruff_moved_is_not_kept(tmp_path: Path) -> None:
    first, second = "a" * 64, "b" * 64
    source = f'"""From sha256:{first}."""\nx  =  1 # sha256:{second}\n'.encode()
    previous = formatting.format_python({"m.py": source})
    reuse = FormatReuse(tmp_path / "out", {}, Diagnostics())
    reuse.put("m.py", source, previous["m.py"])
    reuse.put("moved.py", source, previous["m.py"].replace(first.encode(), second.encode()))
    reuse.save()
    third, fourth = "c" * 64, "d" * 64
    changed = source.replace(first.encode(), third.encode()).replace(second.encode(), fourth.encode())
    folder = {"python/m.py": previous["m.py"], "python/moved.py": previous["m.py"]}
    again = FormatReuse(tmp_path / "out", folder, Diagnostics())
    assert again.get("m.py", changed) == formatting.format_python({"m.py": changed})["m.py"]
    assert again.get("moved.py", changed) is None
    assert again.get("m.py", changed.replace(b"x", b"y")) is None, "not the same module but for its digests"
    recorded = orjson.loads(store.cache_path(tmp_path / "out", KIND).read_bytes())["payload"]
    assert recorded["m.py"][1] == hashlib.sha256(previous["m.py"]).hexdigest()
