"""Where a `$ref` leads: one `Scope` per bundle/inline call resolves references against the schema (with the
shared definitions overlaid as `#/$defs/<name>`), its embedded resources (`$id`) and anchors.

The common case — a fragment ref like `#/$defs/X` at the document's own base — is a dictionary look-up; the
index of `$id` resources and anchors is built only when some ref needs it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.refs import codes
from compiler.refs.pointers import (
    DEFAULT_BASE,
    SCHEME,
    PointerError,
    escape_token,
    join_uri,
    split_pointer,
    step,
    strip_fragment,
)
from compiler.schema import DYNAMIC, KEYWORDS, SCHEMA

_INDEX_KINDS = {k: v for k, v in KEYWORDS.items() if v != DYNAMIC}


@dataclass(frozen=True, slots=True)
class Target:
    node: Any
    base: str
    """The base URI around the node (the node's own `$id`, if any, is applied by whoever walks it)."""
    loc: str
    """Where the target is, for diagnostics: a JSON pointer or an absolute URI."""
    hint: str
    """A name for it in the bundled `$defs`."""
    shared: str | None = None
    """Set when the target is exactly the shared definition of that name (memoisable)."""
    own_def: str | None = None
    """Set when the target is exactly the schema's own `$defs/<name>`."""

    @property
    def key(self) -> Hashable:
        """Shared definitions by name (stable across calls, so memoised outputs agree); the rest by identity."""
        return ("$defs", self.shared) if self.shared is not None else id(self.node)


@dataclass(frozen=True, slots=True)
class Failure:
    code: str
    message: str


class Scope:
    def __init__(self, schema: Any, defs: Mapping[str, Any], *, legacy: bool) -> None:
        self.root = schema
        self.defs = defs
        self.legacy = legacy
        own = schema.get("$defs") if isinstance(schema, Mapping) else None
        self.own_defs: Mapping[str, Any] = own if isinstance(own, Mapping) else {}
        self.shadowed = any(name in defs for name in self.own_defs)
        """Own `$defs` names hide shared ones: memoised shared results must not be used then."""
        self.root_base = self.apply_id(schema, DEFAULT_BASE)
        self._resources: dict[str, tuple[Any, str]] | None = None
        self._anchors: dict[str, tuple[Any, str]] = {}
        self._loops: dict[Hashable, bool] = {}

    def apply_id(self, node: Any, base: str) -> str:
        """The base URI inside `node`, given the base around it."""
        if not isinstance(node, (dict, Mapping)):  # dict first: no ABC check
            return base
        ident = node.get("$id")
        if not isinstance(ident, str) or ident.startswith("#"):
            return base
        if self.legacy and "$ref" in node:
            return base  # drafts <= 7: $ref makes every sibling, $id included, be ignored
        return strip_fragment(join_uri(base, ident))

    # -- resolution -------------------------------------------------------------------------------------

    def resolve(self, ref: str, base: str) -> Target | Failure:
        if ref.startswith("#") and base == self.root_base:
            return self._in_root(ref[1:], ref)
        absolute = join_uri(base, ref)
        doc, _, fragment = absolute.partition("#")
        if doc == self.root_base:
            return self._in_root(fragment, ref)
        found = self._index().get(doc)
        if found is None:
            return self._unknown(ref, absolute)
        node, outer = found
        if fragment == "":
            return Target(node, outer, doc, _hint_from_uri(doc))
        if not fragment.startswith("/"):
            return self._anchor(doc, fragment, ref)
        try:
            tokens = split_pointer(fragment)
        except PointerError as exc:
            return Failure(codes.BAD_POINTER, str(exc))
        return self._follow(node, outer, tokens, 0, ref, absolute)

    def _in_root(self, fragment: str, ref: str) -> Target | Failure:
        if fragment == "":
            return Target(self.root, DEFAULT_BASE, "", "root")
        if not fragment.startswith("/"):
            return self._anchor(self.root_base, fragment, ref)
        try:
            tokens = split_pointer(fragment)
        except PointerError as exc:
            return Failure(codes.BAD_POINTER, str(exc))
        if len(tokens) >= 2 and tokens[0] == "$defs":
            name = tokens[1]
            if name in self.own_defs:
                node, own, shared = self.own_defs[name], name, None
            elif name in self.defs:
                node, own, shared = self.defs[name], None, name
            else:
                return Failure(codes.BAD_POINTER, f"{ref}: no definition {name!r}")
            if len(tokens) == 2:
                return Target(node, self.root_base, _pointer(tokens), name, shared, own)
            return self._follow(node, self.root_base, tokens, 2, ref, _pointer(tokens))
        return self._follow(self.root, DEFAULT_BASE, tokens, 0, ref, _pointer(tokens))

    def _follow(
        self, node: Any, base: str, tokens: list[str], start: int, ref: str, loc: str
    ) -> Target | Failure:
        try:
            hops = 0
            for token in tokens[start:]:
                base = self.apply_id(node, base)
                # Lenient like json-schema-ref-parser: a pointer may pass through a `$ref` (only where the
                # plain pointer would name nothing, so no valid schema changes meaning).
                while isinstance(node, Mapping) and token not in node and isinstance(node.get("$ref"), str):
                    hops += 1
                    via = self.resolve(node["$ref"], base) if hops <= 16 else None
                    if not isinstance(via, Target):
                        break
                    node, base = via.node, self.apply_id(via.node, via.base)
                node = step(node, token, ref)
        except PointerError as exc:
            return Failure(codes.BAD_POINTER, str(exc))
        if len(tokens) == 2 and tokens[0] in ("definitions", "$defs"):
            hint = tokens[1]
        else:
            hint = "_".join(tokens[-3:]) if tokens else "root"
        return Target(node, base, loc, hint)

    def _anchor(self, doc: str, name: str, ref: str) -> Target | Failure:
        self._index()
        found = self._anchors.get(doc + "#" + name)
        if found is None:
            return Failure(codes.BAD_POINTER, f"{ref}: no anchor {name!r}")
        node, outer = found
        return Target(node, outer, ref, name)

    def _unknown(self, ref: str, absolute: str) -> Failure:
        scheme_match = SCHEME.match(ref)
        scheme = scheme_match.group(0)[:-1].lower() if scheme_match else ""
        if scheme in ("http", "https") or (not scheme and absolute.startswith(("http:", "https:"))):
            return Failure(codes.NETWORK_REF, f"network $ref {ref!r} refused: references are never fetched")
        if scheme == "file" or len(scheme) == 1:
            return Failure(codes.OUTSIDE_ROOT, f"$ref {ref!r} names an absolute file path; refused")
        if scheme:
            return Failure(codes.BAD_POINTER, f"$ref {ref!r} names no resource in this schema")
        if absolute.startswith("file:"):
            path = ref.partition("#")[0]
            if path.startswith(("/", "\\")) or ".." in path.replace("\\", "/").split("/"):
                return Failure(codes.OUTSIDE_ROOT, f"$ref {ref!r} leaves the schema's folder; refused")
            return Failure(codes.MISSING_FILE, f"$ref {ref!r} names a file; only load_document reads files")
        return Failure(codes.BAD_POINTER, f"$ref {ref!r} (= {absolute}) names no resource in this schema")

    # -- ref chains with no content (A -> B -> A) --------------------------------------------------------

    def loops(self, target: Target) -> bool:
        """Whether following `$ref` from the target (and only `$ref`) comes back without ever reaching content."""
        known = self._loops.get(target.key)
        if known is not None:
            return known
        seen = {target.key}
        current: Target | Failure = target
        result = False
        for _ in range(64):
            assert isinstance(current, Target)
            node = current.node
            ref = node.get("$ref") if isinstance(node, Mapping) else None
            if not isinstance(ref, str):
                break
            current = self.resolve(ref, self.apply_id(node, current.base))
            if isinstance(current, Failure):
                break
            if current.key in seen:
                result = True
                break
            seen.add(current.key)
        self._loops[target.key] = result
        return result

    # -- embedded resources and anchors -----------------------------------------------------------------

    def _index(self) -> dict[str, tuple[Any, str]]:
        if self._resources is None:
            self._resources = {}
            self._register(self.root, DEFAULT_BASE, 0)
            self._resources.setdefault(self.root_base, (self.root, DEFAULT_BASE))
            for node in self.defs.values():
                self._register(node, self.root_base, 1)
        return self._resources

    def _register(self, node: Any, outer: str, depth: int) -> None:
        if not isinstance(node, Mapping) or depth > codes.MAX_NESTING:
            return
        assert self._resources is not None
        base = self.apply_id(node, outer)
        if base != outer:
            self._resources.setdefault(base, (node, outer))
        anchor = node.get("$anchor")
        if isinstance(anchor, str):
            self._anchors.setdefault(base + "#" + anchor, (node, outer))
        ident = node.get("$id")
        # Plain-name `$id` ("#name") is a draft-07 anchor; 2020-12 forbids the form, so honouring it always
        # changes no valid schema (json-schema-ref-parser's fixtures use it without `$schema`).
        if isinstance(ident, str) and ident.startswith("#") and len(ident) > 1:
            self._anchors.setdefault(base + ident, (node, outer))
        for key, value in node.items():
            kind = _INDEX_KINDS.get(key)
            if kind is None:
                continue
            if kind == SCHEMA or (isinstance(value, Mapping) and key == "items"):
                self._register(value, base, depth + 1)
            elif isinstance(value, list):
                for item in value:
                    self._register(item, base, depth + 1)
            elif isinstance(value, Mapping):
                for item in value.values():
                    self._register(item, base, depth + 1)


def _pointer(tokens: list[str]) -> str:
    return "".join("/" + escape_token(token) for token in tokens)


def _hint_from_uri(uri: str) -> str:
    tail = uri.rstrip("/").rpartition("/")[2] or uri
    return tail.rpartition(":")[2] or tail
