"""Cache files beside the output folder: `<output's parent>/.toolc-cache/<output name>.<kind>.json` (or `.bin`,
an envelope line followed by a blob of bytes whose sha256 the envelope holds).

Each file is an envelope `{"format", "kind", "toolc", "key", "payload", "blob"}`. It is read back only when it
is what this compile expects: a file from another toolc (`toolc` differs), of another format or kind, one that
is not JSON, or a blob that does not match its hash is ignored with a note (TC140) and the work is done again.
A cache is never trusted: reusing it must give the bytes a compile from nothing gives, and the caller's key says
what it was made from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from compiler.incremental import identity
from compiler.infra.diagnostics import Diagnostics

CACHE_DIR = ".toolc-cache"
STORE_FORMAT = 1
CACHE_IGNORED = "TC140"


def cache_path(out_dir: Path, kind: str, *, suffix: str = ".json") -> Path:
    """Beside the output folder, so its atomic swap and `toolc check`'s byte comparison never see the cache."""
    out_dir = out_dir.resolve()
    return out_dir.parent / CACHE_DIR / f"{out_dir.name}.{kind}{suffix}"


@dataclass(frozen=True)
class Entry:
    key: str
    """What the payload was made from (a hash the caller computes over its inputs)."""
    payload: Any
    blob: str = ""
    """sha256 of the bytes that follow the envelope (`save_with_blob`), or empty."""


def load(out_dir: Path, kind: str, diagnostics: Diagnostics,
         valid: Callable[[Any], bool] = lambda payload: True) -> Entry | None:
    """The cache entry of `kind` for `out_dir`, or None (no file, or one that is not ours: then a TC140 note).
    `valid` checks the payload's shape; one it refuses is ignored like a corrupted file."""
    path = cache_path(out_dir, kind)
    raw = _read(path, diagnostics)
    return None if raw is None else _entry(raw, path, kind, diagnostics, valid)


def _read(path: Path, diagnostics: Diagnostics) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _ignored(diagnostics, path, f"unreadable ({exc.strerror or exc})")
        return None


def _entry(raw: bytes, path: Path, kind: str, diagnostics: Diagnostics, valid: Callable[[Any], bool]) -> Entry | None:
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
    key, payload, blob = data.get("key"), data.get("payload"), data.get("blob", "")
    if not isinstance(key, str) or not isinstance(blob, str) or not valid(payload):
        _ignored(diagnostics, path, "its content is malformed (corrupted)")
        return None
    return Entry(key, payload, blob)


def save(out_dir: Path, kind: str, entry: Entry) -> None:
    """Best effort, and atomic (a reader never sees half a file): a cache that cannot be written only costs the
    next compile its speed-up."""
    path = cache_path(out_dir, kind)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        _prepare(path.parent)
        partial.write_bytes(orjson.dumps(_envelope(kind, entry)))  # key order kept: cached definitions are written as is
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
    except BaseException:  # interrupted (Ctrl-C): no half-written file left beside the output either
        partial.unlink(missing_ok=True)
        raise


def _envelope(kind: str, entry: Entry, blob: str = "") -> dict[str, Any]:
    return {"format": STORE_FORMAT, "kind": kind, "toolc": identity.toolc_identity(), "key": entry.key,
            "payload": entry.payload, "blob": blob}


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# toolc's build cache: never committed\n*\n")


def load_with_blob(out_dir: Path, kind: str, diagnostics: Diagnostics,
                   valid: Callable[[Any], bool] = lambda payload: True) -> tuple[Entry, bytes] | None:
    """An entry saved by `save_with_blob`: the envelope on the first line, then the blob, whose sha256 the
    envelope holds (a blob cut short or altered is ignored like a corrupted file)."""
    path = cache_path(out_dir, kind, suffix=".bin")
    try:
        with path.open("rb") as handle:  # the header, then the blob: read once each, never copied (hundreds of MB)
            header = handle.readline()
            blob = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _ignored(diagnostics, path, f"unreadable ({exc.strerror or exc})")
        return None
    entry = _entry(header, path, kind, diagnostics, valid)
    if entry is None:
        return None
    if entry.blob != "sha256:" + hashlib.sha256(blob).hexdigest():
        _ignored(diagnostics, path, "its content does not match its hash (corrupted)")
        return None
    return entry, blob


def save_with_blob(out_dir: Path, kind: str, entry: Entry, blob: Path) -> None:
    """`entry` on the first line, then the bytes of the file `blob` (copied, streamed), atomically."""
    path = cache_path(out_dir, kind, suffix=".bin")
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        digest = hashlib.sha256()
        with blob.open("rb") as source:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
        data = _envelope(kind, entry, blob="sha256:" + digest.hexdigest())
        _prepare(path.parent)
        with partial.open("wb") as out, blob.open("rb") as source:
            out.write(orjson.dumps(data) + b"\n")
            shutil.copyfileobj(source, out, 1 << 20)
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def forget(out_dir: Path, kind: str) -> None:
    cache_path(out_dir, kind).unlink(missing_ok=True)


def _ignored(diagnostics: Diagnostics, path: Path, why: str) -> None:
    diagnostics.report(CACHE_IGNORED, f"cache ignored: {why}; compiling without it", source=str(path))
