"""`toolc.lock`: one canonical hash per tool, written by compile inside the output folder.

    {"format": 1,
     "tools": {"<tool id>": {"ir": "sha256:…", "providers": {"<target>": "sha256:…"}}}}

The IR hash covers every field of the tool plus the shared definitions its schemas
reach, transitively — the same information `RefResolver.bundle` copies into `$defs` — each definition hashed
once per compile, so a 1,000-operation document costs one pass over its components. Provider hashes cover
the lowered definition each target emits (`build.artifacts["providers"][target]["tools"][tool_id]`).
Hashes are sha256 over `serialize.compact_json` (sorted keys), so key order never changes a hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson

from compiler.build import Build
from compiler.diagnostics import CompilerError, Diagnostic, Severity
from compiler.drift.codes import BAD_LOCK
from compiler.drift.schemas import local_def_name
from compiler.ir import Catalog, Tool
from compiler.serialize import canonical_json, compact_json

LOCK_FILE = "toolc.lock"
LOCK_FORMAT = 1


def digest(data: Any) -> str:
    return "sha256:" + hashlib.sha256(compact_json(data)).hexdigest()


_REF = re.compile(rb'"\$ref":"((?:[^"\\]|\\.)*)"')


def _refs(encoded: bytes) -> set[str]:
    """The `$ref` strings in a compact JSON encoding (a string value that merely contains `"$ref":` is escaped
    there, so it cannot match)."""
    return {orjson.loads(b'"' + match + b'"') for match in _REF.findall(encoded)}


class ToolHasher:
    """Hashes the tools of one catalog; each shared definition is encoded, scanned and hashed once."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.definitions: dict[tuple[str, str], tuple[str, set[str]]] = {}

    def _definition(self, source: str, name: str, schema: Any) -> tuple[str, set[str]]:
        key = (source, name)
        if key not in self.definitions:
            encoded = compact_json(schema)
            self.definitions[key] = ("sha256:" + hashlib.sha256(encoded).hexdigest(), _refs(encoded))
        return self.definitions[key]

    def ir_hash(self, tool: Tool) -> str:
        """sha256 over the tool (every field: orjson encodes the frozen dataclasses, sorted keys) and the hashes
        of the shared definitions it reaches."""
        encoded = compact_json(tool)
        shared = self.catalog.definitions_for(tool)
        own = tool.input_schema.get("$defs") or {}
        reached: dict[str, str] = {}
        pending = list(_refs(encoded))
        while pending:
            name = local_def_name(pending.pop())
            if name is None or name in reached or name in own or name not in shared:
                continue
            digest_, refs = self._definition(tool.source, name, shared[name])
            reached[name] = digest_
            pending.extend(refs)
        return digest({"tool": hashlib.sha256(encoded).hexdigest(), "definitions": reached})


def lock_data(build: Build) -> dict[str, Any]:
    hasher = ToolHasher(build.catalog)
    providers: Mapping[str, Any] = build.artifacts.get("providers") or {}
    tools: dict[str, Any] = {}
    for tool in build.catalog.tools:
        entry: dict[str, Any] = {"ir": hasher.ir_hash(tool)}
        lowered = {target: digest(data["tools"][tool.id]) for target, data in sorted(providers.items())
                   if isinstance(data, Mapping) and tool.id in (data.get("tools") or {})}
        if lowered:
            entry["providers"] = lowered
        tools[tool.id] = entry
    return {"format": LOCK_FORMAT, "tools": tools}


def emit_lock(build: Build) -> None:
    """The last emitter: hashes what the others produced. Lives inside the output folder, so it is swapped in
    atomically with the files it describes."""
    build.add_file(LOCK_FILE, canonical_json(lock_data(build)))


def parse_lock(content: bytes, *, source: str) -> dict[str, Any]:
    """A lock read back; raises CompilerError(TC702) when it is not one."""
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise _bad(f"not JSON: {exc.msg}", source) from None
    if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT or not isinstance(data.get("tools"), dict):
        raise _bad(f"expected a format-{LOCK_FORMAT} lock with a `tools` object", source)
    return data


def _bad(message: str, source: str) -> CompilerError:
    return CompilerError(Diagnostic(BAD_LOCK, Severity.ERROR, f"unreadable lock: {message}", source=source))
