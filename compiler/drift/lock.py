"""`toolc.lock`: one canonical hash per tool, written by compile inside the output folder.

    {"format": 1,
     "tools": {"<tool id>": {"ir": "sha256:…", "providers": {"<target>": "sha256:…"}}}}

The IR hash covers every field of the tool plus the shared definitions its schemas
reach, transitively — the same information `RefResolver.bundle` copies into `$defs` — each definition hashed
once per compile, so a 1,000-operation document costs one pass over its components. Provider hashes cover
the lowered definition each target emits (`build.providers[target].tools[tool_id]`).
Hashes are sha256 over `serialize.compact_json` (sorted keys), so key order never changes a hash.

The lock holds only what users' drift means. Caches (the codegen fingerprint) live beside the output folder
(`codegen.cache`), so a new toolc version never changes an unchanged project's lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from compiler.build import Build, LockData, LockEntry, TargetOutput
from compiler.drift.codes import BAD_LOCK
from compiler.incremental.ir_hash import ToolHasher, digest
from compiler.infra.diagnostics import CompilerError, Diagnostic
from compiler.infra.serialize import canonical_json
from compiler.ir import Catalog

LOCK_FILE = "toolc.lock"
LOCK_FORMAT = 1


def lock_data(catalog: Catalog, providers: Mapping[str, TargetOutput],
              ir_hashes: Mapping[str, str] | None = None) -> LockData:
    """`ir_hashes`: `ToolHasher.ir_hash` by tool id, when the providers stage made them already (for its cache)."""
    hasher = ToolHasher(catalog)
    tools: dict[str, LockEntry] = {}
    for tool in catalog.tools:
        entry: LockEntry = {"ir": ir_hashes[tool.id] if ir_hashes is not None else hasher.ir_hash(tool)}
        lowered = {target: output.digests[tool.id] if output.digests else digest(output.tools[tool.id])
                   for target, output in sorted(providers.items())
                   if tool.id in (output.digests or output.tools)}
        if lowered:
            entry["providers"] = lowered
        tools[tool.id] = entry
    return {"format": LOCK_FORMAT, "tools": tools}


def emit_lock(build: Build) -> LockData:
    """The last stage: hashes what the others produced. Lives inside the output folder, so it is swapped in
    atomically with the files it describes."""
    data = lock_data(build.catalog, build.providers, build.ir_hashes)
    build.add_file(LOCK_FILE, canonical_json(data))
    return data


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
    return CompilerError(Diagnostic.of(BAD_LOCK, f"unreadable lock: {message}", source=source))
