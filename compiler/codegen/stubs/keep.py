"""User edits that survive regeneration: the `# toolc: keep` marker.

Put the comment `# toolc: keep` on its own line directly above a generated function (above its decorators,
if you add any) in `python/<package>/tools.py`. On the next compile, that function is taken from the previous
output with libcst, byte for byte (comments and formatting included), and replaces the freshly generated
function of the same name. Only top-level functions are carried over; the rest of the module is regenerated.

A kept function whose tool has disappeared from the listing is still kept (appended after the generated
functions, so nothing a user wrote is ever dropped silently) and reported with warning TC606; delete it, or
remove the marker, to let it go. A previous module that contains the marker but no longer parses is an error
(TC607): the compile stops and the file stays as it is, rather than losing the edits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst

from compiler.codegen.stubs.keep_marker import MARKER, has_keep_line


def _is_marked(node: libcst.FunctionDef) -> bool:
    return any(line.comment is not None and MARKER.match(line.comment.value) for line in node.leading_lines)


def kept_functions(previous: str) -> dict[str, libcst.FunctionDef]:
    """The marked top-level functions of a previous module, by name. Raises libcst.ParserSyntaxError (only when
    the module has a marker line: without one it is not parsed)."""
    if not has_keep_line(previous):
        return {}
    module = libcst.parse_module(previous)
    return {
        statement.name.value: statement
        for statement in module.body
        if isinstance(statement, libcst.FunctionDef) and _is_marked(statement)
    }


@dataclass(frozen=True)
class Merged:
    code: str
    orphaned: tuple[str, ...]


def merge_kept(code: str, kept: Mapping[str, libcst.FunctionDef]) -> Merged:
    """Swap the kept functions into freshly generated `code`; kept functions with no namesake go at the end."""
    if not kept:
        return Merged(code, ())
    module = libcst.parse_module(code)
    body: list[libcst.CSTNode] = []
    replaced: list[str] = []
    for statement in module.body:
        if isinstance(statement, libcst.FunctionDef) and statement.name.value in kept:
            body.append(kept[statement.name.value])
            replaced.append(statement.name.value)
        else:
            body.append(statement)
    orphaned = sorted(set(kept) - set(replaced))
    body.extend(_with_blank_lines(kept[name]) for name in orphaned)
    new_module = module.with_changes(body=_statements(body))
    return Merged(new_module.code, tuple(orphaned))


def _with_blank_lines(node: libcst.FunctionDef) -> libcst.FunctionDef:
    """Two blank lines before an appended function, whatever its old neighbourhood was."""
    lines = [line for line in node.leading_lines if line.comment is not None]
    blank = libcst.EmptyLine(indent=False, whitespace=libcst.SimpleWhitespace(""), comment=None)
    return node.with_changes(leading_lines=[blank, blank, *lines])


def _statements(nodes: Sequence[libcst.CSTNode]) -> list[libcst.BaseStatement]:
    return [node for node in nodes if isinstance(node, libcst.BaseStatement)]
