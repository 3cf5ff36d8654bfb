"""Issue 12: a big API compiles with every target and the stubs; inlined schemas have a per-tool budget; the
report lists every output file's size and creates its folder; progress shows on a terminal and nowhere else.

The inputs come from the synthetic generator (`tests/support/synthetic.py`), never from the real corpus. No
timing or memory assertions: `bench/bench_scale.py` measures those.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from compiler.config import Config, ProvidersConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.pipeline import adhoc_inputs, compile_project, read_catalog
from compiler.providers import codes
from compiler.providers.dialect import LoweringCache
from compiler.providers.lower import TargetResult, lower_target
from compiler.providers.registry import PROVIDERS, TARGETS, validate
from compiler.refs import RefResolver
from tests.support.cli import run_toolc
from tests.support.paths import ROOT
from tests.support.synthetic import MID, OVERSIZE_OPERATION, operation_ids, synthetic_openapi


def _write(tmp_path: Path, operations: int, *, oversize: bool = False) -> tuple[Path, dict[str, Any]]:
    document = synthetic_openapi(operations, oversize=oversize)
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(document))
    return path, document


def test_the_generator_is_deterministic_and_exact() -> None:
    assert json.dumps(synthetic_openapi(37)) == json.dumps(synthetic_openapi(37))
    assert len(operation_ids(synthetic_openapi(37))) == 37
    assert len(operation_ids(synthetic_openapi(37, oversize=True))) == 38


def test_mid_size_compiles_every_target_and_the_stubs(tmp_path: Path) -> None:
    spec, document = _write(tmp_path, MID, oversize=True)
    out, report = tmp_path / "out", tmp_path / "reports" / "deep" / "report.json"
    result = run_toolc("compile", spec, "--out", out, "--target", "all", "--codegen", "--report", report)
    assert result.exit_code == 0, result.stderr
    # every operation is a tool in the catalog
    catalog = json.loads((out / "catalog.json").read_text())
    ids = {tool["id"] for tool in catalog["tools"]}
    assert ids == {f"openapi:synthetic:{op}" for op in operation_ids(document)}
    # ... and, for every target, a tool in its file or a diagnostic saying why not
    data = json.loads(report.read_text())
    for target in TARGETS:
        names = json.loads((out / "schemas" / f"{target}.names.json").read_text())
        emitted = {entry["tool"] for entry in names["tools"].values()}
        left_out = {d["tool"] for d in data["diagnostics"]
                    if d["provider"] == target and d["severity"] in ("warning", "error")
                    and d["code"] in (codes.INLINE_OVER_BUDGET, codes.MALFORMED_SCHEMA, codes.INVALID_OUTPUT)}
        assert emitted | left_out == ids, target
        assert not emitted & left_out, target
    # the stubs: one typed function per tool, models shared
    stubs = (out / "python" / "synthetic" / "tools.py").read_text()
    assert all(f"def {name}" in stubs for name in ("list_family0", "create_family0", "put_wide_tree"))
    assert (out / "python" / "toolc_router" / "_tables.py").is_file()
    # the report: every output file with its size
    files = {str(p.relative_to(out).as_posix()): p.stat().st_size for p in out.rglob("*") if p.is_file()}
    assert data["files"] == files
    assert data["targets"]["anthropic"]["bytes"] == files["schemas/anthropic.json"]


def test_a_tool_over_the_inline_budget_shares_defs_or_is_left_out(tmp_path: Path) -> None:
    spec, _ = _write(tmp_path, 10, oversize=True)
    wide = f"openapi:synthetic:{OVERSIZE_OPERATION}"

    def lowered(budget: int, gemini_schema: Literal["parameters", "json-schema"] = "parameters",
                ) -> dict[str, TargetResult]:
        config = Config(root=tmp_path, providers=ProvidersConfig(max_inline_nodes=budget,
                                                                 gemini_schema=gemini_schema))
        diagnostics = Diagnostics()
        resolver = RefResolver(diagnostics)
        catalog = read_catalog(config, adhoc_inputs([spec], tmp_path), resolver, diagnostics)
        cache = LoweringCache()
        return {target: lower_target(catalog, resolver, target, config, cache) for target in ("anthropic", "gemini")}

    results = lowered(10_000)
    gemini = results["gemini"]
    over = [d for d in gemini.diagnostics if d.code == codes.INLINE_OVER_BUDGET]
    assert [(d.tool, d.severity.value, d.provider) for d in over] == [(wide, "warning", "gemini")]
    assert "providers.max_inline_nodes" in over[0].message and "gemini_schema: json-schema" in over[0].message
    # ... which is the way out: parametersJsonSchema shares $defs, so nothing is over budget there
    json_schema = lowered(10_000, "json-schema")["gemini"]
    assert not [d for d in json_schema.diagnostics if d.code == codes.INLINE_OVER_BUDGET]
    assert len(json_schema.lowered) == 11
    assert wide not in {item.tool.id for item in gemini.lowered}
    assert len(gemini.lowered) == 10

    anthropic = results["anthropic"]
    shared_defs = [d for d in anthropic.diagnostics if d.code == codes.SHARED_DEFS]
    assert [d.tool for d in shared_defs] == [wide]
    item = next(i for i in anthropic.lowered if i.tool.id == wide)
    schema = item.definition["input_schema"]
    assert set(schema["$defs"]) == {f"Wide{d}" for d in range(1, 15)}
    assert validate("anthropic", item.definition) == []
    assert len(json.dumps(schema)) < 20_000  # bundled: each definition once, not 2**15 copies
    # the other tools are still inlined exactly as before
    assert all("$defs" not in i.definition["input_schema"] for i in anthropic.lowered if i.tool.id != wide)

    # a budget big enough lets the wide tree inline again, for both
    roomy = lowered(100_000)
    assert not [d for r in roomy.values() for d in r.diagnostics
                if d.code in (codes.INLINE_OVER_BUDGET, codes.SHARED_DEFS)]


def test_report_into_a_missing_folder_creates_it(tmp_path: Path) -> None:
    spec, _ = _write(tmp_path, 5)
    report = tmp_path / "not" / "yet" / "there" / "report.json"
    result = run_toolc("compile", spec, "--out", tmp_path / "out", "--target", "none", "--no-codegen",
                       "--report", report)
    assert result.exit_code == 0, result.stderr
    assert json.loads(report.read_text())["files"] == {"catalog.json": (tmp_path / "out" / "catalog.json").stat().st_size,
                                                      "toolc.lock": (tmp_path / "out" / "toolc.lock").stat().st_size}


def test_report_that_cannot_be_written_is_a_diagnostic(tmp_path: Path) -> None:
    spec, _ = _write(tmp_path, 5)
    (tmp_path / "blocker").write_text("a file, not a folder")
    result = run_toolc("compile", spec, "--out", tmp_path / "out", "--target", "none", "--no-codegen",
                       "--report", tmp_path / "blocker" / "report.json")
    assert result.exit_code != 0
    assert "error[TC760]" in result.stderr and "Traceback" not in result.stderr


def _compile_with_stderr(tmp_path: Path, *extra: str, terminal: bool) -> str:
    """Run `toolc compile` in a fresh process with stderr on a pseudo-terminal or a pipe; return what it wrote."""
    spec, _ = _write(tmp_path, 20)
    command = [sys.executable, "-m", "compiler", "compile", str(spec), "--out", str(tmp_path / "out"),
               "--no-codegen", *extra]
    env = {**os.environ, "COLUMNS": "120"}
    if not terminal:
        done = subprocess.run(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr
    master, slave = pty.openpty()
    with subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=slave) as process:
        os.close(slave)
        chunks: list[bytes] = []
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            if not ready:
                process.kill()
                pytest.fail("no output from toolc on the pseudo-terminal")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=300) == 0
    os.close(master)
    return b"".join(chunks).decode()


def test_progress_shows_on_a_terminal(tmp_path: Path) -> None:
    shown = _compile_with_stderr(tmp_path, terminal=True)
    assert "toolc: lowered anthropic" in shown or "toolc: lowered gemini" in shown
    # Redrawn in place, up to every step: reading, the five stages of `pipeline._STAGES`, one per target.
    assert "\r\x1b[?25ltoolc: " in shown and "10/10" in shown
    assert "toolc: 20 tools from 1 sources" in shown


def test_no_progress_in_a_pipe_nor_under_quiet(tmp_path: Path) -> None:
    piped = _compile_with_stderr(tmp_path, terminal=False)
    assert "lowered" not in piped and "\r" not in piped
    assert "toolc: 20 tools from 1 sources" in piped
    quiet = _compile_with_stderr(tmp_path, "--quiet", terminal=True)
    assert "lowered" not in quiet and "\x1b[?25l" not in quiet and "20 tools" not in quiet  # (a pty adds \r to \n)


def test_big_provider_files_are_spooled_not_held(tmp_path: Path) -> None:
    from compiler.infra.output import FileSet

    spec, _ = _write(tmp_path, MID)
    build = compile_project(Config(root=tmp_path, codegen=False), adhoc_inputs([spec], tmp_path),
                            targets=("anthropic",), out_dir=tmp_path / "out")
    assert isinstance(build.files, FileSet)
    assert build.files.size("schemas/anthropic.json") >= FileSet.SPOOL_MIN
    assert build.files.spooled_path("schemas/anthropic.json") is not None
    tools = json.loads(build.files["schemas/anthropic.json"])
    assert len(tools) == len(build.providers["anthropic"].digests) == MID


@pytest.mark.parametrize("operations", [0, 1, 12])
def test_streamed_provider_files_are_the_canonical_encoding(tmp_path: Path, operations: int) -> None:
    from compiler.infra.serialize import canonical_json
    from compiler.providers import tokens

    spec, _ = _write(tmp_path, operations, oversize=operations == 12)
    build = compile_project(Config(root=tmp_path, codegen=False), adhoc_inputs([spec], tmp_path), targets=TARGETS,
                            out_dir=tmp_path / "out")
    for target in TARGETS:
        written = build.files[f"schemas/{target}.json"]
        tools = json.loads(written)
        assert written == canonical_json(tools), target
        summary = build.summary(target)
        assert summary["bytes"] == len(written)
        if summary["fits_one_request"]:  # the file holds the tools themselves: its tokens are counted exactly
            assert summary["tokens"] == tokens.count_bytes(written)


def test_toolset_files_cut_by_the_workers_equal_encoding_every_tool_again(tmp_path: Path) -> None:
    """The fit stage copies byte ranges of each target's tools file and adds up the workers' token counts
    (`providers/spans.py`); the old path decoded every tools file and encoded each toolset again. On the mid size
    (split into toolsets, OpenAI and Gemini over their request limits), both give the same bytes and tokens."""
    import bpe_openai

    from compiler.infra.serialize import canonical_json
    from compiler.providers import tokens
    from compiler.providers.schemas import tools_array

    encoding = bpe_openai.get_encoding("o200k_base")
    spec, _ = _write(tmp_path, MID, oversize=True)
    build = compile_project(Config(root=tmp_path, codegen=False), adhoc_inputs([spec], tmp_path), targets=TARGETS,
                            out_dir=tmp_path / "out")
    assert not build.diagnostics.has_errors
    index = json.loads(build.files["schemas/toolsets/index.json"])
    assert len(index["toolsets"]) > 2
    for target in TARGETS:
        again = {item.tool.id: item.definition  # the old path: every definition in hand, encoded again
                 for item in lower_target(build.catalog, build.resolver, target, build.config).lowered}
        for name, entry in index["toolsets"].items():
            row = entry["targets"][target]
            ids = [tool_id for tool_id in entry["tools"] if tool_id in again]
            expected = canonical_json(tools_array(target, [again[tool_id] for tool_id in ids]))
            assert build.files[row["file"]] == expected, (target, name)
            assert row["tokens"] == len(encoding.encode_ordinary(expected.decode())), (target, name)
        for tool_id, definition in again.items():
            direct = len(encoding.encode_ordinary(canonical_json(definition).decode()))
            assert index["tools"][tool_id]["tokens"][target] == direct
        files = index["targets"][target]["files"]
        everything = canonical_json(tools_array(target, list(again.values())))
        assert files["all"]["all_tools_tokens"] == tokens.count_text(everything.decode())  # in pieces: > 1 MB
        if PROVIDERS[target].deferral is not None:  # written from spans too: the bytes of encoding it again
            deferred = build.files[f"schemas/{target}.deferred.json"]
            value = json.loads(deferred)
            assert deferred == canonical_json(value), target
            functions = [tool for item in value[1:] for tool in item.get("tools", [item])]
            by_name = {definition["name"]: definition for definition in again.values()}
            assert sorted(tool["name"] for tool in functions) == sorted(by_name), target
            assert all(tool == {**by_name[tool["name"]], "defer_loading": True} for tool in functions), target
    assert not all(index["targets"][target]["files"]["all"]["fits"] for target in TARGETS)
