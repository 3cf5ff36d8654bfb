"""Cache files beside the output folder: `<output's parent>/.toolc-cache/<output name>.<kind>.json`.

Each file is an envelope `{"format", "kind", "toolc", "key", "payload"}`. It is read back only when all four
match what this compile expects: a file from another toolc (`toolc` differs), of another format or kind, or one
that is not JSON at all is ignored with a note (TC140) and the work is done again. A cache is never trusted:
reusing it must give the bytes a compile from nothing gives, and the key says what it was made from.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from compiler.diagnostics import Diagnostics
from compiler.incremental import identity

CACHE_DIR = ".toolc-cache"
STORE_FORMAT = 1
CACHE_IGNORED = "TC140"


def cache_path(out_dir: Path, kind: str) -> Path:
    """Beside the output folder, so its atomic swap and `toolc check`'s byte comparison never see the cache."""
    out_dir = out_dir.resolve()
    return out_dir.parent / CACHE_DIR / f"{out_dir.name}.{kind}.json"


@dataclass(frozen=True)
class Entry:
    key: str
    """What the payload was made from (a hash the caller computes over its inputs)."""
    payload: Any


def load(out_dir: Path, kind: str, diagnostics: Diagnostics,
         valid: Callable[[Any], bool] = lambda payload: True) -> Entry | None:
    """The cache entry of `kind` for `out_dir`, or None (no file, or one that is not ours: then a TC140 note).
    `valid` checks the payload's shape; one it refuses is ignored like a corrupted file."""
    path = cache_path(out_dir, kind)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _ignored(diagnostics, path, f"unreadable ({exc.strerror or exc})")
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        _ignored(diagnostics, path, "not JSON (corrupted)")
        return None
    if not isinstance(data, dict) or data.get("format") != STORE_FORMAT or data.get("kind") != kind:
        _ignored(diagnostics, path, "not a toolc cache of this format")
        return None
    if data.get("toolc") != identity.toolc_identity():
        _ignored(diagnostics, path, "written by another toolc (version, code or libraries differ)")
        return None
    key, payload = data.get("key"), data.get("payload")
    if not isinstance(key, str) or not valid(payload):
        _ignored(diagnostics, path, "its content is malformed (corrupted)")
        return None
    return Entry(key, payload)


def save(out_dir: Path, kind: str, entry: Entry) -> None:
    """Best effort, and atomic (a reader never sees half a file): a cache that cannot be written only costs the
    next compile its speed-up."""
    path = cache_path(out_dir, kind)
    data = {"format": STORE_FORMAT, "kind": kind, "toolc": identity.toolc_identity(), "key": entry.key,
            "payload": entry.payload}
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# toolc's build cache: never committed\n*\n")
        partial.write_bytes(orjson.dumps(data))  # key order kept: cached definitions are written as they are
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)


def forget(out_dir: Path, kind: str) -> None:
    cache_path(out_dir, kind).unlink(missing_ok=True)


def _ignored(diagnostics: Diagnostics, path: Path, why: str) -> None:
    diagnostics.info(CACHE_IGNORED, f"cache ignored: {why}; compiling without it", source=str(path))
