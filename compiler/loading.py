"""Read JSON and YAML documents into Python data, turning every failure into a located diagnostic.

JSON goes through orjson (fast, and it refuses absurd nesting instead of overflowing the stack); YAML through
PyYAML's C loader when present. Nothing here follows `$ref`: that is `refs.py`'s job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

from compiler.diagnostics import CompilerError, Diagnostic, Severity

MALFORMED_JSON = "TC101"
MALFORMED_YAML = "TC102"
UNREADABLE = "TC103"
TOO_DEEP = "TC105"

_YamlLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

YAML_SUFFIXES = frozenset({".yaml", ".yml"})


def _fail(code: str, message: str, source: str) -> CompilerError:
    return CompilerError(Diagnostic(code=code, severity=Severity.ERROR, message=message, source=source))


def read_bytes(path: Path, *, display: str | None = None) -> bytes:
    where = display or str(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise _fail(UNREADABLE, "file not found", where) from None
    except IsADirectoryError:
        raise _fail(UNREADABLE, "is a directory, expected a JSON or YAML file", where) from None
    except OSError as exc:
        raise _fail(UNREADABLE, f"cannot read: {exc.strerror or exc}", where) from None


def parse_json(data: bytes | str, *, source: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = exc.msg
        if "depth limit" in reason or "recursion" in reason.lower():
            raise _fail(TOO_DEEP, "nesting is deeper than 1024 levels", f"{source}:{exc.lineno}:{exc.colno}") from None
        raise _fail(MALFORMED_JSON, f"malformed JSON: {reason}", f"{source}:{exc.lineno}:{exc.colno}") from None


def parse_yaml(data: bytes | str, *, source: str) -> Any:
    try:
        return yaml.load(data, Loader=_YamlLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = exc.problem or exc.context or "syntax error"
        raise _fail(MALFORMED_YAML, f"malformed YAML: {problem}", where) from None
    except yaml.YAMLError as exc:
        raise _fail(MALFORMED_YAML, f"malformed YAML: {exc}", source) from None
    except RecursionError:
        raise _fail(TOO_DEEP, "nesting is too deep to read", source) from None


def parse_document(data: bytes, *, source: str, suffix: str = "") -> Any:
    """JSON unless the name says YAML; a non-JSON file without a YAML suffix is tried as YAML (a superset)."""
    if suffix.lower() in YAML_SUFFIXES:
        return parse_yaml(data, source=source)
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"[") or suffix.lower() == ".json":
        return parse_json(data, source=source)
    return parse_yaml(data, source=source)


def load_document(path: Path, *, display: str | None = None) -> Any:
    where = display or str(path)
    return parse_document(read_bytes(path, display=where), source=where, suffix=path.suffix)
