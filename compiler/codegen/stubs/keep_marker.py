"""The `# toolc: keep` marker (`codegen.stubs.keep`), found without libcst: a previous tools.py with no marker
line is neither parsed nor makes a compile import libcst (0.3 s)."""

from __future__ import annotations

import re

MARKER = re.compile(r"#\s*toolc:\s*keep\s*\Z")
"""A function's leading comment that marks it kept."""
_KEEP_LINE = re.compile(r"(?:\A|[\r\n])[^\S\r\n]*#[^\S\r\n]*toolc:[^\S\r\n]*keep[^\S\r\n]*(?:[\r\n]|\Z)")
"""A line that is only a `# toolc: keep` comment (the only kind `MARKER` accepts on a function; the docstring of
every generated tools.py mentions the marker, but never alone on a line). Checked before parsing: libcst takes
seconds on a big tools.py."""


def has_keep_line(module: str) -> bool:
    return _KEEP_LINE.search(module) is not None
