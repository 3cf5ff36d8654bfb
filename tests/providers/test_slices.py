"""Lowering split by tools (`compiler.providers.slices`): every target of a tool is lowered in one process, so
what the targets share is done once per tool (sizing and inlining its schema, the OpenAI family's schema-wide
limits), and the output is the same bytes whether the slices run here or in forked workers."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from compiler import pipeline
from compiler.build import Build
from compiler.config import Config
from compiler.infra.output import read_tree
from compiler.infra.parallel import can_fork, fork_each, here_and_forked
from compiler.pipeline import adhoc_inputs, compile_project, write_build
from compiler.providers import codes, inline_budget, schemas, slices, validate
from compiler.providers.spans import Measure
from compiler.refs import RefResolver, inliner
from tests.support.providers import make_tool
from tests.support.synthetic import synthetic_openapi

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


def _config(root: Path) -> Config:
    base = Config(root=root)
    return base.model_copy(update={"codegen": False,
                                   "providers": base.providers.model_copy(update={"anthropic_strict": True})})


def _compile(tmp_path: Path, name: str, jobs: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Build, dict[str, bytes]]:
    spec = tmp_path / "api.json"
    if not spec.exists():
        spec.write_text(json.dumps(synthetic_openapi(60, oversize=True)))
    monkeypatch.setenv("TOOLC_JOBS", jobs)
    out = tmp_path / name / "out"
    build = compile_project(_config(tmp_path), adhoc_inputs([spec], tmp_path), targets=TARGETS, out_dir=out)
    write_build(build, out)
    build.files.release_spool()
    return build, read_tree(out)


def _diagnostics(build: Build) -> list[str]:
    return sorted(json.dumps(diagnostic.to_json()) for diagnostic in build.diagnostics)


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> Counter[int]:
    """Calls of `owner.name`, by the identity of their first argument after self (or their first). Each argument
    is kept alive, so that no later one is counted under the identity of one that was freed (a strict lowering
    given up for a loose one is dropped, and its parameters' address taken again)."""
    calls: Counter[int] = Counter()
    seen: list[Any] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[1] if isinstance(owner, type) else args[0])
        calls[id(seen[-1])] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_each_tool_is_sized_inlined_and_limit_checked_once_for_all_its_targets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sized = _counting(monkeypatch, inline_budget.InlineSizer, "_over")
    inlined = _counting(monkeypatch, inliner.Inliner, "run")
    limited = _counting(monkeypatch, validate, "strict_limits")
    clean = _clean_sizings(monkeypatch)
    build, files = _compile(tmp_path, "serial", "1", monkeypatch)
    assert "schemas/anthropic.names.json" in files and "schemas/gemini.names.json" in files
    schemas = [id(tool.input_schema) for tool in build.catalog.tools]
    # Anthropic and Gemini both inline: each tool's schema is sized once, and that walk is the inlining when it
    # was clean (else it is walked once more to inline it: where sizing and inlining for each target made four
    # walks); the tools past Anthropic's strict budget are inlined again when lowered loose in the second round
    # (the last clean sizing is still kept then: its tool is not walked again), and the one over the inlining
    # budget, found so from its definitions' sizes, is never walked whole.
    assert [sized[schema] for schema in schemas] == [1] * len(schemas)
    relowered = {d.tool for d in build.diagnostics if d.code == codes.STRICT_BUDGET}
    shared = {d.tool for d in build.diagnostics if d.code == codes.SHARED_DEFS}
    assert relowered and shared == {"openapi:api:putWideTree"}
    assert {id(tool.input_schema) for tool in build.catalog.tools} & clean  # the synthetic API has both kinds
    assert {id(tool.input_schema) for tool in build.catalog.tools} - clean
    for tool in build.catalog.tools:
        walks, first = inlined[id(tool.input_schema)], 1 if id(tool.input_schema) in clean else 2
        expected = {0} if tool.id in shared else {first, first + 1} if tool.id in relowered else {first}
        assert walks in expected, tool.id
    # Chat Completions and Responses check the same strict parameters: their limits are measured once.
    assert limited and max(limited.values()) == 1


def _clean_sizings(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """Identities of the schemas whose sizing walk was clean, kept for `inline` to use (`RefResolver._last_sized`)."""
    clean: set[int] = set()
    real = RefResolver.inlined_size

    def sizing(resolver: RefResolver, schema: Any, *args: Any, **kwargs: Any) -> Any:
        found = real(resolver, schema, *args, **kwargs)
        if resolver._last_sized is not None and resolver._last_sized.schema is schema:
            clean.add(id(schema))
        return found

    monkeypatch.setattr(RefResolver, "inlined_size", sizing)
    return clean


@pytest.mark.skipif(not can_fork(), reason="forked workers need fork")
def test_slices_in_forked_workers_give_the_bytes_and_diagnostics_of_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serial_build, serial = _compile(tmp_path, "serial", "1", monkeypatch)
    here: list[list[slices.Request]] = []
    claimed: list[list[slices.Request]] = []
    real_slice, real_fork = slices.lower_slice, here_and_forked
    parent = os.getpid()

    def lowering_here(build: Build, plans: Any, requests: Any, *args: Any) -> Any:
        if os.getpid() != parent:
            return real_slice(build, plans, requests, *args)
        here.append(list(requests))
        return real_slice(build, plans, here[-1], *args)

    def forking(tasks: Any, **kwargs: Any) -> Any:
        made = real_fork(tasks, **kwargs)
        claimed.extend([item.request for item in part] for part in made)
        return made

    monkeypatch.setattr(slices, "lower_slice", lowering_here)
    monkeypatch.setattr(slices, "here_and_forked", forking)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", 0.0)
    monkeypatch.setattr(slices, "cores", lambda: 2)
    forked_build, forked = _compile(tmp_path, "forked", "2", monkeypatch)
    assert forked == serial
    assert _diagnostics(forked_build) == _diagnostics(serial_build)
    # Two rounds (every tool; then, loose, Anthropic's strict tools past its budget), each with a share lowered
    # here first (every WARM_STRIDE-th tool: it fills the memos the worker inherits) and the rest claimed in runs
    # of neighbouring tools by this process and one forked worker: a tool's targets all in one slice, every tool
    # in one slice only.
    assert len(here) == 4 and len(claimed) == 4
    assert here[1] == claimed[0] and here[3] == claimed[2]  # this process lowered its claims itself, not a child
    for part in here + claimed:
        assert part == sorted(part, key=lambda request: (request.position, TARGETS.index(request.target)))
    first = [{request.position for request in part} for part in claimed[:2]]
    everything = range(len(serial_build.catalog.tools))
    assert {request.position for request in here[0]} == set(everything[::slices.WARM_STRIDE])
    assert not first[0] & first[1]  # which worker takes which run depends on timing; the bytes do not
    assert first[0] | first[1] == set(everything) - set(everything[::slices.WARM_STRIDE])
    assert all(set(Counter(request.position for request in part).values()) <= {len(TARGETS)}
               for part in claimed[:2])
    assert all(not request.strict and request.target == "anthropic" for part in claimed[2:] for request in part)


@pytest.mark.skipif(not can_fork(), reason="forked workers need fork")
def test_tools_left_after_the_warm_share_stay_in_this_process_when_their_estimated_work_is_small(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serial_build, serial = _compile(tmp_path, "serial", "1", monkeypatch)
    estimates: list[float] = []
    forks: list[int] = []
    real_runs, real_fork = slices.SlicedLowering._lower_runs, here_and_forked

    def lowering_runs(self: slices.SlicedLowering, runs: Any, spools: Any, work: float) -> Any:
        estimates.append(work)
        return real_runs(self, runs, spools, work)

    monkeypatch.setattr(slices.SlicedLowering, "_lower_runs", lowering_runs)
    monkeypatch.setattr(slices, "here_and_forked", lambda tasks, *args, **kwargs: forks.append(len(tasks))
                        or real_fork(tasks, *args, **kwargs))
    monkeypatch.setattr(slices, "cores", lambda: 2)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", float("inf"))  # never worth a fork: all of it here
    kept_build, kept = _compile(tmp_path, "kept", "2", monkeypatch)
    assert kept == serial and _diagnostics(kept_build) == _diagnostics(serial_build)
    assert forks == [] and len(estimates) == 2 and all(work > 0 for work in estimates)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", 0.0)  # always worth one: two workers per round
    _build, forked = _compile(tmp_path, "forked", "2", monkeypatch)
    assert forked == serial and forks == [2, 2]


@pytest.mark.skipif(not can_fork(), reason="forked workers need fork")
def test_past_the_work_this_process_may_keep_the_memos_of_every_worker_is_forked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to `HERE_MAX_TOOLS`, this process is one of the workers (and keeps what its share filled); past it,
    each worker is a forked child, whose memory goes back to the system when it ends: the same bytes either way."""
    serial_build, serial = _compile(tmp_path, "serial", "1", monkeypatch)
    ways: list[tuple[str, int]] = []
    real_here, real_fork = here_and_forked, fork_each
    monkeypatch.setattr(slices, "here_and_forked", lambda tasks, **kwargs: ways.append(("here", len(tasks)))
                        or real_here(tasks, **kwargs))
    monkeypatch.setattr(slices, "fork_each", lambda tasks, workers, **kwargs: ways.append(("forked", workers))
                        or real_fork(tasks, workers, **kwargs))
    monkeypatch.setattr(slices, "cores", lambda: 2)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", 0.0)
    monkeypatch.setattr(slices, "HERE_MAX_TOOLS", 0)  # every catalog is past it
    forked_build, forked = _compile(tmp_path, "forked", "2", monkeypatch)
    assert forked == serial and _diagnostics(forked_build) == _diagnostics(serial_build)
    assert ways == [("forked", 2), ("forked", 2)]
    ways.clear()
    monkeypatch.setattr(slices, "HERE_MAX_TOOLS", 10**9)
    _build, shared = _compile(tmp_path, "shared", "2", monkeypatch)
    assert shared == serial and ways == [("here", 2), ("here", 2)]


@pytest.mark.skipif(not can_fork(), reason="forked workers need fork")
def test_catalog_json_is_written_while_the_forked_worker_lowers_beside_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """catalog.json needs no lowering: this process writes it after forking its worker, then claims what is left
    (the worker has taken more meanwhile); without a worker, and past `HERE_MAX_TOOLS` (every worker forked), before
    lowering, as the catalog.json stage did. Once each time, and the same bytes."""
    serial_build, serial = _compile(tmp_path, "serial", "1", monkeypatch)
    children_then: list[int] = []
    real_emit = pipeline.emit_catalog

    def emitting(build: Build) -> None:
        children_then.append(len(multiprocessing.active_children()))
        real_emit(build)

    monkeypatch.setattr(pipeline, "emit_catalog", emitting)
    _build, again = _compile(tmp_path, "again", "1", monkeypatch)
    assert again == serial and children_then == [0]
    monkeypatch.setattr(slices, "cores", lambda: 2)
    monkeypatch.setattr(slices, "FORK_MIN_WORK_S", 0.0)
    children_then.clear()
    beside_build, beside = _compile(tmp_path, "beside", "2", monkeypatch)
    assert beside == serial and _diagnostics(beside_build) == _diagnostics(serial_build)
    assert children_then == [1]  # the worker was lowering while this process wrote the catalog
    monkeypatch.setattr(slices, "HERE_MAX_TOOLS", 0)
    children_then.clear()
    _build, forked = _compile(tmp_path, "forked", "2", monkeypatch)
    assert forked == serial and children_then == [0]


@pytest.mark.skipif(not can_fork(), reason="the tools files are written aside in a forked child")
def test_tools_files_written_aside_give_the_same_bytes_and_a_cache_the_next_compile_reuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _serial_build, serial = _compile(tmp_path, "serial", "1", monkeypatch)
    aside: list[list[str]] = []
    real = schemas._written_aside
    monkeypatch.setattr(schemas, "_written_aside", lambda ordered: aside.append(real(ordered)) or aside[-1])
    monkeypatch.setattr(schemas, "WRITE_ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(schemas, "cores", lambda: 2)
    _build, written = _compile(tmp_path, "aside", "2", monkeypatch)
    assert written == serial
    assert aside and all(0 < len(targets) < len(TARGETS) for targets in aside)
    lowered: list[str] = []
    real_lower = slices.lower_tool
    monkeypatch.setattr(slices, "lower_tool", lambda *args, **kwargs: lowered.append(args[0]) or real_lower(*args,
                                                                                                           **kwargs))
    _build, again = _compile(tmp_path, "aside", "2", monkeypatch)  # the child saved its targets' lowering caches
    assert again == serial and lowered == []


def test_the_child_writes_the_costliest_targets_that_bring_it_nearest_half_of_the_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    megabytes = {"anthropic": 273, "openai-chat": 184, "openai-responses": 173, "gemini": 76}  # Microsoft Graph's
    monkeypatch.setattr(schemas, "spooled_bytes", lambda items: sum(items) << 20)
    monkeypatch.setattr(schemas, "_write_cost", lambda target, items: sum(items))
    ordered: Any = {target: [size] for target, size in megabytes.items()}
    assert schemas._written_aside(ordered) == ["anthropic", "gemini"]  # 349 MB of 706, written alike
    assert schemas._written_aside({"anthropic": [273]}) == []  # this process would only wait
    assert schemas._written_aside({target: [1] for target in megabytes}) == []  # 4 MB: not worth a fork
    # A recompile: Claude's file is in the output (copied, checked, hashed: 3 a byte), the others grow (1 a byte).
    monkeypatch.setattr(schemas, "_write_cost", lambda target, items: sum(items) * (3 if target == "anthropic" else 1))
    assert schemas._written_aside(ordered) == ["anthropic"]


def test_a_tools_files_cost_weighs_its_bytes_by_what_writing_it_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the output: copied, checked and hashed (3 a byte); in the cache alone: a cached definition checked where
    it lies (1), a worker's copied (2)."""
    class Cached(NamedTuple):
        length: int

    class Spooled(Cached):
        pass

    monkeypatch.setattr(schemas, "spooled_bytes", lambda items: sum(item.length for item in items))
    monkeypatch.setattr(schemas, "SpooledLowered", Spooled)
    monkeypatch.setattr(schemas, "fits_one_request", lambda target, tools: target == "anthropic")
    items: Any = [Spooled(100), Cached(1000)]
    assert schemas._write_cost("anthropic", items) == 3 * 1100
    assert schemas._write_cost("openai-chat", items) == 1100 + 100


def test_a_spooled_definition_is_read_without_moving_the_file_offset_a_forked_child_shares(tmp_path: Path) -> None:
    """The parent's spool handles are inherited by the child that writes tools files aside: parent and child share
    each handle's file offset, so reading a definition must not depend on it nor move it."""
    spool = tmp_path / "spool.json"
    spool.write_bytes(b'{"a": 1}{"b": 2}')
    measure = Measure("sha256:x", 1, 1, "")
    kept = slices.Kept("t", False, None, [], {}, None, {}, offset=8, length=8, measure=measure)
    with spool.open("rb") as handle:
        lowered = slices.SpooledLowered(make_tool({"type": "object"}), kept, [], handle)
        os.lseek(handle.fileno(), 3, os.SEEK_SET)  # where the other process left the shared offset
        assert lowered.placed.content == b'{"b": 2}'
        assert lowered.definition == {"b": 2}
        assert os.lseek(handle.fileno(), 0, os.SEEK_CUR) == 3
