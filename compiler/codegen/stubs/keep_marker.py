"""The `# toolc: keep` marker (`codegen.stubs.keep`), found without libcst: a previous tools.py with no marker
line is neither parsed nor makes a compile import libcst (0.3 s)."""

from __future__ import annotations

import re

MARKER = re.compile(r"#\s*toolc:\s*keep\s*\Z")
"""A function's leading comment that marks it kept."""
_AFTER_PREFIX = re.compile(r"[^\S\r\n]*keep[^\S\r\n]*(?:[\r\n]|\Z)")
"""What follows `toolc:` on a line that is only a `# toolc: keep` comment (the only kind `MARKER` accepts on a
function; the docstring of every generated tools.py mentions the marker, but never alone on a line)."""
_PREFIX = "toolc:"


def has_keep_line(module: str) -> bool:
    """Whether a line of `module` is only `# toolc: keep` (blanks around its words; lines end at CR or LF).

    Checked before parsing (libcst takes seconds on a big tools.py), by looking only where `toolc:` occurs:
    a pattern anchored at every line break scanned Microsoft Graph's 22 MB tools.py in 0.3 s, `str.find` does
    it in milliseconds. The blanks walked back over belong to one line before one occurrence, so a hostile
    module costs linear time."""
    found = module.find(_PREFIX)
    while found != -1:
        if _only_comment_before(module, found) and _AFTER_PREFIX.match(module, found + len(_PREFIX)):
            return True
        found = module.find(_PREFIX, found + 1)
    return False


def _only_comment_before(module: str, position: int) -> bool:
    """Whether the line holding `position` has only blanks, one `#` and blanks before it."""
    index = _blanks_before(module, position)
    if index == 0 or module[index - 1] != "#":
        return False
    index = _blanks_before(module, index - 1)
    return index == 0 or module[index - 1] in "\r\n"


def _blanks_before(module: str, position: int) -> int:
    """The start of the run of blanks (whitespace but CR and LF) that ends at `position`."""
    while position > 0 and module[position - 1].isspace() and module[position - 1] not in "\r\n":
        position -= 1
    return position
