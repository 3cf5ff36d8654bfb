"""The README is part of the product: its quick start is what CI runs, and it lists every diagnostic code."""

from __future__ import annotations

import re

from tests.support import code_table
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


def _rows(table: str) -> dict[str, str]:
    return {row.split(" | ", 1)[0].removeprefix("| "): row for row in table.splitlines() if row.startswith("| TC")}


def test_the_table_of_codes_is_the_registrys() -> None:
    """The README's table is `python -m tests.support.code_table`'s output: a code added to the registry, or a
    severity, summary or declaring module changed, shows here by code until the table is regenerated."""
    documented = code_table.readme_table(README)
    assert documented, f"README.md lost the markers around its table of codes: {code_table.START!r}"
    wanted, found = _rows(code_table.render_table()), _rows(documented)
    assert len(wanted) > 100, "no codes rendered: the registry or the pattern is stale"
    differences = [f"{code}: README has {found.get(code, 'no row')!r}, the registry renders {row!r}"
                   for code, row in wanted.items() if found.get(code) != row]
    differences += [f"{code}: README has a row the registry does not: {row!r}" for code, row in found.items()
                    if code not in wanted]
    assert differences == [], "run `python -m tests.support.code_table`:\n" + "\n".join(differences)
    assert documented == code_table.render_table()  # the header, order and markers too


def test_every_test_path_the_readme_names_exists() -> None:
    ours = "\n".join(line for line in README.splitlines() if not line.startswith("# "))  # not a user's own file
    named = set(re.findall(r"(?<![\w/])tests/[\w/]+\.py", ours))
    assert named, "no test paths found: the pattern is stale"
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
