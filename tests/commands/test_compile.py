"""`toolc compile`: diagnostics with codes and locations, exit codes, the report, determinism, atomic output."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler import pipeline
from compiler.commands.support import print_diagnostics
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.output import read_tree
from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES, ROOT

LISTING = FIXTURES / "mcp" / "mcp-server-time.json"


def test_adhoc_compile_writes_catalog_and_report(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"
    result = run_toolc("compile", LISTING, FIXTURES / "listings" / "mixed.json", "--out", out, "--report", report)
    assert result.exit_code == 0, result.stderr
    catalog = json.loads((out / "catalog.json").read_text())
    assert [t["id"] for t in catalog["tools"]] == [
        "mcp:mcp-server-time:convert_time",
        "mcp:mcp-server-time:get_current_time",
        "mcp:mixed:kept_2020",
        "mcp:mixed:kept_draft7",
    ]
    data = json.loads(report.read_text())
    assert data["tools"] == 4
    assert data["sources"]["mixed"]["tools"] == 2
    assert data["sources"]["mixed"]["warnings"] == 5
    assert {d["code"] for d in data["diagnostics"]} >= {"TC351", "TC352"}
    assert set(data["diagnostics"][0]) >= {"code", "severity", "source", "tool", "pointer", "message"}
    assert "warning[TC351]" in result.stderr


def test_strict_turns_warnings_into_failure(tmp_path: Path) -> None:
    result = run_toolc("compile", FIXTURES / "listings" / "mixed.json", "--out", tmp_path / "o", "--strict")
    assert result.exit_code == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("name", "code", "where"),
    [
        ("broken.json", "TC101", "broken.json:4:"),
        ("broken.yaml", "TC102", "broken.yaml:7:1"),
        ("neither.json", "TC104", "neither.json"),
        ("missing.json", "TC103", "missing.json"),
    ],
)
def test_bad_input_gets_a_located_diagnostic(tmp_path: Path, name: str, code: str, where: str) -> None:
    report = tmp_path / "report.json"
    result = run_toolc("compile", FIXTURES / "invalid" / name, "--out", tmp_path / "o", "--report", report)
    assert result.exit_code == 1
    assert f"error[{code}]" in result.stderr and where in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert json.loads(report.read_text())["diagnostics"][0]["code"] == code


def test_ten_thousand_levels_of_nesting(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"tools": [{"name": "d", "inputSchema": {"type": "object", "x": ' + "[" * 10_000 + "]" * 10_000 + "}}]}")
    result = run_toolc("compile", deep, "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert "error[TC105]" in result.stderr


def test_a_failed_compile_leaves_previous_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_toolc("compile", LISTING, "--out", out).exit_code == 0
    before = read_tree(out)
    (out / "catalog.json").touch()
    stamp = (out / "catalog.json").stat().st_mtime_ns
    result = run_toolc("compile", LISTING, FIXTURES / "invalid" / "broken.json", "--out", out)
    assert result.exit_code == 1
    assert read_tree(out) == before
    assert (out / "catalog.json").stat().st_mtime_ns == stamp
    assert "left as it was" in result.stderr


def test_an_internal_error_is_a_diagnostic_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(build: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "emit_catalog", explode)
    monkeypatch.delenv("TOOLC_DEBUG", raising=False)
    result = run_toolc("compile", LISTING, "--out", tmp_path / "o")
    assert result.exit_code == 3
    assert "error[TC999]: internal error: RuntimeError: boom" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_errors_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "toolc.yaml"
    config.write_text("outptu: generated\n")
    result = run_toolc("compile", "-c", config)
    assert result.exit_code == 2
    assert "error[TC110]" in result.stderr and "outptu" in result.stderr


def test_duplicate_source_ids_and_unknown_targets(tmp_path: Path) -> None:
    config = tmp_path / "toolc.yaml"
    shutil.copy(LISTING, tmp_path / "a.json")
    config.write_text("recordings:\n  - {id: same, path: a.json}\n  - {id: same, path: a.json}\n")
    result = run_toolc("compile", "-c", config, "--target", "openai-chat,nope")
    assert result.exit_code == 2, "both are project-file or command-line errors (README: exit 2)"
    assert "error[TC106]" in result.stderr and "error[TC107]" in result.stderr
    alone = run_toolc("compile", LISTING, "--out", tmp_path / "out", "--target", "claud")
    assert alone.exit_code == 2 and "error[TC107]" in alone.stderr
    broken_input = run_toolc("compile", LISTING, FIXTURES / "invalid" / "broken.json", "--out", tmp_path / "out",
                             "--target", "claud")
    assert broken_input.exit_code == 1, "a broken input is a failed compile, whatever else is wrong"


def _compile_default_project(out: Path, seed: str) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-m", "compiler", "compile", "-c", str(ROOT / "toolc.yaml"), "--out", str(out)],
                   check=True, env=env, capture_output=True, cwd=ROOT)
    return read_tree(out)


def test_default_project_is_deterministic_and_matches_the_golden_record(tmp_path: Path) -> None:
    first = _compile_default_project(tmp_path / "a", "1")
    second = _compile_default_project(tmp_path / "b", "2")
    assert first == second
    assert first.keys() >= {"catalog.json"}
    committed = read_tree(ROOT / "generated")
    stale = sorted(p for p in first.keys() | committed.keys() if first.get(p) != committed.get(p))
    assert not stale, f"generated/ is stale; run `toolc compile` and commit: {stale[:10]}"


def test_output_does_not_depend_on_where_the_project_lives(tmp_path: Path) -> None:
    """A clone in another folder compiles to the same bytes (no folder names, no absolute paths)."""
    elsewhere = tmp_path / "somewhere-else"
    for relative in ("toolc.yaml", "fixtures/mcp", "fixtures/openapi/params.yaml",
                     "fixtures/corpus/oai-examples/v3.0/petstore-expanded.yaml"):
        source, target = ROOT / relative, elsewhere / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    subprocess.run([sys.executable, "-m", "compiler", "compile", "-c", str(elsewhere / "toolc.yaml")],
                   check=True, capture_output=True, cwd=tmp_path)
    assert read_tree(elsewhere / "generated") == read_tree(ROOT / "generated")


def test_output_folder_and_files_get_the_umask_modes_not_the_staging_folder_s(tmp_path: Path) -> None:
    """The output is built in a private temporary folder (mkdtemp: 0700) and swapped in: the swapped-in folder must
    get ordinary modes, as `cp -r` would, so that a service account can read and serve it."""
    out = tmp_path / "out"
    previous = os.umask(0o022)
    try:
        for _ in range(2):  # a first compile, then one that replaces an existing folder
            result = run_toolc("compile", LISTING, "--out", out, "--no-codegen")
            assert result.exit_code == 0, result.stderr
            folders = [out, *(path for path in out.rglob("*") if path.is_dir())]
            assert {oct(path.stat().st_mode & 0o777) for path in folders} == {"0o755"}
            files = [path for path in out.rglob("*") if path.is_file()]
            assert files and {oct(path.stat().st_mode & 0o777) for path in files} == {"0o644"}
    finally:
        os.umask(previous)


@contextlib.contextmanager
def _sigint_ignored_and_blocked() -> Iterator[None]:
    """SIGINT as this process has it when a non-interactive shell started it in the background (`pytest &` in a
    script: POSIX has such a job ignore SIGINT), and blocked as well. Both survive fork and exec, so a child
    started meanwhile keeps them unless it resets them itself."""
    previous_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        signal.signal(signal.SIGINT, previous_handler)


def _as_a_terminal_starts_it() -> None:
    """In the child, before exec: SIGINT delivered and at its default, as for a command typed at a terminal (an
    ignored SIGINT at start makes Python install no KeyboardInterrupt handler, and the compile runs to the end)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def test_ctrl_c_exits_130_with_one_line_and_leaves_the_output_alone(tmp_path: Path) -> None:
    """A real SIGINT to the process group, as a terminal sends it, in the middle of a compile that takes seconds
    (GitHub's 1,223 operations with stubs): exit 130, one line on stderr (no traceback from the compile or its
    worker processes), and the previous output folder exactly as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "marker").write_text("previous output\n")
    with _sigint_ignored_and_blocked():  # always the worst case: this process started as a script's `pytest &`
        process = subprocess.Popen([str(Path(sys.executable).parent / "toolc"), "compile",
                                    str(FIXTURES / "corpus" / "openapi" / "github.json"), "--out", str(out)],
                                   cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, preexec_fn=_as_a_terminal_starts_it)
    time.sleep(1.5)
    assert process.poll() is None, "the compile ended before it could be interrupted"
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stderr.splitlines() == ["toolc: interrupted; nothing was written (the output folder is as it was)"]
    assert read_tree(out) == {"marker": b"previous output\n"}
    # No staging folder left behind. The build cache beside the output may hold what the stages finished before
    # the interrupt: content-keyed entries, each written whole (never a `.partial`), which only speed up the retry.
    assert sorted(path.name for path in tmp_path.iterdir()) in (["out"], [".toolc-cache", "out"])
    cache = tmp_path / ".toolc-cache"
    assert not [path.name for path in cache.glob("*") if path.name.endswith(".partial")]


def test_a_lost_file_ref_costs_only_the_tools_that_need_it(tmp_path: Path) -> None:
    """A `$ref` to a missing file fails neither the compile nor `toolc list`: the operation whose response needs it
    keeps its input side and loses only its output schema (TC318), the one whose parameter needs it is skipped
    (TC302, naming the ref), and every message says which ref without pointing at another line."""
    document = FIXTURES / "openapi" / "lost-refs" / "api.yaml"
    result = run_toolc("compile", document, "--out", tmp_path / "out", "--no-codegen")
    assert result.exit_code == 0, result.stderr
    catalog = {tool["name"]: tool for tool in json.loads((tmp_path / "out" / "catalog.json").read_text())["tools"]}
    assert sorted(catalog) == ["getReport", "health"]
    assert "output_schema" not in catalog["getReport"] and "id" in catalog["getReport"]["input_schema"]["properties"]
    assert "output_schema" in catalog["health"]
    assert "warning[TC204]" in result.stderr and "error[" not in result.stderr
    assert "openapi:api:getReport: warning[TC318]: no output schema: it needs $ref 'schemas/report.yaml#/Report'" \
        in result.stderr
    assert "openapi:api:search: warning[TC302]: not a tool: its input needs $ref 'schemas/filter.yaml#/Filter'" \
        in result.stderr
    listed = run_toolc("list", document)
    assert listed.exit_code == 0 and "openapi:api:getReport" in listed.stdout


def test_a_big_api_says_which_file_to_send(tmp_path: Path) -> None:
    """GitHub's 1,223 operations: one warning per target for the fact (TC771, not also TC420), the summary line
    names the form to send per target, and schemas/README.md compares every form with its start-of-request tokens."""
    result = run_toolc("compile", FIXTURES / "corpus" / "openapi" / "github.json", "--out", tmp_path / "out",
                       "--no-codegen")
    assert result.exit_code == 0, result.stderr
    assert "warning[TC420]" not in result.stderr and result.stderr.count("warning[TC771]") == 3
    summary = result.stderr.strip().splitlines()[-1]
    assert summary.startswith("toolc: too big to send every tool: anthropic native deferral; gemini a toolset")
    assert "openai-responses native deferral" in summary and "schemas/README.md" in summary
    guide = (tmp_path / "out" / "schemas" / "README.md").read_text()
    assert "## openai-responses\n\nSend `openai-responses.deferred.json`: native deferral." in guide
    assert "| every tool | (none written) |" in guide and "| a toolset per task | one of " in guide


def _note(message: str, tool: str, provider: str, code: str = "TC402") -> Diagnostic:
    return Diagnostic.of(code, message, source="g.json", tool=f"openapi:g:{tool}", pointer="/properties/id",
                         provider=provider)


def test_verbose_prints_notes_grouped_by_code_and_reason(capsys: pytest.CaptureFixture[str]) -> None:
    """-v on a big API: one header per code and reason with its count per target, its first three notes as
    toolc prints any diagnostic, then how many more; a note alone in its group prints as itself."""
    notes = [_note("dropped readOnly (annotations, not for the model)", f"op{i}", provider)
             for i in range(4) for provider in ("openai-chat", "gemini")]
    renamed = [_note(f"name 'a.b{i}' written as 'a_b{i}'", f"op{i}", "anthropic", code="TC415") for i in range(2)]
    alone = _note("dropped discriminator (annotations, not for the model)", "op9", "gemini")
    warning = Diagnostic.of("TC205", "recursive $ref pruned", source="g.json", tool="openapi:g:op1")
    print_diagnostics(Diagnostics([*reversed(notes), *renamed, alone, warning]), verbose=True)
    assert capsys.readouterr().err.splitlines() == [
        warning.render(),
        alone.render(),
        "info[TC402]: 8 notes: dropped readOnly (annotations, not for the model) (gemini 4, openai-chat 4)",
        *(f"  {note.render()}" for note in sorted(notes, key=Diagnostic.sort_key)[:3]),
        "  ... and 5 more (--report lists every one)",
        "info[TC415]: 2 notes: name … written as … (anthropic 2)",
        *(f"  {note.render()}" for note in renamed),
    ]
    print_diagnostics(Diagnostics([*notes, warning]))
    assert capsys.readouterr().err.splitlines() == [warning.render()]  # without -v, no notes
