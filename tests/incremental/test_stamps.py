"""Stamps (`compiler.incremental.stamps`): a file toolc wrote or checked, found with the stamp recorded then, has the
hashes recorded with it, unread (the lowering cache's tools files, the kept toolset files and deferred forms); a
file written since, touched, or with no stamp recorded is read and hashed as before. Every compile gives the bytes
of a compile from nothing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from compiler.incremental import kept_files, stamps, store
from compiler.providers import reuse, schemas
from tests.incremental.test_kept_files import TARGETS, compile_into
from tests.support.synthetic import project_in, synthetic_openapi


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """140 operations: over OpenAI's 128 tools (its tools files grow in the cache), under the others'."""
    return project_in(tmp_path, monkeypatch, synthetic_openapi(140))


def clean(spec: Path, tmp_path: Path, name: str) -> dict[str, bytes]:
    return compile_into(spec, tmp_path / name / "out")[1]


def reword(spec: Path, text: str) -> None:
    document = json.loads(spec.read_text())
    next(iter(next(iter(document["paths"].values())).values()))["description"] = text
    spec.write_text(json.dumps(document))


def touch(path: Path) -> None:
    """A new modification time, the bytes as they were."""
    found = path.stat()
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def span_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the cached definitions hashed to check them (a key's hash is of bytes, a span's of a view)."""
    seen: list[int] = []

    def sha256(data: Any = b"") -> Any:
        if isinstance(data, memoryview):
            seen.append(len(data))
        return hashlib.sha256(data)

    monkeypatch.setattr(reuse, "hashlib", SimpleNamespace(sha256=sha256))
    return seen


@pytest.fixture
def kept_hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kept files read to hash them."""
    seen: list[str] = []
    real = kept_files.stream_digest

    def counting(path: Path) -> str | None:
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(kept_files, "stream_digest", counting)
    return seen


def blob_of(out: Path, target: str) -> Path:
    return store.cache_path(out, reuse.kind(target), suffix=".blob")


def test_a_stamp_changes_with_a_write_in_place_of_the_same_size(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"0123456789")
    before = stamps.of_path(path)
    assert before and stamps.settle([before])
    with path.open("r+b") as handle:
        handle.write(b"9")
    assert stamps.of_path(path) != before
    assert stamps.of_path(tmp_path / "none") == "" and stamps.settle(["", ""])


def test_a_recompile_checks_no_cached_definition_of_a_tools_file_as_recorded(
        spec: Path, tmp_path: Path, span_checks: list[int]) -> None:
    """The tools files that grow (OpenAI's two, past 128 tools) are taken by their spans' recorded hashes while they
    keep their stamps; one touched since has every span checked again, and gives the same bytes, with no note."""
    out = tmp_path / "out"
    compile_into(spec, out)
    assert not schemas.fits_one_request("openai-chat", 140)
    reword(spec, "Reworded.")
    span_checks.clear()
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-1")
    assert not span_checks, "every tools file is as its index recorded it"

    grown = blob_of(out, "openai-chat")
    touch(grown)
    reword(spec, "Reworded again.")
    span_checks.clear()
    build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-2")
    assert len(span_checks) >= 139, "the touched file's reused definitions are each checked"
    assert not [d for d in build.diagnostics if d.code == store.CACHE_IGNORED]

    span_checks.clear()
    reword(spec, "Reworded a third time.")
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-3") and not span_checks, "its new stamp recorded"


def test_a_tools_file_written_in_place_just_after_its_compile_is_still_caught(spec: Path, tmp_path: Path) -> None:
    """The stamp is taken once the clock has moved past the file's time (`settle`): a write straight after the
    compile gives the file another stamp, so its definitions are checked and the altered one noted (TC140)."""
    out = tmp_path / "out"
    compile_into(spec, out)
    blob = blob_of(out, "openai-chat")
    content = blob.read_bytes()
    with blob.open("r+b") as handle:
        handle.write(content.replace(b'"description"', b'"descriptioN"', 1))
    reword(spec, "Reworded.")
    build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean")
    assert [d.source for d in build.diagnostics if d.code == store.CACHE_IGNORED] == [str(blob)]


def test_with_no_stamp_recorded_the_spans_are_checked(spec: Path, tmp_path: Path, span_checks: list[int],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that does not get past the file's time records no stamp: the next compile checks every span."""
    monkeypatch.setattr(stamps, "settle", lambda found: False)
    out = tmp_path / "out"
    compile_into(spec, out)
    assert all(orjson.loads(store.cache_path(out, reuse.kind(target)).read_bytes())["stamp"] == ""
               for target in TARGETS)
    reword(spec, "Reworded.")
    span_checks.clear()
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean") and len(span_checks) >= 139


def test_kept_files_as_recorded_are_not_read_and_a_touched_one_is_hashed_and_kept(
        spec: Path, tmp_path: Path, kept_hashed: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    record = orjson.loads(store.cache_path(out, kept_files.KIND).read_bytes())["payload"]
    assert record and all(row[2] == stamps.of_path(out / path) for path, row in record.items())
    kept_hashed.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold and not kept_hashed, "every kept file as recorded: none read"

    touched = next(path for path in sorted(record) if "/toolsets/" in path)
    inode = (out / touched).stat().st_ino
    touch(out / touched)
    _build, again = compile_into(spec, out)
    assert again == cold
    assert kept_hashed == [Path(touched).name], "the touched file alone is read, and kept (the same bytes)"
    assert (out / touched).stat().st_ino == inode

    with (out / touched).open("r+b") as handle:  # in place, the same size, straight after its compile
        handle.write(cold[touched].replace(b'"description"', b'"descriptioN"', 1))
    _build, again = compile_into(spec, out)
    assert again == cold and (out / touched).stat().st_ino != inode, "made again"


def test_an_index_edited_since_its_compile_has_its_spans_checked(spec: Path, tmp_path: Path,
                                                                 span_checks: list[int]) -> None:
    """The stamps an index records hold only while the index is as toolc wrote it (its seal, `store`): two
    entries' ranges swapped, the tools file untouched, must not send one tool's definition as another's."""
    out = tmp_path / "out"
    compile_into(spec, out)
    index = store.cache_path(out, reuse.kind("openai-chat"))
    assert store.cache_path(out, reuse.kind("openai-chat"), suffix=".seal").read_text() == stamps.of_path(index)
    data = orjson.loads(index.read_bytes())
    first, second = [item for item in data["payload"].values() if item["at"]][:2]
    first["at"][:2], second["at"][:2] = second["at"][:2], first["at"][:2]  # each range at the other's bytes
    index.write_bytes(orjson.dumps(data))
    reword(spec, "Reworded.")
    span_checks.clear()
    build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean")
    assert span_checks, "the edited index's spans are checked"
    assert [d.source for d in build.diagnostics if d.code == store.CACHE_IGNORED] == [str(blob_of(out, "openai-chat"))]


def test_a_kept_files_record_edited_since_is_not_relied_on(spec: Path, tmp_path: Path, kept_hashed: list[str]) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    path = store.cache_path(out, kept_files.KIND)
    path.write_bytes(path.read_bytes() + b" ")  # the same record, written again by another hand
    kept_hashed.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold and kept_hashed, "every kept file hashed"


@pytest.mark.parametrize("plant", ["fifo", "garbage"])
def test_a_seal_that_is_not_one_leaves_the_index_unsealed(spec: Path, tmp_path: Path, span_checks: list[int],
                                                          plant: str) -> None:
    """A seal planted as a FIFO never hangs the compile, and one holding anything but the index's stamp (here a
    big file) is not read past a stamp's length: either way the index is unsealed and its spans are checked."""
    out = tmp_path / "out"
    compile_into(spec, out)
    seal = store.cache_path(out, reuse.kind("openai-chat"), suffix=".seal")
    seal.unlink()
    if plant == "fifo":
        os.mkfifo(seal)
    else:
        seal.write_bytes(b"0" * (1 << 20))
    reword(spec, "Reworded.")
    span_checks.clear()
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean") and len(span_checks) >= 139


def delta_of(out: Path, target: str) -> Path:
    return store.cache_path(out, reuse.delta_kind(target))


def test_a_grown_files_index_is_saved_as_a_delta_and_read_back_with_it(spec: Path, tmp_path: Path,
                                                                       span_checks: list[int]) -> None:
    """A recompile that grows OpenAI's tools files saves the few records it changed beside their indexes (the
    indexes stay as they were); the next compile reads both, checks no span, and gives a compile from nothing."""
    out = tmp_path / "out"
    compile_into(spec, out)
    index = store.cache_path(out, reuse.kind("openai-chat"))
    before = index.read_bytes(), stamps.of_path(index)
    reword(spec, "Reworded.")
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-1")
    assert (index.read_bytes(), stamps.of_path(index)) == before, "the index is not written again"
    delta = orjson.loads(delta_of(out, "openai-chat").read_bytes())["payload"]
    assert len(delta["put"]) == 1 and len(delta["drop"]) == 1, "the reworded tool's record replaces its last one"
    reword(spec, "Reworded again.")
    span_checks.clear()
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-2") and not span_checks
    delta = orjson.loads(delta_of(out, "openai-chat").read_bytes())["payload"]
    assert len(delta["put"]) == 1 and len(delta["drop"]) == 1, "against the index: the first change's record dropped"


def test_a_delta_past_its_limit_writes_the_index_whole(spec: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reuse, "DELTA_LIMIT", 10**9)  # any change is too many
    out = tmp_path / "out"
    compile_into(spec, out)
    index = store.cache_path(out, reuse.kind("openai-chat"))
    before = index.read_bytes()
    reword(spec, "Reworded.")
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean") and index.read_bytes() != before
    assert not delta_of(out, "openai-chat").exists()


@pytest.mark.parametrize("damage", ["not json", "another index's", "edited"])
def test_a_delta_that_is_not_the_indexs_is_ignored(spec: Path, tmp_path: Path, span_checks: list[int],
                                                   damage: str) -> None:
    """The index's records still hold for their keys (a grown file only has definitions appended): a delta that is
    not JSON (a TC140 note), was saved against another index, or was edited since (unsealed) leaves the compile
    checking every span it reuses, and its output a compile from nothing."""
    out = tmp_path / "out"
    compile_into(spec, out)
    reword(spec, "Reworded.")
    compile_into(spec, out)
    path = delta_of(out, "openai-chat")
    data = orjson.loads(path.read_bytes())
    if damage == "not json":
        path.write_bytes(b"{" + path.read_bytes()[:50])
    elif damage == "another index's":
        data["key"] = data["key"].rsplit(":", 1)[0] + ":0:0:0:0"
        path.write_bytes(orjson.dumps(data))
    else:
        path.write_bytes(orjson.dumps(data) + b" ")
    reword(spec, "Reworded again.")
    span_checks.clear()
    build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean")
    assert len(span_checks) >= 139 if damage != "edited" else span_checks
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED]
    assert len(notes) == (1 if damage == "not json" else 0), notes


@pytest.mark.parametrize("kind", [kept_files.KIND, reuse.kind("openai-chat")], ids=["kept files", "lowering index"])
def test_a_record_that_lost_its_seal_is_sealed_again(spec: Path, tmp_path: Path, kind: str) -> None:
    """A seal lost (a compile killed between a save and its seal, a clock that would not settle) costs one
    compile's hashing, not every later one's: the record is saved again, sealed, unchanged or grown."""
    out = tmp_path / "out"
    compile_into(spec, out)
    seal = store.cache_path(out, kind, suffix=".seal")
    seal.unlink()
    compile_into(spec, out)  # nothing changed
    assert seal.exists()
    seal.unlink()
    reword(spec, "Reworded.")
    compile_into(spec, out)  # the tools file grows: no delta against an unsealed index
    assert seal.exists()


def test_a_lowering_record_without_its_place_is_a_miss(spec: Path, tmp_path: Path) -> None:
    """A damaged record that decodes (no lowering) but lacks what saving reads back is lowered again, not a
    KeyError when the index is saved."""
    out = tmp_path / "out"
    compile_into(spec, out)
    index = store.cache_path(out, reuse.kind("anthropic"))
    data = orjson.loads(index.read_bytes())
    for key, item in data["payload"].items():
        data["payload"][key] = {"lowered": None, "entry": item["entry"], "diagnostics": [], "resolver": []}
    index.write_bytes(orjson.dumps(data))
    reword(spec, "Reworded.")
    assert compile_into(spec, out)[1] == clean(spec, tmp_path, "clean")


def test_a_time_rounded_by_a_coarse_file_system_never_settles() -> None:
    """A whole-second time (FAT, HFS+, ext4 with small inodes) is long past on the clock, yet a same-size write
    within that second keeps it: such a stamp is never recorded."""
    assert not stamps.settle(["1:2:3:1764000000000000000"])
    assert not stamps.settle(["1:2:3:1764000000123456789", "1:2:4:1764000001000000000"])
    assert stamps.settle(["1:2:3:1764000000123456789"])
