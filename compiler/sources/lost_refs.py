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

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Tool
from compiler.refs.walker import LostRefs

OUTPUT_SCHEMA_LOST = "TC318"
"""warning: a tool's output schema needs a `$ref` that could not be resolved: the tool is kept without one."""


def without_lost_refs(tools: list[Tool], definitions: Mapping[str, Any], diagnostics: Diagnostics, *,
                      location: str, skipped_code: str) -> list[Tool]:
    kept: list[Tool] = []
    lost_refs = LostRefs(definitions)
    for tool in tools:
        lost = lost_refs.of(tool.input_schema)
        if lost is not None:
            diagnostics.warning(skipped_code, f"not a tool: its input needs $ref {lost}, which could not be resolved "
                                "(see the TC20x warning for that $ref)", source=location, tool=tool.id)
            continue
        lost = lost_refs.of(tool.output_schema) if tool.output_schema is not None else None
        if lost is not None:
            diagnostics.warning(OUTPUT_SCHEMA_LOST, f"no output schema: it needs $ref {lost}, which could not be "
                                "resolved (see the TC20x warning for that $ref); the tool is kept, its answers "
                                "untyped", source=location, tool=tool.id)
            tool = replace(tool, output_schema=None)
        kept.append(tool)
    return kept
