"""The lowering cache (`compiler.providers.reuse`): a recompile lowers only the tools whose inputs changed,
and its output is byte for byte a compile from nothing, whatever the cache holds: warm, stale (another toolc),
corrupted, damaged in one entry, or made before a change to one operation or one shared definition."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.build import Build
from compiler.codegen.stubs import model_chunks
from compiler.config import Config
from compiler.incremental import identity, store
from compiler.infra.diagnostics import Severity
from compiler.infra.output import read_tree
from compiler.infra.parallel import can_fork
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.providers import lower, schemas, slices
from compiler.providers import reuse as lowering
from tests.support.synthetic import project_in, synthetic_openapi

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sixty operations sharing deep `$ref` trees, compiled in this process (one job: lowering is counted)."""
    return project_in(tmp_path, monkeypatch, synthetic_openapi(60))


@pytest.fixture
def lowered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tool ids `lower_tool` lowered (a cache hit does not call it)."""
    seen: list[str] = []
    real = lower.lower_tool

    def counting(target: str, tool: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(tool.id)
        return real(target, tool, *args, **kwargs)

    monkeypatch.setattr(lower, "lower_tool", counting)
    monkeypatch.setattr(slices, "lower_tool", counting)  # a compile lowers its targets together, by slices of tools
    return seen


def config(strict: bool = True, codegen: bool = False) -> Config:
    base = Config(root=Path.cwd())
    return base.model_copy(update={"codegen": codegen,
                                   "providers": base.providers.model_copy(update={"anthropic_strict": strict})})


def compile_into(spec: Path, out: Path, *, codegen: bool = False) -> tuple[Build, dict[str, bytes]]:
    build = compile_project(config(codegen=codegen), adhoc_inputs([spec], spec.parent), targets=TARGETS, out_dir=out)
    assert not build.diagnostics.has_errors, build.diagnostics.sorted()[:3]
    write_build(build, out)
    build.files.release_spool()
    return build, read_tree(out)


def reword_first_operation(spec: Path) -> None:
    document = json.loads(spec.read_text())
    operation = next(iter(next(iter(document["paths"].values())).values()))
    operation["description"] = "Reworded."
    spec.write_text(json.dumps(document))


def clean(spec: Path, tmp_path: Path, name: str = "clean") -> dict[str, bytes]:
    """A compile from nothing, into a folder of its own (no cache beside it)."""
    return compile_into(spec, tmp_path / name / "out")[1]


def test_cold_warm_and_another_toolc_give_the_same_bytes(spec: Path, tmp_path: Path, lowered: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    cold_build, cold = compile_into(spec, out)
    tools = len(cold_build.catalog.tools)
    assert len(lowered) >= tools * len(TARGETS)
    assert all(store.cache_path(out, lowering.kind(target), suffix=".blob").is_file() for target in TARGETS)
    lowered.clear()
    warm_build, warm = compile_into(spec, out)
    assert warm == cold and not lowered, "a warm compile lowers nothing and writes the same bytes"
    assert sorted(warm_build.diagnostics.sorted(), key=str) == sorted(cold_build.diagnostics.sorted(), key=str)
    monkeypatch.setattr(identity, "toolc_identity", lambda: "sha256:the-next-toolc")
    next_build, after_upgrade = compile_into(spec, out)
    assert after_upgrade == cold
    assert len(lowered) >= tools * len(TARGETS), "another toolc's cache is not trusted: every tool is lowered"
    notes = [d for d in next_build.diagnostics if d.code == store.CACHE_IGNORED]
    assert len(notes) >= len(TARGETS) and all(d.severity is Severity.INFO for d in notes)
    assert all("another toolc" in d.message for d in notes)


def test_one_changed_description_is_lowered_again_and_nothing_else(spec: Path, tmp_path: Path,
                                                                   lowered: list[str]) -> None:
    compile_into(spec, tmp_path / "out")
    document = json.loads(spec.read_text())
    methods = next(iter(document["paths"].values()))
    operation = next(iter(methods.values()))
    operation["description"] = "What this operation does, said again after a review."
    spec.write_text(json.dumps(document))
    lowered.clear()
    build, recompiled = compile_into(spec, tmp_path / "out")
    changed = {tool.id for tool in build.catalog.tools if tool.name == operation["operationId"]}
    assert len(changed) == 1 and set(lowered) == changed, "only the changed operation is lowered again"
    assert recompiled == clean(spec, tmp_path)


def test_a_changed_shared_definition_relowers_every_tool_that_reaches_it(spec: Path, tmp_path: Path,
                                                                         lowered: list[str]) -> None:
    compile_into(spec, tmp_path / "out")
    document = json.loads(spec.read_text())
    name, schema = next((n, s) for n, s in document["components"]["schemas"].items() if "properties" in s)
    schema["properties"]["added_by_review"] = {"type": "string", "description": "a new field"}
    spec.write_text(json.dumps(document))
    lowered.clear()
    _build, recompiled = compile_into(spec, tmp_path / "out")
    assert lowered, f"tools reaching {name} are lowered again"
    assert recompiled == clean(spec, tmp_path)


@pytest.mark.skipif(not can_fork(), reason="forked workers need fork")
@pytest.mark.parametrize("fork_bound", [float("inf"), 0.0], ids=["lowered here", "by forked workers"])
def test_a_recompile_on_two_cores_gives_the_bytes_of_a_compile_from_nothing_wherever_its_misses_are_lowered(
        spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_bound: float) -> None:
    """With two cores, the tools a change left to lower again are lowered after a warm share, here when their
    estimated work is small (`slices.FORK_MIN_WORK_S`) and by forked workers otherwise: the same bytes."""
    compile_into(spec, tmp_path / "out")
    document = json.loads(spec.read_text())
    name, schema = next((n, s) for n, s in document["components"]["schemas"].items() if "properties" in s)
    schema["properties"]["added_by_review"] = {"type": "string", "description": "a new field"}
    spec.write_text(json.dumps(document))
    forks: list[int] = []
    real_fork = slices.here_and_forked
    monkeypatch.setattr(slices, "here_and_forked", lambda tasks, *args, **kwargs: forks.append(len(tasks))
                        or real_fork(tasks, *args, **kwargs))
    monkeypatch.setenv("TOOLC_JOBS", "2")
    monkeypatch.setattr(slices, "cores", lambda: 2)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", fork_bound)
    _build, recompiled = compile_into(spec, tmp_path / "out")
    assert bool(forks) == (fork_bound == 0.0), f"tools reaching {name}: forked {forks}"
    monkeypatch.setenv("TOOLC_JOBS", "1")
    assert recompiled == clean(spec, tmp_path)


def blob_of(out: Path, target: str) -> Path:
    return store.cache_path(out, lowering.kind(target), suffix=".blob")


def test_a_warm_compile_saves_nothing_and_the_blob_is_a_link_not_a_copy(spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    blob, header = blob_of(out, "anthropic"), store.cache_path(out, lowering.kind("anthropic"))
    if os.stat(tmp_path).st_dev == os.stat(tempfile.gettempdir()).st_dev:  # the spool links where it can
        assert os.path.samefile(blob, out / "schemas" / "anthropic.json"), "the tools file is linked, not copied"
    envelope = orjson.loads(header.read_bytes())
    assert envelope["blob"] == "sha256:" + hashlib.sha256(blob.read_bytes()).hexdigest()
    saved = {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in (blob, header)}
    _build, warm = compile_into(spec, out)
    assert warm == cold
    assert saved == {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in (blob, header)}, \
        "nothing changed: the cache is not written again"


def test_a_recompile_reads_only_the_definitions_it_reuses_never_a_tools_file_whole(
        spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last compile's tools files (Microsoft Graph: 706 MB) are read a window at a time as the reused
    definitions are copied, in file order, each definition checked against the sha256 its index keeps: never read
    whole into memory, and each byte read once."""
    out = tmp_path / "out"
    compile_into(spec, out)
    reword_first_operation(spec)
    whole: list[str] = []
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda path: whole.append(path.name) or real_read(path))
    monkeypatch.setattr(lowering, "WINDOW", 65536)  # a few definitions to a window (Microsoft Graph's: dozens)
    ranges: list[int] = []
    real_pread = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        content = real_pread(fd, length, offset)
        ranges.append(len(content))
        return content

    monkeypatch.setattr(os, "pread", pread)
    _build, recompiled = compile_into(spec, out)
    lowered_blobs = [name for name in whole if name.endswith(".blob") and ".lowered-" in name]
    assert not lowered_blobs, "no tools file of the cache is read whole"
    sizes = {target: blob_of(out, target).stat().st_size for target in TARGETS}
    assert ranges and max(ranges) < min(sizes.values()), "a window at a time"
    assert sum(ranges) < 1.5 * sum(sizes.values()), "a byte is read about once (a window ends inside a definition)"
    assert len(ranges) < len(recompiled_tools(out)) / 2, "a window serves the definitions after it"
    assert recompiled == clean(spec, tmp_path)


def recompiled_tools(out: Path) -> list[str]:
    """Every definition the cache of `out` records, over every target."""
    return [key for target in TARGETS
            for key in orjson.loads(store.cache_path(out, lowering.kind(target)).read_bytes())["payload"]]


@pytest.mark.parametrize("aside", [False, True], ids=["here", "in the child writing aside"])
def test_a_definition_altered_in_place_is_caught_as_it_is_copied_and_the_cache_saved_afresh(
        spec: Path, tmp_path: Path, lowered: list[str], aside: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The blob is the output's tools file (one inode): edited in place, its bytes no longer match their
    hashes when they are copied. The compile notes it (TC140), lowers everything again, and saves a cache the
    next compile reuses whole; also when the damaged target's file is written by the forked child that writes
    a big catalog's tools files aside (its DamagedCache comes back pickled, path and all)."""
    if aside:
        if not can_fork():
            pytest.skip("the tools files are written aside in a forked child")
        monkeypatch.setattr(schemas, "cores", lambda: 2)
        monkeypatch.setattr(schemas, "_written_aside", lambda ordered: ["gemini"])
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    blob = blob_of(out, "gemini")
    content = blob.read_bytes()
    with blob.open("r+b") as handle:  # in place: the output file sees it too
        handle.write(content.replace(b'"description"', b'"descriptioN"', 1))
    lowered.clear()
    build, again = compile_into(spec, out)
    assert again == cold
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED]
    assert len(notes) == 1 and "do not match their hashes" in notes[0].message, notes
    assert notes[0].source == str(blob), notes  # the file at fault, even from the child
    assert len(lowered) >= len(build.catalog.tools) * len(TARGETS), "lowered again from nothing"
    lowered.clear()
    build, warm = compile_into(spec, out)
    assert warm == cold and not lowered
    assert not [d for d in build.diagnostics if d.code == store.CACHE_IGNORED]


def test_only_a_target_with_a_strict_budget_keeps_its_strict_parameters(spec: Path, tmp_path: Path,
                                                                       lowered: list[str]) -> None:
    """The strict budget (Anthropic's) is the one reader of a cached lowering's parameters: the other targets'
    indexes leave them out, and a recompile from them is still warm and identical."""
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    for target in TARGETS:
        items = orjson.loads(store.cache_path(out, lowering.kind(target)).read_bytes())["payload"].values()
        strict = [item["lowered"] for item in items if item["lowered"] is not None and item["lowered"]["strict"]]
        assert strict or target == "gemini", target  # Gemini has no strict mode
        kept = [item for item in strict if "parameters" in item]
        assert len(kept) == (len(strict) if target == "anthropic" else 0), target
    lowered.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold and not lowered


DAMAGES = ["cut short", "not json", "foreign envelope", "a definition altered", "blob missing", "one entry damaged",
           "an entry out of bounds", "other settings"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_cache_never_changes_the_output(spec: Path, tmp_path: Path, lowered: list[str], damage: str) -> None:
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    path, blob_path = store.cache_path(out, lowering.kind("anthropic")), blob_of(out, "anthropic")
    header, blob = path.read_bytes(), blob_path.read_bytes()
    blob_path.unlink()  # linked to the output: a damaged blob is written as a file of its own
    blob_path.write_bytes(blob)
    data = orjson.loads(header)
    first = next(iter(data["payload"]))
    if damage == "cut short":
        blob_path.write_bytes(blob[:-100])
    elif damage == "not json":
        path.write_bytes(b"{" + header[:1000])
    elif damage == "foreign envelope":
        data["toolc"] = "sha256:0"
        path.write_bytes(orjson.dumps(data))
    elif damage == "a definition altered":  # same length, so only the blob's hash can tell
        blob_path.write_bytes(blob.replace(b'"description"', b'"descriptioN"', 1))
    elif damage == "blob missing":
        blob_path.unlink()
    elif damage == "one entry damaged":
        data["payload"][first]["lowered"] = {"name": 3}
        path.write_bytes(orjson.dumps(data))
    elif damage == "an entry out of bounds":
        data["payload"][first]["at"][0] = len(blob) + 5
        path.write_bytes(orjson.dumps(data))
    else:
        data["key"] = "settings of another project"
        path.write_bytes(orjson.dumps(data))
    lowered.clear()
    build, again = compile_into(spec, out)
    assert again == cold
    assert lowered, "what the damaged file held is lowered again"
    notes = [d for d in build.diagnostics if d.code == store.CACHE_IGNORED]
    # A definition past the end of a blob cut short is one entry gone, lowered again like an entry out of bounds.
    whole_file = ("not json", "foreign envelope", "a definition altered", "blob missing")
    assert len(notes) == (1 if damage in whole_file else 0), notes


def test_stubs_and_router_are_the_same_from_a_warm_cache(spec: Path, tmp_path: Path) -> None:
    _build, cold = compile_into(spec, tmp_path / "out", codegen=True)
    assert any(path.startswith("python/") for path in cold)
    _build, warm = compile_into(spec, tmp_path / "out", codegen=True)
    assert warm == cold


def test_a_changed_description_reuses_every_model_chunk_and_stays_identical(spec: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The models do not hold an operation's description, so no chunk is generated again; the models' header
    (the source's input hash, which the description changes) is this compile's all the same."""
    compile_into(spec, tmp_path / "out", codegen=True)
    reword_first_operation(spec)
    generated: list[str] = []
    real = model_chunks._run
    monkeypatch.setattr(model_chunks, "_run", lambda job: generated.append(job.filename) or real(job))
    _build, recompiled = compile_into(spec, tmp_path / "out", codegen=True)
    assert not generated, "every chunk came from the cache"
    _build, clean_output = compile_into(spec, tmp_path / "clean" / "out", codegen=True)
    assert generated, "a compile from nothing generates its models"
    assert recompiled == clean_output


def test_a_tools_file_over_a_request_grows_by_what_changed_and_gives_a_compile_from_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lowered: list[str]) -> None:
    """A target whose tools do not fit one request writes no `schemas/<target>.json` of them (the discovery form
    instead): its tools file is the cache's alone, never hashed whole, and a recompile appends to it the
    definitions it lowered again instead of copying the rest (Microsoft Graph: three of four, 433 MB). Warm,
    changed, changed again, altered, linked elsewhere or mostly dead, the output is byte for byte a compile from
    nothing."""
    spec = project_in(tmp_path, monkeypatch, synthetic_openapi(140))  # over OpenAI's 128 tools, under the others'
    out = tmp_path / "out"
    _build, cold = compile_into(spec, out)
    fits = {target: schemas.fits_one_request(target, 140) for target in TARGETS}
    assert fits == {"openai-chat": False, "openai-responses": False, "anthropic": True, "gemini": True}
    for target in TARGETS:
        envelope = orjson.loads(store.cache_path(out, lowering.kind(target)).read_bytes())
        assert bool(envelope["blob"]) == fits[target], target
    hashed: list[str] = []
    real_digest = lowering.stream_digest
    monkeypatch.setattr(lowering, "stream_digest", lambda path: hashed.append(path.name) or real_digest(path))
    blob = blob_of(out, "openai-chat")
    inode, size = blob.stat().st_ino, blob.stat().st_size
    lowered.clear()
    _build, warm = compile_into(spec, out)
    assert warm == cold and not lowered
    assert (blob.stat().st_ino, blob.stat().st_size, blob.stat().st_nlink) == (inode, size, 1)
    assert not hashed, "each tools file in the output is as its index recorded it (its stamp): not read to hash it"
    content = blob.read_bytes()
    assert b"},\n  {" in content
    with blob.open("r+b") as handle:  # a separator altered: never read (the fit stage reads by spans)
        handle.write(content.replace(b"},\n  {", b"}, \n {", 1))
    _build, again = compile_into(spec, out)
    assert again == cold and not lowered

    reword_first_operation(spec)
    lowered.clear()
    changed_build, changed = compile_into(spec, out)
    assert len(set(lowered)) == 1, "the reworded operation alone"
    clean_build, from_nothing = compile_into(spec, tmp_path / "clean" / "out")
    assert changed == from_nothing
    assert [d.to_row() for d in changed_build.diagnostics] == [d.to_row() for d in clean_build.diagnostics], \
        "the same diagnostics, in the same order"
    assert blob.stat().st_ino == inode and size < blob.stat().st_size < 2 * size, "grown, not written again"
    document = json.loads(spec.read_text())
    next(iter(next(iter(document["paths"].values())).values()))["description"] = "Reworded again."
    spec.write_text(json.dumps(document))
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-2") and blob.stat().st_ino == inode

    monkeypatch.setattr(lowering, "GROWN_LIMIT", 1)  # any dead byte is too many: written afresh, an array again
    reword_first_operation(spec)
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-3") and blob.stat().st_ino != inode
    assert json.loads(blob.read_bytes())  # an array again
    monkeypatch.setattr(lowering, "GROWN_LIMIT", 2)

    inode = blob.stat().st_ino
    os.link(blob, tmp_path / "elsewhere.json")  # another name for it: never grown under it
    document["paths"][next(iter(document["paths"]))][next(iter(next(iter(document["paths"].values()))))][
        "description"] = "Reworded a third time."
    spec.write_text(json.dumps(document))
    _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-4") and blob.stat().st_ino != inode
    assert json.loads((tmp_path / "elsewhere.json").read_bytes()), "the other name's file is left as it was"

    inode = blob.stat().st_ino
    with monkeypatch.context() as patched:  # the spool on another file system than the cache: written
        patched.setattr(os, "link", lambda *args, **kwargs: (_ for _ in ()).throw(OSError(errno.EXDEV, "cross-device")))
        reword_first_operation(spec)
        _build, changed = compile_into(spec, out)
    assert changed == clean(spec, tmp_path, "clean-5") and blob.stat().st_ino != inode

    content = blob.read_bytes()
    with blob.open("r+b") as handle:  # a definition altered: the compile notes it and lowers again
        handle.write(content.replace(b'"description"', b'"descriptioN"', 1))
    lowered.clear()
    build, again = compile_into(spec, out)
    assert again == clean(spec, tmp_path, "clean-6") and lowered
    assert [d.source for d in build.diagnostics if d.code == store.CACHE_IGNORED] == [str(blob)]


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_tools_file_planted_as_a_symlink_or_fifo_is_ignored_and_nothing_outside_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str) -> None:
    """A tools file that grows is appended to: one replaced by a symlink to a file outside the cache (here a copy
    of the real one, so every span checks) must not have that file appended to, and a FIFO must not hang the
    compile. Either is a TC140 note, and the output is a compile from nothing."""
    spec = project_in(tmp_path, monkeypatch, synthetic_openapi(140))  # OpenAI's tools file is not in the output
    out = tmp_path / "out"
    compile_into(spec, out)
    blob = blob_of(out, "openai-chat")
    victim = tmp_path / "victim.json"
    victim.write_bytes(blob.read_bytes())
    before = victim.read_bytes()
    blob.unlink()
    if plant == "symlink":
        blob.symlink_to(victim)
    else:
        os.mkfifo(blob)
    reword_first_operation(spec)
    build, changed = compile_into(spec, out)
    assert victim.read_bytes() == before, "nothing appended to a file outside the cache"
    assert str(blob) in [d.source for d in build.diagnostics if d.code == store.CACHE_IGNORED]
    assert changed == clean(spec, tmp_path)
