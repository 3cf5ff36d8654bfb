"""Read JSON and YAML documents into Python data, turning every failure into a located diagnostic.

Every document is read under the limits in force (`compiler.infra.limits`): its size is checked before it is read,
its nesting before any recursive code sees it. JSON goes through orjson (fast; it refuses more than 1,024
levels itself), then one loop checks the nesting against `max_depth`. YAML goes through `yaml_loader`, which
builds the data from libyaml's event stream with limits on nesting, aliases, tags and numbers. Nothing here
follows `$ref`: that is `refs`' job.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import orjson

from compiler.infra import limits as codes
from compiler.infra.diagnostics import CompilerError, Diagnostic
from compiler.infra.limits import Limits

MALFORMED_JSON = "TC101"
MALFORMED_YAML = "TC102"
UNREADABLE = "TC103"
TOO_DEEP = "TC105"

YAML_SUFFIXES = frozenset({".yaml", ".yml"})
_POINTER_CUT = 200


def _fail(code: str, message: str, source: str, pointer: str = "") -> CompilerError:
    return CompilerError(Diagnostic.of(code, message, source=source, pointer=pointer))


_READS: ContextVar[dict[str, str] | None] = ContextVar("toolc_reads", default=None)


@contextmanager
def recording_reads() -> Iterator[dict[str, str]]:
    """Every file `read_bytes` reads meanwhile, as resolved path → sha256 of the bytes read: what a compile read,
    which the incremental cache (`compiler.incremental.project`) checks to prove a project unchanged."""
    reads: dict[str, str] = {}
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def file_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_bytes(path: Path, *, display: str | None = None, limits: Limits | None = None) -> bytes:
    where = display or str(path)
    cap = (limits or codes.current()).max_document_bytes
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # Never more than the limit in memory, whatever the file's size (a pipe or device says 0).
            data = handle.read(cap + 1) if size == 0 else b"" if size > cap else handle.read()
    except FileNotFoundError:
        raise _fail(UNREADABLE, "file not found", where) from None
    except IsADirectoryError:
        raise _fail(UNREADABLE, "is a directory, expected a JSON or YAML file", where) from None
    except OSError as exc:
        raise _fail(UNREADABLE, f"cannot read: {exc.strerror or exc}", where) from None
    check_size(data, source=where, limits=limits, size=max(size, len(data)))
    reads = _READS.get()
    if reads is not None:
        reads[str(path.resolve())] = file_digest(data)
    return data


def check_size(data: bytes | str, *, source: str, limits: Limits | None = None, size: int | None = None) -> None:
    chosen = limits or codes.current()
    size = len(data) if size is None else size
    if size > chosen.max_document_bytes:
        raise _fail(codes.DOCUMENT_TOO_BIG, f"the document is bigger than max_document_mb={chosen.max_document_mb:g} "
                    "MiB (limits.max_document_mb)", source)
    problem = codes.room_to_parse(size)
    if problem is not None:
        raise _fail(codes.OUT_OF_MEMORY, problem, source)


def _too_deep_pointer(root: Any, limit: int) -> str | None:
    """The JSON pointer of the first container nested deeper than `limit`, or None. A loop, not recursion;
    the path is only rebuilt on the (rare) failing document."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, level = pop()
        if level > limit:
            return _path_to(root, node)
        children = node.values() if type(node) is dict else node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, level + 1))
    return None


def _path_to(root: Any, target: Any) -> str:
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, pointer = stack.pop()
        if node is target:
            return pointer if len(pointer) <= _POINTER_CUT else pointer[:_POINTER_CUT] + "…"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, dict | list):
                token = str(key).replace("~", "~0").replace("/", "~1")[:40]
                stack.append((child, f"{pointer}/{token}"))
    return ""


def check_depth(data: Any, *, source: str, limits: Limits | None = None) -> None:
    chosen = limits or codes.current()
    if isinstance(data, dict | list):
        pointer = _too_deep_pointer(data, chosen.max_depth)
        if pointer is not None:
            raise _fail(codes.NESTING_TOO_DEEP, f"nesting is deeper than max_depth={chosen.max_depth} levels "
                        "(limits.max_depth)", source, pointer)


def parse_json(data: bytes | str, *, source: str, limits: Limits | None = None) -> Any:
    check_size(data, source=source, limits=limits)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = exc.msg
        where = f"{source}:{exc.lineno}:{exc.colno}"
        if "depth limit" in reason or "recursion" in reason.lower():
            raise _fail(TOO_DEEP, "nesting is deeper than 1024 levels", where) from None
        left = codes.headroom()
        if "memory" in reason.lower() and left is not None and left < codes.PARSE_FACTOR * len(data):
            raise _fail(codes.OUT_OF_MEMORY, f"out of memory reading the document ({reason}); see limits.memory_mb",
                        where) from None
        if "memory" in reason.lower():  # what orjson says of deep nesting that never closes, memory or not
            reason = f"{reason} (the document may end inside unclosed arrays or objects)"
        if "infinity" in reason:
            raise _fail(codes.NOT_FINITE, f"a number too large for a double: {reason}", where) from None
        if "UTF-8" in reason or "surrogate" in reason:
            raise _fail(codes.INVALID_TEXT, f"not valid UTF-8 text: {reason}", where) from None
        raise _fail(MALFORMED_JSON, f"malformed JSON: {reason}", where) from None
    check_depth(value, source=source, limits=limits)
    return value


def parse_yaml(data: bytes | str, *, source: str, limits: Limits | None = None) -> Any:
    # Imported here, for cost: PyYAML and the loader built on it (0.01 s) are paid only by a process that reads
    # YAML, not by every compile of JSON documents.
    import yaml

    from compiler.infra.yaml_loader import YamlRefused, load_yaml

    check_size(data, source=source, limits=limits)
    try:
        return load_yaml(data, limits or codes.current())
    except YamlRefused as exc:
        mark = exc.mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise _fail(exc.code, exc.message, where) from None
    except yaml.reader.ReaderError as exc:
        raise _fail(codes.INVALID_TEXT, f"not valid text: {exc.reason} (byte offset {exc.position})",
                    source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = exc.problem or exc.context or "syntax error"
        raise _fail(MALFORMED_YAML, f"malformed YAML: {problem}", where) from None
    except yaml.YAMLError as exc:
        raise _fail(MALFORMED_YAML, f"malformed YAML: {exc}", source) from None


def parse_document(data: bytes, *, source: str, suffix: str = "", limits: Limits | None = None) -> Any:
    """JSON unless the name says YAML; a non-JSON file without a YAML suffix is tried as YAML (a superset)."""
    if suffix.lower() in YAML_SUFFIXES:
        return parse_yaml(data, source=source, limits=limits)
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"[") or suffix.lower() == ".json":
        return parse_json(data, source=source, limits=limits)
    return parse_yaml(data, source=source, limits=limits)


def load_document(path: Path, *, display: str | None = None, limits: Limits | None = None) -> Any:
    where = display or str(path)
    return parse_document(read_bytes(path, display=where, limits=limits), source=where, suffix=path.suffix,
                          limits=limits)
