"""Stages that spread work over processes (provider lowering per target, model generation per chunk) must
give the same bytes and the same diagnostics as one process: results never depend on the machine's cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compiler.output import read_tree
from tests.support.paths import FIXTURES

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
