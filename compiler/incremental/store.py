"""Cache files beside the output folder: `<output's parent>/.toolc-cache/<output name>.<kind>.json`, and for a
kind saved with a blob of bytes, `<output name>.<kind>.blob` beside it, whose sha256 the envelope holds (the blob is
a hard link to the file it records where the file system allows: hundreds of MB are never copied). A blob is
never read here: its reader reads the ranges it needs and checks each against a hash its payload keeps
(`providers.reuse`), so hundreds of MB are never held or hashed whole; or, for a blob decoded whole anyway (the
tools cache, `sources.reuse`), reads it and checks it against the envelope's sha256.

Each file is an envelope `{"format", "kind", "toolc", "key", "payload", "blob"}`. It is read back only when it
is what this compile expects: a file from another toolc (`toolc` differs), of another format or kind, or one that
is not JSON is ignored with a note (TC140) and the work is done again; so is a blob its reader finds altered.
A cache is never trusted: reusing it must give the bytes a compile from nothing gives, and the caller's key says
what it was made from.

A saved file is sealed: `<output name>.<kind>.seal` holds its stamp (`incremental.stamps`) as `save` left it.
An entry loaded from a file that still has it is `sealed`: not written since toolc wrote it, so the stamps it
records of other files (its blob's, the output files') can be relied on to skip hashing them; an entry edited
since (a range pointed at another definition's bytes) is not, and every byte it points to is checked by its hash.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from compiler.incremental import identity, stamps
from compiler.infra.collector import paused_then_frozen
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
    """sha256 of the entry's blob file (`save_with_blob`), or empty (none, or its reader checks it piece by piece)."""
    stamp: str = ""
    """The blob's stamp as the entry was saved (`incremental.stamps`): while the blob still has it, the hashes the
    payload keeps of its bytes hold without reading them (when the entry is `sealed`). Empty: none recorded."""
    sealed: bool = False
    """Set by `load`: the file is as `save` wrote it (its seal holds its stamp), so the stamps it records hold."""
    own: str = ""
    """Set by `load`: the stamp of the file it was read from (what an entry saved against it names)."""


def load(out_dir: Path, kind: str, diagnostics: Diagnostics,
         valid: Callable[[Any], bool] = lambda payload: True) -> Entry | None:
    """The cache entry of `kind` for `out_dir`, or None (no file, or one that is not ours: then a TC140 note).
    `valid` checks the payload's shape; one it refuses is ignored like a corrupted file."""
    path = cache_path(out_dir, kind)
    found = _read(path, diagnostics)
    if found is None:
        return None
    raw, stamp = found
    entry = _entry(raw, path, kind, diagnostics, valid)
    if entry is None:
        return None
    sealed = bool(stamp) and _seal_of(out_dir, kind) == stamp
    return Entry(entry.key, entry.payload, entry.blob, entry.stamp, sealed=sealed, own=stamp)


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """A file descriptor on the cache file `path`, opened only when it is a regular file of its own: a symlink
    planted in `.toolc-cache` (to a file outside it, `/dev/zero`) or a FIFO (which would hang the open) raises
    OSError, which every reader turns into a TC140 note. A cache file is read, and a tools file appended to
    (`providers.reuse.grown_file`): neither may reach past the cache."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, size: int) -> bytes:
    """The whole of the regular file `path` (`open_regular`), read only when it has the `size` recorded with it: a
    file planted in its place (a sparse one of many GB costs no disk) is refused by its size, never read."""
    with os.fdopen(open_regular(path), "rb") as file:
        if os.fstat(file.fileno()).st_size != size:
            raise OSError(errno.EFBIG, "not the size recorded with it", str(path))
        return file.read(size)


def _read(path: Path, diagnostics: Diagnostics) -> tuple[bytes, str] | None:
    """The file's bytes and its stamp as they were read."""
    try:
        with os.fdopen(open_regular(path), "rb") as file:
            return file.read(), stamps.of(os.fstat(file.fileno()))
    except FileNotFoundError:
        return None
    except OSError as exc:
        ignored(diagnostics, path, f"unreadable ({exc.strerror or exc})")
        return None


def decode(raw: bytes) -> Any:
    """`orjson.loads` with the cyclic GC paused: a cache file is millions of small acyclic containers (Microsoft
    Graph's lowering index: 25 MB), and the collections their allocation sets off would triple the load's time.
    Decoded JSON holds no cycle, so nothing is left for the collector to find later. What was decoded is then
    moved out of the collector's generations (`gc.freeze`, as the pipeline does with the catalog): a cache is
    read all through the stage that loaded it, and every later collection would scan its millions of objects
    again (2 of Microsoft Graph's 12 CPU seconds of a recompile's lowering). The pipeline unfreezes at the end."""
    with paused_then_frozen():
        return orjson.loads(raw)


def _entry(raw: bytes, path: Path, kind: str, diagnostics: Diagnostics, valid: Callable[[Any], bool]) -> Entry | None:
    try:
        data = decode(raw)
    except orjson.JSONDecodeError:
        ignored(diagnostics, path, "not JSON (corrupted)")
        return None
    if not isinstance(data, dict) or data.get("format") != STORE_FORMAT or data.get("kind") != kind:
        ignored(diagnostics, path, "not a toolc cache of this format")
        return None
    if data.get("toolc") != identity.toolc_identity():
        ignored(diagnostics, path, "written by another toolc (version, code or libraries differ)")
        return None
    key, payload, blob, stamp = data.get("key"), data.get("payload"), data.get("blob", ""), data.get("stamp", "")
    if not (isinstance(key, str) and isinstance(blob, str) and isinstance(stamp, str)) or not valid(payload):
        ignored(diagnostics, path, "its content is malformed (corrupted)")
        return None
    return Entry(key, payload, blob, stamp)


def save(out_dir: Path, kind: str, entry: Entry) -> None:
    """Best effort, and atomic (a reader never sees half a file): a cache that cannot be written only costs the
    next compile its speed-up. Sealed once in place (`_seal`)."""
    path = cache_path(out_dir, kind)
    if _write_atomically(path, orjson.dumps(_envelope(kind, entry))):  # key order kept: cached definitions as is
        _seal(out_dir, kind, path)


def _write_atomically(path: Path, content: bytes) -> bool:
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        _prepare(path.parent)
        partial.write_bytes(content)
        partial.replace(path)
        return True
    except OSError:
        partial.unlink(missing_ok=True)
        return False
    except BaseException:  # interrupted (Ctrl-C): no half-written file left beside the output either
        partial.unlink(missing_ok=True)
        raise


def _seal(out_dir: Path, kind: str, path: Path) -> None:
    """Record the stamp of the file `save` just wrote at `path` (none when the clock cannot vouch for it). A seal
    left by an earlier save never matches: the file was replaced (another inode) since."""
    stamp = stamps.of_path(path)
    seal = cache_path(out_dir, kind, suffix=".seal")
    if not (stamp and stamps.settle([stamp]) and _write_atomically(seal, stamp.encode())):
        seal.unlink(missing_ok=True)


def _seal_of(out_dir: Path, kind: str) -> str:
    """The stamp a seal holds (a stamp is under 100 bytes: a planted big file is not read past them)."""
    try:
        fd = open_regular(cache_path(out_dir, kind, suffix=".seal"))
    except OSError:
        return ""
    try:
        return os.read(fd, 256).decode("ascii", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def _envelope(kind: str, entry: Entry) -> dict[str, Any]:
    return {"format": STORE_FORMAT, "kind": kind, "toolc": identity.toolc_identity(), "key": entry.key,
            "payload": entry.payload, "blob": entry.blob, "stamp": entry.stamp}


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# toolc's build cache: never committed\n*\n")


def save_with_blob(out_dir: Path, kind: str, entry: Entry, blob: Path) -> None:
    """`entry` (whose `blob` is the sha256 of the file `blob`, as its writer hashed it), then the file itself,
    hard-linked (copied across file systems). The blob goes in first: a reader that comes between sees the old
    envelope with the new blob, ranges that do not match their hashes, and ignores both."""
    path = cache_path(out_dir, kind, suffix=".blob")
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        _prepare(path.parent)
        partial.unlink(missing_ok=True)
        _link_or_copy(blob, partial)
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
        return
    except BaseException:  # interrupted (Ctrl-C): no half-written file left beside the output
        partial.unlink(missing_ok=True)
        raise
    save(out_dir, kind, entry)


def _link_or_copy(source: Path, target: Path) -> None:
    """The blob's writer never writes it again, nor does the output it may also be linked into (written by
    rename, never in place); were it changed all the same, its ranges no longer match and it is ignored."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def forget(out_dir: Path, kind: str) -> None:
    cache_path(out_dir, kind).unlink(missing_ok=True)
    cache_path(out_dir, kind, suffix=".blob").unlink(missing_ok=True)
    cache_path(out_dir, kind, suffix=".seal").unlink(missing_ok=True)


def ignored(diagnostics: Diagnostics, path: Path, why: str) -> None:
    """The TC140 note: a cache file not used, and why."""
    diagnostics.report(CACHE_IGNORED, f"cache ignored: {why}; compiling without it", source=str(path))
