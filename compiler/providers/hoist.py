"""Root rewrites for dialects whose root must be one plain object: hoisting root unions, renaming argument keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler.ir import JsonObject
from compiler.providers import codes
from compiler.providers.base import Lowering, describe, show
from compiler.providers.names import cap
from compiler.providers.passes import merge_schemas

_COMBINATORS = ("anyOf", "oneOf", "allOf")


def _branch_summary(branch: Any) -> str:
    if not isinstance(branch, Mapping):
        return show(branch)
    required = branch.get("required")
    if isinstance(required, list) and required:
        return "requires " + ", ".join(str(r) for r in required)
    keys = list(branch.get("properties", {}) or {})
    return ("with " + ", ".join(keys)) if keys else show(branch)


def hoist_root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Root `allOf` is merged; root `anyOf`/`oneOf` become one object with every branch's properties, only the
    keys all branches require stay required, and the alternatives are described."""
    if not any(key in node for key in _COMBINATORS):
        return node
    out = {k: v for k, v in node.items() if k not in _COMBINATORS}
    members = node.get("allOf")
    if isinstance(members, list):
        out, conflicts = merge_schemas([out, *members])
        if "description" in node:
            out["description"] = node["description"]
        ctx.loss(codes.ROOT_HOISTED, "", "root allOf merged into the root object"
                 + (f" (conflicting {', '.join(sorted(set(conflicts)))}: first wins)" if conflicts else ""))
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if not isinstance(branches, list):
            continue
        properties: JsonObject = dict(out.get("properties") or {})
        common: set[str] | None = None
        for branch in branches:
            if not isinstance(branch, Mapping):
                continue
            for name, sub in (branch.get("properties") or {}).items():
                properties.setdefault(name, sub)
            required = set(branch.get("required") or ())
            common = required if common is None else common & required
        out["properties"] = properties
        own_required = list(out.get("required") or [])
        out["required"] = [*own_required, *sorted((common or set()) - set(own_required))]
        if not out["required"]:
            del out["required"]
        describe(out, {key: "; ".join(_branch_summary(b) for b in branches)})
        ctx.loss(codes.ROOT_HOISTED, "", f"root {key} hoisted into one object; the alternatives are only described")
    out["type"] = "object"
    return out


def rename_keys(node: JsonObject, pattern: re.Pattern[str], ctx: Lowering) -> JsonObject:
    """Top-level property keys outside `pattern` get a safe name; `ctx.renamed_keys` maps them back."""
    properties = node.get("properties")
    if not isinstance(properties, Mapping) or all(pattern.match(key) for key in properties):
        return node
    taken = {key for key in properties if pattern.match(key)}
    renamed: JsonObject = {}
    mapping: dict[str, str] = {}
    for key, sub in properties.items():
        new = key if pattern.match(key) else _safe_key(key, taken)
        if new != key:
            taken.add(new)
            mapping[key] = new
            ctx.renamed_keys[new] = key
            ctx.loss(codes.KEY_RENAMED, f"/properties/{new}", f"argument {key!r} renamed to {new!r} (mapped back)")
        renamed[new] = sub
    out = dict(node)
    out["properties"] = renamed
    if isinstance(node.get("required"), list):
        out["required"] = [mapping.get(key, key) for key in node["required"]]
    return out


def _safe_key(key: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-zA-Z0-9_]", "_", key).strip("_") or "arg"
    base = cap(base, 64, key=key)
    candidate, n = base, 2
    while candidate in taken:
        candidate = f"{base[:60]}_{n}"
        n += 1
    return candidate
