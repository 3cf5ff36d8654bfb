"""Stages that spread work over processes (provider lowering per target, model generation per chunk) must
give the same bytes and the same diagnostics as one process: results never depend on the machine's cores."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen import python as codegen_emit
from compiler.codegen.stubs import stub_functions
from compiler.config import Config
from compiler.infra.output import read_tree
from compiler.infra.parallel import Background, Claims, can_fork, cores, fork_each, here_and_forked
from compiler.pipeline import adhoc_inputs, compile_project
from tests.support.paths import FIXTURES
from tests.support.synthetic import MID, synthetic_openapi

STRIPE = FIXTURES / "corpus" / "openapi" / "stripe.json"  # cyclic: the resolver prunes and reports recursion


def _compile(out: Path, jobs: str) -> tuple[dict[str, bytes], dict[str, object]]:
    report = out.parent / f"report-{jobs}.json"
    subprocess.run([sys.executable, "-m", "compiler", "compile", str(STRIPE), "--out", str(out), "--no-codegen",
                    "--report", str(report)], check=True, capture_output=True, env={**os.environ, "TOOLC_JOBS": jobs})
    return read_tree(out), json.loads(report.read_text())


def test_one_process_and_several_give_the_same_output(tmp_path: Path) -> None:
    serial_files, serial_report = _compile(tmp_path / "serial", "1")
    parallel_files, parallel_report = _compile(tmp_path / "parallel", "2")
    assert serial_files == parallel_files
    assert serial_report == parallel_report
    assert {"schemas/openai-chat.json", "schemas/gemini.json", "toolc.lock"} <= serial_files.keys()


# -- work that runs beside the parent: `parallel.Background` and the codegen paths built on it -------------------

def test_background_hands_back_its_value() -> None:
    payload = {"big": b"x" * (3 << 20), "list": [1, 2, 3]}  # bigger than a pipe's buffer: it travels as a file
    assert Background(lambda: payload).result() == payload


class _Note:
    """A container the collector tracks, as it tracks a `Diagnostic`."""

    def __init__(self, index: int) -> None:
        self.index = index


def test_a_result_is_kept_out_of_the_collectors_generations_until_the_compile_unfreezes() -> None:
    """A worker's result is a stage's output, alive to the end of the compile: frozen as it is unpickled, the
    collections after it never rescan it (Microsoft Graph's 236,000 loss notes: 1.2 s of the parent's CPU)."""
    gc.collect()
    try:
        notes = Background(lambda: [_Note(i) for i in range(1000)]).result()
        tracked = {id(found) for generation in range(3) for found in gc.get_objects(generation)}
        assert gc.isenabled() and not any(id(note) in tracked for note in notes)
    finally:
        gc.unfreeze()
    assert all(gc.is_tracked(note) for note in notes)


def test_background_raises_the_childs_exception_in_the_parent() -> None:
    def fail() -> None:
        raise KeyError("from the child")

    with pytest.raises(KeyError, match="from the child"):
        Background(fail).result()


def test_a_killed_background_child_is_memory_running_out() -> None:
    with pytest.raises(MemoryError, match="signal 9"):
        Background(lambda: os.kill(os.getpid(), signal.SIGKILL)).result()
    with pytest.raises(RuntimeError, match="exited with code 3"):
        Background(lambda: os._exit(3)).result()


def test_a_cancelled_background_child_stops_and_leaves_nothing() -> None:
    leftovers = set(Path(tempfile.gettempdir()).glob("toolc-background-*"))
    work = Background(lambda: time.sleep(60))
    work.cancel()
    assert set(Path(tempfile.gettempdir()).glob("toolc-background-*")) == leftovers


def _python_files(tmp_path: Path, name: str, *, jobs: str, piece: int, monkeypatch: pytest.MonkeyPatch
                  ) -> tuple[dict[str, bytes], list[dict[str, object]]]:
    """A codegen compile of the synthetic mid size, with the thresholds low enough for its 251 tools to take the
    background-router and piece-pool paths when `jobs` allows more than one process."""
    spec = tmp_path / "synthetic.json"
    if not spec.exists():
        spec.write_text(json.dumps(synthetic_openapi(MID, oversize=True)))
    monkeypatch.setenv("TOOLC_JOBS", jobs)
    monkeypatch.setattr(codegen_emit, "BACKGROUND_MIN_TOOLS", 10)
    monkeypatch.setattr(stub_functions, "PARALLEL_MIN_STUBS", 10)
    monkeypatch.setattr(stub_functions, "PIECE", piece)
    build = compile_project(Config(root=tmp_path), adhoc_inputs([spec], tmp_path), targets=("openai-chat",),
                            out_dir=tmp_path / name)
    files = {path: build.files[path] for path in sorted(build.files) if path.startswith("python/")}
    return files, [diagnostic.to_json() for diagnostic in build.diagnostics]


def test_router_beside_the_stubs_and_stubs_in_pieces_give_the_same_code(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    class CountedBackground(Background[Any]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started.append("router")
            super().__init__(*args, **kwargs)

    class CountedPool(ProcessPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started.append("pieces")
            super().__init__(*args, **kwargs)

    whole, whole_diagnostics = _python_files(tmp_path, "whole", jobs="1", piece=100_000, monkeypatch=monkeypatch)
    pieces, pieces_diagnostics = _python_files(tmp_path, "pieces", jobs="1", piece=16, monkeypatch=monkeypatch)
    assert started == []
    monkeypatch.setattr(codegen_emit, "Background", CountedBackground)
    monkeypatch.setattr(stub_functions, "ProcessPoolExecutor", CountedPool)
    forked, forked_diagnostics = _python_files(tmp_path, "forked", jobs="2", piece=16, monkeypatch=monkeypatch)
    assert started == (["router", "pieces"] if can_fork() and cores() >= 2 else []), started
    assert whole == pieces == forked
    assert whole_diagnostics == pieces_diagnostics == forked_diagnostics
    assert any(path.endswith("/tools.py") for path in whole) and "python/toolc_router/_tables.json" in whole


def test_an_exception_that_does_not_pickle_still_fails_the_parent_by_name() -> None:
    class Unpicklable(Exception):
        def __reduce__(self) -> Any:
            raise TypeError("no")

    def fail() -> None:
        raise Unpicklable("local class")

    with pytest.raises(RuntimeError, match="Unpicklable: local class"):
        Background(fail).result()


def test_fork_each_keeps_task_order_and_reports_each_as_it_ends() -> None:
    def task(index: int, pause: float) -> tuple[int, int]:
        time.sleep(pause)
        return index, os.getpid()

    ended: list[int] = []
    pauses = [0.3, 0.0, 0.1, 0.0]
    results = fork_each([partial(task, i, pause) for i, pause in enumerate(pauses)], 2,
                        done=lambda index, _result: ended.append(index))
    assert [index for index, _pid in results] == [0, 1, 2, 3]
    assert sorted(ended) == [0, 1, 2, 3]
    assert len({pid for _index, pid in results} | {os.getpid()}) == 5  # a child per task, none in this process


def test_claims_hand_each_index_to_one_worker_in_runs_that_shrink() -> None:
    claims = Claims(1000, 2)
    taken = list(claims.runs())
    assert [index for run in taken for index in run] == list(range(1000))
    sizes = [len(run) for run in taken]
    assert sizes[0] == 125 and sizes == sorted(sizes, reverse=True) and sizes[-1] == 1  # an eighth of what is left
    assert not claims.take()


@pytest.mark.skipif(not can_fork(), reason="claims are shared by forked workers")
def test_forked_workers_claim_every_index_once_and_the_free_one_takes_more() -> None:
    claims = Claims(400, 2)

    def work(pause: float) -> list[int]:
        mine = []
        for run in claims.runs():
            mine.extend(run)
            time.sleep(pause * len(run))
        return mine

    slow, quick = fork_each([partial(work, 0.004), partial(work, 0.0005)], 2)
    assert sorted(slow + quick) == list(range(400))
    assert len(quick) > 2 * len(slow)  # dealt out beforehand, each would have taken 200


@pytest.mark.skipif(not can_fork(), reason="the other tasks run in forked children")
def test_here_and_forked_runs_the_first_task_here_and_each_other_in_a_child_of_its_own() -> None:
    claims = Claims(300, 3)

    def work() -> tuple[int, list[int]]:
        return os.getpid(), [index for run in claims.runs() for index in run]

    results = here_and_forked([work, work, work])
    pids = [pid for pid, _taken in results]
    assert pids[0] == os.getpid() and len(set(pids)) == 3  # the first here: no child of its own to wait on
    assert sorted(index for _pid, taken in results for index in taken) == list(range(300))
    assert multiprocessing.active_children() == []


@pytest.mark.skipif(not can_fork(), reason="the other tasks run in forked children")
def test_here_and_forked_stops_its_children_when_the_task_here_fails(tmp_path: Path) -> None:
    def slow() -> None:
        time.sleep(60)
        (tmp_path / "finished").touch()

    def fail() -> None:
        raise ValueError("the task here failed")

    with pytest.raises(ValueError, match="the task here failed"):
        here_and_forked([fail, slow])
    assert multiprocessing.active_children() == []  # killed, not left running or waited for
    with pytest.raises(ValueError, match="a child failed"):
        here_and_forked([lambda: None, partial(_raise, "a child failed")])
    assert not (tmp_path / "finished").exists()


def _raise(message: str) -> None:
    raise ValueError(message)


def test_fork_each_stops_the_others_when_a_task_fails(tmp_path: Path) -> None:
    def slow(name: str) -> None:
        (tmp_path / name).touch()
        time.sleep(60)

    def fail() -> None:
        raise ValueError("task 1 failed")

    with pytest.raises(ValueError, match="task 1 failed"):
        fork_each([partial(slow, "first"), fail, partial(slow, "third")], 2)
    assert multiprocessing.active_children() == []  # the running task was killed, not left behind
    assert not (tmp_path / "third").exists()  # and the waiting one never started
