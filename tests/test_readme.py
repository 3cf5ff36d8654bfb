"""The README is part of the product: its quick start is what CI runs, and it lists every diagnostic code."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()


def _quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in section.strip().splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    commands = _quick_start()
    assert len(commands) == 2
    assert "toolc compile" in commands[0]
    assert "pytest" in commands[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert commands[1] in ci_lines


def test_every_diagnostic_code_is_documented() -> None:
    declared = set()
    for path in (ROOT / "compiler").rglob("*.py"):
        declared.update(re.findall(r'^[A-Z_]+ = "(TC\d{3})"', path.read_text(), re.M))
    documented = set(re.findall(r"^\| (TC\d{3}) \|", README, re.M))
    assert declared, "no codes found: the pattern is stale"
    assert sorted(declared - documented) == []


def test_every_test_path_the_readme_names_exists() -> None:
    ours = "\n".join(line for line in README.splitlines() if not line.startswith("# "))  # not a user's own file
    named = set(re.findall(r"(?<![\w/])tests/[\w/]+\.py", ours))
    assert named, "no test paths found: the pattern is stale"
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
