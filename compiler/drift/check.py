"""`toolc check`: compare an in-memory compile with the output folder it would replace.

Two questions, both answered from the folder alone (no git): do the generated files differ byte for byte
(any difference is drift: the folder is stale), and how did each tool change? The lock says which tools
changed (IR hash, provider hashes); the previous `catalog.json` lets those be classified with the rule table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from compiler.build import Build
from compiler.drift.codes import NO_CATALOG, NO_LOCK
from compiler.drift.diff import DriftReport, diff_catalogs
from compiler.drift.lock import LOCK_FILE, lock_data, parse_lock
from compiler.drift.rules import Change
from compiler.infra.diagnostics import CompilerError, Diagnostics
from compiler.infra.serialize import catalog_from_json
from compiler.ir import Catalog, Tool

CATALOG_FILE = "catalog.json"


def compare_files(new: Mapping[str, bytes], old: Mapping[str, bytes]) -> dict[str, str]:
    """Generated files that differ: path → `changed` (other bytes), `missing` (not in the folder) or `extra`
    (in the folder, no longer generated)."""
    drift: dict[str, str] = {}
    for path in sorted(set(new) | set(old)):
        if path not in old:
            drift[path] = "missing"
        elif path not in new:
            drift[path] = "extra"
        elif new[path] != old[path]:
            drift[path] = "changed"
    return drift


def refresh_command(*, live: bool, config_arg: str | None) -> str:
    compile_cmd = "toolc compile" + (f" -c {config_arg}" if config_arg else "")
    if live:
        return "toolc record" + (f" -c {config_arg}" if config_arg else "") + " && " + compile_cmd
    return compile_cmd


def _same_ir(before: Any, after: Mapping[str, Any]) -> bool:
    """Whether two lock entries (the old one possibly malformed) record the same IR hash."""
    return isinstance(before, Mapping) and before.get("ir") == after["ir"]


def _old_catalog(previous: Mapping[str, bytes], diagnostics: Diagnostics, where: str) -> Catalog | None:
    content = previous.get(CATALOG_FILE)
    if content is None:
        diagnostics.warning(NO_CATALOG, f"no {CATALOG_FILE} in the output folder: changes cannot be classified",
                            source=where)
        return None
    try:
        return catalog_from_json(orjson.loads(content))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        diagnostics.warning(NO_CATALOG, f"{CATALOG_FILE} is unreadable ({type(exc).__name__}): changes cannot be "
                            "classified", source=where)
        return None


def _old_lock(previous: Mapping[str, bytes], diagnostics: Diagnostics, where: str) -> dict[str, Any]:
    content = previous.get(LOCK_FILE)
    if content is None:
        diagnostics.warning(NO_LOCK, f"no {LOCK_FILE} in the output folder (never compiled?)", source=where)
        return {"tools": {}}
    try:
        return parse_lock(content, source=f"{where}/{LOCK_FILE}")
    except CompilerError as exc:
        diagnostics.add(exc.diagnostic)
        return {"tools": {}}


def check_build(build: Build, *, where: str, refresh: str, diagnostics: Diagnostics) -> DriftReport:
    """Compare `build` with `build.previous_output` (the output folder as it is). `where` names the folder in
    diagnostics; `refresh` is the command that brings it up to date."""
    previous = build.previous_output
    new_lock = build.lock if build.lock is not None else lock_data(build.catalog, build.providers)
    old_lock = _old_lock(previous, diagnostics, where)
    old_tools: Mapping[str, Any] = old_lock["tools"]
    new_tools: Mapping[str, Any] = new_lock["tools"]

    def same_ir(old: Tool, new: Tool) -> bool:
        return _same_ir(old_tools.get(old.id), new_tools[new.id])

    irs_equal = set(old_tools) == set(new_tools) and all(
        _same_ir(old_tools[tool_id], entry) for tool_id, entry in new_tools.items())
    # The common case (nothing changed) never parses the previous catalog.
    old_catalog = _old_catalog(previous, diagnostics, where) if previous and not irs_equal else None
    if irs_equal:
        report = DriftReport(tools_old=len(old_tools), tools_new=len(build.catalog.tools))
    elif old_catalog is not None:
        report = diff_catalogs(old_catalog, build.catalog, by="id", skip=same_ir)
    else:
        report = _unclassified(old_tools, new_tools, len(build.catalog.tools))
    for tool_id in sorted(set(old_tools) & set(new_tools)):
        before, after = old_tools[tool_id], new_tools[tool_id]
        if not _same_ir(before, after):
            continue
        old_providers = before.get("providers") or {}
        for target, value in sorted((after.get("providers") or {}).items()):
            if target in old_providers and old_providers[target] != value:
                report.changes.append(Change(tool_id, "provider-output-changed", f"/providers/{target}",
                                             f"the {target} definition changed; the tool did not"))
    report.files = compare_files(build.files, previous)
    report.refresh = refresh
    return report


def _unclassified(old: Mapping[str, Any], new: Mapping[str, Any], tools_new: int) -> DriftReport:
    report = DriftReport(tools_old=len(old), tools_new=tools_new)
    for tool_id in sorted(set(old) | set(new)):
        if tool_id not in new:
            report.removed.append(tool_id)
            report.changes.append(Change(tool_id, "tool-removed", "", f"tool removed: {tool_id}"))
        elif tool_id not in old:
            report.added.append(tool_id)
            report.changes.append(Change(tool_id, "tool-added", "", f"tool added: {tool_id}"))
        elif not _same_ir(old[tool_id], new[tool_id]):
            report.changes.append(Change(tool_id, "tool-changed", "", "IR hash changed"))
    return report
