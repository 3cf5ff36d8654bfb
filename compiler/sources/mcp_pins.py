"""Pinned MCP tool definitions: the part of a `tools/list` entry a reviewed compile vouches for, its hash, and a
readable diff against what a live server lists now. Standard library only: the router runs this very module
(copied into every router as `mcp_pins.py`), so the compile, the router and `toolc check --live` agree.

    pinned form   name, title, description, inputSchema (presets hidden, as the compile hides them),
                  outputSchema, annotations (title and the four hints): what a model reads and what the router
                  validates against. `_meta`, icons and the like are not pinned.
    hash          sha256 over the form as compact JSON with sorted keys (the lock's `digest` encoding)
    diff          one line per changed place, `description: 'old' → 'new'`, JSON values cut to 200 characters
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

ANNOTATION_HINTS = (
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
)
MAX_VALUE = 200
"""Characters of one old or new value shown in a diff line."""
MAX_LINES = 20
"""Diff lines shown; the rest are counted."""


def hide_presets(schema: Mapping[str, Any], fixed: Mapping[str, Any]) -> dict[str, Any]:
    """Preset arguments are not the model's to choose: their properties and `required` entries dropped."""
    hidden = dict(schema)
    if not fixed:
        return hidden
    properties = hidden.get("properties")
    if isinstance(properties, Mapping):
        hidden["properties"] = {k: v for k, v in properties.items() if k not in fixed}
    required = hidden.get("required")
    if isinstance(required, list):
        hidden["required"] = [k for k in required if k not in fixed]
    return hidden


def pinned_form(
    tool: Mapping[str, Any], fixed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The pinned part of one `tools/list` entry (camelCase JSON, as listed)."""
    raw_annotations = tool.get("annotations")
    given = raw_annotations if isinstance(raw_annotations, Mapping) else {}
    annotations: dict[str, Any] = {
        key: given[key] for key in ANNOTATION_HINTS if isinstance(given.get(key), bool)
    }
    if isinstance(given.get("title"), str):
        annotations["title"] = given["title"]
    schema = tool.get("inputSchema")
    output = tool.get("outputSchema")
    form: dict[str, Any] = {
        "name": tool.get("name"),
        "title": tool.get("title") or annotations.get("title"),
        "description": tool.get("description") or "",
        "inputSchema": hide_presets(schema, fixed or {})
        if isinstance(schema, Mapping)
        else schema,
        "outputSchema": output if isinstance(output, Mapping) else None,
        "annotations": annotations,
    }
    return form


def with_placeholders(data: Any, secrets: Mapping[str, str]) -> Any:
    """A copy of `data` with every secret value replaced by its placeholder (in keys and string values), longest
    first: what `toolc record` writes for a server that echoes its environment into a description."""
    if not secrets:
        return data
    ordered = sorted(secrets.items(), key=lambda item: (-len(item[0]), item[0]))

    def text(value: str) -> str:
        for secret, placeholder in ordered:
            if secret in value:
                value = value.replace(secret, placeholder)
        return value

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return text(node)
        if isinstance(node, Mapping):
            return {text(str(key)): walk(value) for key, value in node.items()}
        if isinstance(node, list | tuple):
            return [walk(item) for item in node]
        return node

    return walk(data)


def encode(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pin_hash(form: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(encode(form).encode()).hexdigest()


def _shown(value: Any) -> str:
    """A value of the live server's as a diff shows it: inert (the diff reaches a terminal and the audit, so a
    control, C1 or bidi character comes out escaped: `repr` for text, ASCII-only JSON for the rest), then cut."""
    text = (
        repr(value)
        if isinstance(value, str)
        else json.dumps(value, sort_keys=True, separators=(",", ":"))
    )
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "…"


def _inert(key: str) -> str:
    """A key of the live server's, as a place in the diff shows it: escaped as `repr` escapes it when it holds a
    character that is not printable."""
    return key if key.isprintable() else repr(key)[1:-1]


def _changes(path: str, old: Any, new: Any, out: list[str]) -> None:
    if old == new and type(old) is type(new):
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            where = f"{path}/{_inert(str(key))}" if path else _inert(str(key))
            if key not in new:
                out.append(f"{where}: removed (was {_shown(old[key])})")
            elif key not in old:
                out.append(f"{where}: added {_shown(new[key])}")
            else:
                _changes(where, old[key], new[key], out)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            _changes(f"{path}/{index}", before, after, out)
        return
    out.append(f"{path or '/'}: {_shown(old)} → {_shown(new)}")


def diff_lines(pinned: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """What changed from the pinned form to the live one, one line per place (empty: nothing)."""
    out: list[str] = []
    _changes("", pinned, live, out)
    return out


def describe(lines: list[str]) -> str:
    """The lines as one text, at most `MAX_LINES` of them."""
    shown = lines[:MAX_LINES]
    more = len(lines) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more else "")


def changes(
    pins: Mapping[str, Any], listed: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Tool name → what changed, for each pinned tool (`pins`: name → {hash, definition, presets}) whose live
    `tools/list` entry (`listed`, by name) differs or is gone."""
    changed: dict[str, str] = {}
    for name, pin in pins.items():
        entry = listed.get(name)
        if entry is None:
            changed[name] = "the server no longer lists this tool"
            continue
        form = pinned_form(entry, dict.fromkeys(pin.get("presets", ())))
        if pin_hash(form) != pin["hash"]:
            lines = diff_lines(pin["definition"], form)
            changed[name] = describe(lines) if lines else "its definition hash differs"
    return changed


def refusal_reason(name: str, diff: str) -> str:
    """Why a changed tool is refused: `denied by pinning: <this>`, and what `toolc check --live` reports."""
    return (
        f"the server changed tool {name!r} since it was compiled: {diff}; "
        "recompile the project (and review the change) to call it"
    )
