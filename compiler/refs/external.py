"""`load_document`: read a document and pull in every relative-file `$ref` it reaches, transitively.

Each referenced file is parsed once (via `compiler.infra.loading`), its own refs rewritten the same way, and the
whole file attached under the document key `x-toolc-external` as `<slug>` (its path relative to the root,
with anything outside `[A-Za-z0-9._-]` turned into `_`); a ref `file.yaml#/a/b` becomes
`#/x-toolc-external/<slug>/a/b`, a ref back into the main file becomes `#/a/b`. Like json-schema-ref-parser's
`bundle()`, the result has only local refs. `$id` inside files is not consulted: files resolve by path.

Refused, never read: http(s) and every other URL scheme (TC201), absolute paths, `file:` URLs and relative
paths that leave the root folder, symlinks included (TC202). A refused or broken ref is replaced by its
siblings plus a `description` saying why. Local refs of the main document are left to `bundle`/`inline`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from compiler.infra.diagnostics import CompilerError
from compiler.infra.loading import load_document
from compiler.refs import codes
from compiler.refs.pointers import (
    SCHEME,
    Loc,
    PointerError,
    fragment_token,
    render,
    resolve_pointer,
    split_pointer,
    step,
    unescape_token,
)
from compiler.refs.walker import refusal

EXTERNAL_KEY = "x-toolc-external"

# Any `$ref` key whose value does not start with `#` (quoted or not, JSON or YAML): without one, nothing to do.
# The lookahead owns the whitespace: `\s*` before it would backtrack and match `"$ref": "#...` as non-local.
_NON_LOCAL_REF = re.compile(rb"""\$ref["']?\s*:(?!\s*["']?#)""")
# The key must start at the `$` (after a quote, whitespace, `{`, `[`, `,` or at the file's start): Microsoft
# Graph's 2,000 path keys that end in `/$ref"` are not `$ref`s, and used to send its 20 MB through the walk below.
# Checked on each match rather than by a lookbehind in the pattern: a pattern that starts with a literal is
# searched for that literal at C speed, one that starts with a lookbehind tries it at every byte (GitHub: 0.18 s).
_KEY_START = frozenset(b' \t\n\r\f\v{[,"\'')
_DATA_KEYS = frozenset({"enum", "const", "default", "example"})
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")

Report = Callable[[str, str, str, str], None]
"""(code, message, source, pointer)"""


@dataclass
class _File:
    path: Path
    display: str
    data: Any
    slug: str | None
    """None for the main document."""
    anchors: dict[str, list[str]] = field(default_factory=dict)
    """`$anchor` / `$id: "#name"` → pointer tokens, found when the file is loaded (before its `$id`s are dropped);
    empty for the main document, whose anchors `bundle`/`inline` resolve."""


def needs_bundling(raw: bytes) -> bool:
    return any(match.start() == 0 or raw[match.start() - 1] in _KEY_START for match in _NON_LOCAL_REF.finditer(raw))


class ExternalBundler:
    def __init__(self, report: Report, root: Path) -> None:
        self._report = report
        self.root = root.resolve()
        self.files: dict[Path, _File] = {}
        self._slugs: set[str] = set()
        self._queue: list[_File] = []
        self._too_deep: set[str] = set()
        self._rewritten: list[tuple[dict[str, Any], _File, Loc]] = []

    def run(self, main: _File) -> Any:
        self.files[main.path] = main
        self._queue.append(main)
        while self._queue:
            current = self._queue.pop(0)
            self._walk(current.data, current, "", 0, set())
        externals = [f for f in self.files.values() if f.slug is not None]
        if externals:
            attached = main.data.setdefault(EXTERNAL_KEY, {})
            if isinstance(attached, dict):
                for f in externals:
                    assert f.slug is not None
                    attached[f.slug] = f.data
        self._check_pointers(main.data)
        return main.data

    def _check_pointers(self, document: Any) -> None:
        """Once every file sits in one document: each rewritten pointer must name something. A pointer that
        passes through a `$ref` (json-schema-ref-parser allows `other.yaml#/properties/a/type` where `a` is a
        `$ref`) is followed and replaced by the pointer of what it names."""
        for node, file, loc in self._rewritten:
            ref = node.get("$ref")
            if not isinstance(ref, str):
                continue
            try:
                tokens = canonical_tokens(document, ref, 0)
            except PointerError as exc:
                self._report(
                    codes.BAD_POINTER, f"$ref names nothing: {exc}", file.display, render(loc) + "/$ref"
                )
                replacement = refusal(node, ref)
                node.clear()
                node.update(replacement)
                continue
            canonical = "#" + "".join("/" + fragment_token(token) for token in tokens)
            if unescape_token(canonical) != unescape_token(ref):
                node["$ref"] = canonical

    def _walk(self, node: Any, file: _File, loc: Loc, depth: int, seen: set[int]) -> None:
        if depth > codes.MAX_NESTING:
            if file.display not in self._too_deep:
                self._too_deep.add(file.display)
                self._report(
                    codes.TOO_DEEP,
                    f"nesting exceeds {codes.MAX_NESTING} levels; refs below are not followed",
                    file.display,
                    render(loc),
                )
            return
        if isinstance(node, dict):
            if id(node) in seen:
                return
            seen.add(id(node))
            ref = node.get("$ref")
            if isinstance(ref, str) and (file.slug is not None or not ref.startswith("#")):
                self._rewrite(node, ref, file, loc)
            if file.slug is not None and "$id" in node:
                # Its refs now point into the one document; an $id would re-scope them.
                node.pop("$id")
            for key, value in node.items():
                if key not in _DATA_KEYS and isinstance(value, dict | list):
                    self._walk(value, file, (loc, key), depth + 1, seen)
        elif isinstance(node, list):
            if id(node) in seen:
                return
            seen.add(id(node))
            for index, value in enumerate(node):
                if isinstance(value, dict | list):
                    self._walk(value, file, (loc, index), depth + 1, seen)

    def _rewrite(self, node: dict[str, Any], ref: str, file: _File, loc: Loc) -> None:
        def refuse(code: str, message: str) -> None:
            self._report(code, message, file.display, render(loc) + "/$ref")
            replacement = refusal(node, ref)
            node.clear()
            node.update(replacement)

        if ref.startswith("#"):
            target, fragment = file, ref[1:]
        else:
            located = self._locate(ref, file)
            if isinstance(located, tuple):
                refuse(*located)
                return
            path = located
            fragment = ref.partition("#")[2]
            if not path.is_file():
                refuse(codes.MISSING_FILE, f"$ref {ref!r}: file not found ({self._display(path)})")
                return
            loaded = self._load(path)
            if isinstance(loaded, str):
                refuse(codes.MISSING_FILE, f"$ref {ref!r}: {loaded}")
                return
            target = loaded
        if target.slug is None:
            node["$ref"] = "#" + fragment
            if fragment and not fragment.startswith("/"):
                return  # an anchor of the main document: bundle/inline resolve it
        else:
            if fragment and not fragment.startswith("/"):
                tokens = target.anchors.get(unquote(fragment))
                if tokens is None:
                    refuse(codes.BAD_POINTER, f"$ref {ref!r}: no anchor {fragment!r} in {target.display}")
                    return
                fragment = "".join("/" + fragment_token(token) for token in tokens)
            node["$ref"] = f"#/{EXTERNAL_KEY}/{target.slug}{fragment}"
        self._rewritten.append((node, file, loc))

    def _locate(self, ref: str, file: _File) -> Path | tuple[str, str]:
        scheme_match = SCHEME.match(ref)
        scheme = scheme_match.group(0)[:-1].lower() if scheme_match else ""
        if scheme == "file":
            path = file_url_path(ref)
        elif len(scheme) == 1:
            return codes.OUTSIDE_ROOT, f"$ref {ref!r} is an absolute path; refused"
        elif scheme:
            kind = "network" if scheme in ("http", "https") else f"{scheme}:"
            return codes.NETWORK_REF, f"{kind} $ref {ref!r} refused: references are never fetched"
        else:
            relative = ref.partition("#")[0]
            if relative.startswith(("/", "\\")):
                return codes.OUTSIDE_ROOT, f"$ref {ref!r} is an absolute path; refused"
            path = file.path.parent / relative
            if not path.exists() and unquote(relative) != relative:
                path = file.path.parent / unquote(relative)
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            return codes.MISSING_FILE, f"$ref {ref!r}: cannot resolve the path"
        if not resolved.is_relative_to(self.root):
            return codes.OUTSIDE_ROOT, f"$ref {ref!r} leaves the root folder {self.root.name!r}; refused"
        return resolved

    def _load(self, path: Path) -> _File | str:
        known = self.files.get(path)
        if known is not None:
            return known
        display = self._display(path)
        try:
            data = load_document(path, display=display)
        except CompilerError as exc:
            return f"cannot read {display}: {exc.diagnostic.message} [{exc.diagnostic.code}]"
        slug = base = _SLUG.sub("_", display).strip("_") or "file"
        n = 2
        while slug in self._slugs:
            slug, n = f"{base}_{n}", n + 1
        self._slugs.add(slug)
        loaded = _File(path, display, data, slug, find_anchors(data))
        self.files[path] = loaded
        self._queue.append(loaded)
        return loaded

    def _display(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def file_url_path(url: str) -> Path:
    """The path a `file:` URL names, as `urllib.request.url2pathname` reads it (`nturl2path`'s on Windows, the
    percent-decoded path elsewhere), without importing `urllib.request`: it pulls in ssl, http.client and email
    (0.01-0.02 s of every compile's start) for this one function."""
    path = urlparse(url).path
    if os.name == "nt":
        # Imported here, on Windows only: newer Pythons deprecate the module everywhere else.
        from nturl2path import url2pathname

        return Path(url2pathname(path))
    return Path(unquote(path))


def canonical_tokens(document: Any, ref: str, hops: int) -> list[str]:
    """The pointer tokens of what a local `ref` names, following `$ref`s met half-way along it."""
    if hops > 32:
        raise PointerError(f"{ref}: too many $ref hops")
    if not ref.startswith("#"):
        raise PointerError(f"not a local reference: {ref}")
    path: list[str] = []
    node = document
    for token in split_pointer(ref[1:]):
        while isinstance(node, dict) and token not in node and isinstance(node.get("$ref"), str):
            path = canonical_tokens(document, node["$ref"], hops + 1)
            node = resolve_pointer(document, "#" + "".join("/" + fragment_token(t) for t in path))
            hops += 1
        node = step(node, token, ref)
        path.append(token)
    return path


def find_anchors(data: Any) -> dict[str, list[str]]:
    """Every `$anchor` and plain-name `$id` ("#name") in a file, with its pointer (iterative walk)."""
    found: dict[str, list[str]] = {}
    stack: list[tuple[Any, list[str]]] = [(data, [])]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict | list) or id(node) in seen or len(path) > codes.MAX_NESTING:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            anchor, ident = node.get("$anchor"), node.get("$id")
            if isinstance(anchor, str):
                found.setdefault(anchor, path)
            if isinstance(ident, str) and ident.startswith("#") and len(ident) > 1:
                found.setdefault(ident[1:], path)
            stack.extend((value, [*path, key]) for key, value in node.items() if key not in _DATA_KEYS)
        else:
            stack.extend((value, [*path, str(i)]) for i, value in enumerate(node))
    return found


def main_file(path: Path, display: str, data: Any) -> _File:
    return _File(path.resolve(), display, data, None)
