"""What a `$ref` that could not be pulled in (a missing file, one outside the root, a network URL, a pointer that
names nothing) costs each tool: decided here, per tool, rather than failing the whole document.

A tool whose input schema reaches the lost reference is skipped (the router could not check that argument); a tool
whose output schema reaches it keeps its input side and loses only its output schema (TC318): output is checked
leniently anyway, and the call still works. The loader reported each lost reference once, where it was written
(TC201-TC204, warnings); the messages here name it again, so neither has to be read with the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Tool
from compiler.refs.walker import REFUSAL_MARK, LostRefs

OUTPUT_SCHEMA_LOST = "TC318"
"""warning: a tool's output schema needs a `$ref` that could not be resolved: the tool is kept without one."""


def without_lost_refs(tools: list[Tool], definitions: Mapping[str, Any], diagnostics: Diagnostics, *,
                      location: str, skipped_code: str) -> list[Tool]:
    if not may_hold_refusal(definitions, tools):
        return tools
    kept: list[Tool] = []
    lost_refs = LostRefs(definitions)
    for tool in tools:
        lost = lost_refs.of(tool.input_schema)
        if lost is not None:
            diagnostics.report(skipped_code, f"not a tool: its input needs $ref {lost}, which could not be resolved "
                               "(see the TC20x warning for that $ref)", source=location, tool=tool.id)
            continue
        lost = lost_refs.of(tool.output_schema) if tool.output_schema is not None else None
        if lost is not None:
            diagnostics.report(OUTPUT_SCHEMA_LOST, f"no output schema: it needs $ref {lost}, which could not be "
                               "resolved (see the TC20x warning for that $ref); the tool is kept, its answers "
                               "untyped", source=location, tool=tool.id)
            tool = replace(tool, output_schema=None)
        kept.append(tool)
    return kept


_MARK = REFUSAL_MARK.encode()


def may_hold_refusal(definitions: Mapping[str, Any], tools: list[Tool]) -> bool:
    """False when no schema of `tools` nor any definition can hold a `refusal`, whose description always holds
    `REFUSAL_MARK`: encoded by orjson (in C), which escapes only quotes, backslashes and control characters, text
    holding the mark shows it as is, so bytes without it prove every tool keeps what it has. The usual case (no
    lost file): the walk `LostRefs` makes of every definition and schema in Python is skipped (GitHub's 13 MB:
    0.09 s of reading; a 4th of what Stripe's reader spends after decoding). Whatever orjson cannot encode is
    walked."""
    schemas = [schema for tool in tools for schema in (tool.input_schema, tool.output_schema) if schema is not None]
    try:
        return any(_MARK in orjson.dumps(part, option=orjson.OPT_NON_STR_KEYS) for part in (dict(definitions), schemas))
    except TypeError:  # orjson.JSONEncodeError is one: a value it has no encoding for, or nesting past its limit
        return True
