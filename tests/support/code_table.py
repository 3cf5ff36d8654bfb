"""The README's table of diagnostic codes, generated from the registry (`compiler/codes.py`).

`python -m tests.support.code_table` rewrites the table between the README's markers; `tests/test_readme.py`
fails, naming the rows, when the README's table is not what this renders. The "where" column is the module that
declares the code's constant (`NETWORK_REF = "TC201"`), found by reading the sources, so it cannot go stale.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

from compiler.codes import CODES, Code
from tests.support.paths import ROOT

README = ROOT / "README.md"
SCANNED = (ROOT / "compiler", ROOT / "templates" / "router" / "static")
"""Where toolc's codes are raised: the compiler and the router's static modules."""
REGISTRY = "compiler/codes.py"
START = f"<!-- diagnostic codes: generated from {REGISTRY} by `python -m tests.support.code_table` -->"
END = "<!-- end of diagnostic codes -->"
HEADER = ("| code | severity | meaning | where |", "|---|---|---|---|")

_DECLARATION = re.compile(r'^\s*[A-Z][A-Z0-9_]* = "(TC\d{3})"', re.M)
_LITERAL = re.compile(r'"(TC\d{3})"')
_MENTION = re.compile(r"(?<![\w-])(TC\d{3})(?:-(TC\d{3}))?")


def scanned_files() -> Iterator[Path]:
    for folder in SCANNED:
        yield from sorted(path for path in folder.rglob("*.py") if path != ROOT / REGISTRY)


def _where(path: Path) -> str:
    """Paths under `compiler/` as the README writes them (`infra/loading.py`); others from the repository root."""
    return str(path.relative_to(ROOT / "compiler" if path.is_relative_to(ROOT / "compiler") else ROOT))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def declarations() -> dict[str, list[str]]:
    """Code → the modules that declare a constant for it (`where` of the README)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in scanned_files():
        for code in _DECLARATION.findall(path.read_text()):
            found[code].append(_where(path))
    return dict(found)


def _places(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Code (the pattern's first group) → `file:line` of each match."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in scanned_files():
        text = path.read_text()
        for match in pattern.finditer(text):
            found[match.group(1)].append(f"{_where(path)}:{_line(text, match.start())}")
    return dict(found)


def literals() -> dict[str, list[str]]:
    """Every string literal `"TCnnn"`: the codes toolc raises."""
    return _places(_LITERAL)


def mentions() -> dict[str, list[str]]:
    """Every `TCnnn` in code, docstrings and comments but the upper end of a range (`TC201-TC249` reserves a
    block; TC249 need not exist)."""
    return _places(_MENTION)


def severity_cell(entry: Code) -> str:
    return entry.severity.value + (f", {entry.also.value}" if entry.also else "")


def render_rows(codes: Mapping[str, Code], declared: Mapping[str, list[str]]) -> list[str]:
    rows = []
    for code, entry in codes.items():
        where = ", ".join(f"`{module}`" for module in declared.get(code, []))
        rows.append(f"| {code} | {severity_cell(entry)} | {entry.meaning()} | {where} |")
    return rows


def render_table() -> str:
    table = "\n".join((*HEADER, *render_rows(CODES, declarations())))
    return f"{START}\n\n{table}\n\n{END}"  # blank lines: a Markdown table must not touch an HTML block


def readme_table(readme: str) -> str:
    """The README's table with its markers, or "" when a marker is missing."""
    if START not in readme or END not in readme:
        return ""
    return START + readme.split(START, 1)[1].split(END, 1)[0] + END


def rewrite(readme: str) -> str:
    current = readme_table(readme)
    if not current:
        raise SystemExit(f"README.md has no markers: put {START!r} and {END!r} around the table of codes")
    return readme.replace(current, render_table())


def main() -> None:
    README.write_text(rewrite(README.read_text()))


if __name__ == "__main__":
    main()
