"""OpenAPI Schema Objects → the IR dialect (JSON Schema 2020-12), in one linear walk per schema, no deepcopy.

Conversions (a new dict is built for every schema node; the document is never changed):

- OAS 3.0 `nullable: true` and Swagger 2.0 `x-nullable: true`: `"null"` is added to `type` (and `None` to `enum`);
  with no `type` but a `$ref`/`allOf`/`oneOf`/`anyOf`, the schema becomes `anyOf: [<schema>, {type: null}]`, its
  annotations (title, description, default, examples, deprecated, readOnly, writeOnly) staying outside.
  Without `type` or composition the schema already admits null and the keyword is just dropped.
- boolean `exclusiveMinimum`/`exclusiveMaximum` (OAS 3.0, 2.0) → the numeric 2020-12 form; `false` is dropped.
- `example` → `examples: [example]` (unless `examples` is already there).
- `type: file` (2.0) → `{type: string, format: binary}`; a list-valued `items` (draft-4 tuples) → `prefixItems`.
- kept: `discriminator` (2.0's string form becomes `{propertyName: ...}`; `mapping` values naming a shared schema
  are rewritten to `#/$defs/X`), `readOnly`, `writeOnly`, `deprecated`, `format`, and every JSON Schema keyword.
- dropped: `xml`, `externalDocs`, 2.0's `collectionFormat` (it goes to the binding), and every `x-` keyword (counted; one info diagnostic per source).

References: `#/components/schemas/X` (3.x) and `#/definitions/X` (2.0) become `#/$defs/X`, X being an entry of
`Source.definitions`. Any other local reference that names a schema (`#/components/parameters/p/schema`,
`#/paths/...`, `#/x-toolc-external/...`, a pointer into a shared schema) is lifted into the definitions once,
under a deterministic name derived from its pointer, and referred to as `#/$defs/<name>`: lifting is always
correct, recursive or not, and keeps tool schemas as small as the document. A reference that names nothing, or a
non-local reference (never fetched), is reported (TC307) and replaced by `{}`.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import JsonObject
from compiler.refs import PointerError, defs_ref, escape_token, resolve_pointer, unescape_token
from compiler.schema import (
    DEFINITIONS,
    ITEMS,
    SCHEMA,
    SCHEMA_LIST,
    SCHEMA_MAP,
    IdentityMemo,
    is_data,
    keywords_of,
)
from compiler.sources.openapi.codes import BAD_OBJECT, DROPPED_EXTENSIONS, UNRESOLVED_REF

Where: TypeAlias = "str | tuple[Where, str]"
"""A JSON pointer built lazily: a rendered prefix, or (parent, token). Rendered only for diagnostics."""


def render(where: Where) -> str:
    tokens: list[str] = []
    while isinstance(where, tuple):
        where, token = where
        tokens.append(escape_token(token))
    tokens.append(where)
    return "/".join(reversed(tokens))


def pointer(*tokens: str) -> str:
    return "".join("/" + escape_token(token) for token in tokens)


_SCHEMA, _MAP, _LIST, _ITEMS, _DROP, _SPECIAL = range(1, 7)
_KINDS: dict[str, int] = {
    **dict.fromkeys(keywords_of(SCHEMA_MAP, DEFINITIONS), _MAP),
    **dict.fromkeys(keywords_of(SCHEMA), _SCHEMA),
    **dict.fromkeys(keywords_of(SCHEMA_LIST), _LIST),
    **dict.fromkeys(keywords_of(ITEMS), _ITEMS),
    **dict.fromkeys(("xml", "externalDocs", "nullable", "collectionFormat"), _DROP),
    **dict.fromkeys(("$ref", "x-nullable", "example", "exclusiveMinimum", "exclusiveMaximum", "type",
                     "discriminator"), _SPECIAL),
}
_ANNOTATIONS = ("title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_FILE_SUFFIX = re.compile(r"\.(?:json|ya?ml)$", re.IGNORECASE)


class SchemaNormalizer:
    """Normalises the shared schemas once and every tool-level schema as the operations ask for it.

    `definitions` is the future `Source.definitions`: the document's shared schemas in document order, then the
    lifted ones in the order they were first referenced (deterministic for a given document).
    """

    def __init__(self, document: JsonObject, *, swagger: bool, source: str, diagnostics: Diagnostics) -> None:
        self.document = document
        self.source = source
        self.diagnostics = diagnostics
        self.prefix = "#/definitions/" if swagger else "#/components/schemas/"
        self.definitions: dict[str, Any] = {}
        self.failures = 0
        """Unresolved references and bad schema nodes met so far; operations compare before and after."""
        self.dropped_extensions = 0
        self._raw: dict[str, Any] = {}
        self._rewritten: dict[str, str] = {}
        """Document `$ref` → IR `$ref`, for shared schemas and lifted ones."""
        self._bad_refs: dict[str, str] = {}
        self._memo: IdentityMemo[tuple[Any, int]] = IdentityMemo()
        self._tool = ""

    # -- shared definitions -------------------------------------------------------------------------------

    def load_definitions(self) -> None:
        container_pointer = "/definitions" if self.prefix == "#/definitions/" else "/components/schemas"
        try:
            raw = resolve_pointer(self.document, "#" + container_pointer)
        except PointerError:
            return
        if not isinstance(raw, dict):
            self.diagnostics.warning(BAD_OBJECT, "shared schemas must be a mapping; ignored",
                                     source=self.source, pointer=container_pointer)
            return
        self._raw = raw
        for name in raw:
            self.definitions[name] = {}  # claim every name before lifting can pick one
        for name, schema in raw.items():
            where = container_pointer + "/" + escape_token(name)
            try:
                self.definitions[name] = self.schema(schema, where)
            except RecursionError:
                self._fail(BAD_OBJECT, "the schema nests too deeply to read; replaced by {}", where)

    def finish(self) -> None:
        if self.dropped_extensions:
            self.diagnostics.info(DROPPED_EXTENSIONS,
                                  f"dropped {self.dropped_extensions} `x-` extension keyword(s) from schemas",
                                  source=self.source)

    # -- tool-level entry point ---------------------------------------------------------------------------

    def entry(self, node: Any, where: str, tool: str, *, owner: object = None) -> tuple[Any, bool]:
        """A parameter, body or response schema: normalised once per document node (`owner` when `node` was
        built on the fly, as for Swagger 2.0 parameters); False if it holds a bad reference."""
        key = node if owner is None else owner
        hit = self._memo.get(key)
        if hit is not None:
            return hit[0], hit[1] == 0
        self._tool = tool
        before = self.failures
        result = self.schema(node, where)
        self._tool = ""
        failed = self.failures - before
        self._memo.put(key, (result, failed))
        return result, failed == 0

    # -- the walk -----------------------------------------------------------------------------------------

    def schema(self, node: Any, where: Where) -> Any:
        if not isinstance(node, dict):
            if isinstance(node, bool):
                return node
            self._fail(BAD_OBJECT, f"a schema must be an object, not {type(node).__name__}", where)
            return {}
        out: dict[str, Any] = {}
        nullable = False
        exclusive: list[str] = []
        for key, value in node.items():
            kind = _KINDS.get(key)
            if kind is None:
                if key.startswith("x-"):
                    self.dropped_extensions += 1
                else:
                    out[key] = value
            elif kind == _MAP:
                if isinstance(value, dict):
                    inner = (where, key)
                    out[key] = {name: sub if is_data(key, sub) else self.schema(sub, (inner, name))
                                for name, sub in value.items()}
                else:
                    self._fail(BAD_OBJECT, f"`{key}` must be a mapping of schemas", (where, key))
            elif kind == _SCHEMA or (kind == _ITEMS and not isinstance(value, list)):
                out[key] = self.schema(value, (where, key))
            elif kind in (_LIST, _ITEMS):
                if isinstance(value, list):
                    inner = (where, key)
                    out["prefixItems" if key == "items" else key] = [
                        self.schema(sub, (inner, str(i))) for i, sub in enumerate(value)]
                else:
                    self._fail(BAD_OBJECT, f"`{key}` must be a list of schemas", (where, key))
            elif kind == _DROP:
                if key == "nullable":
                    nullable = value is True
            elif key == "$ref":
                ref = self.ref(value, (where, key)) if isinstance(value, str) else self._bad_ref(value, where)
                if ref:
                    out[key] = ref
            elif key == "type":
                if value == "file":
                    out["type"] = "string"
                    out["format"] = "binary"
                else:
                    out["type"] = value
            elif key == "example":
                if "examples" not in node:
                    out["examples"] = [value]
            elif key == "x-nullable":
                self.dropped_extensions += 1
                nullable = nullable or value is True
            elif key == "discriminator":
                out[key] = self._discriminator(value)
            elif value is True:  # exclusiveMinimum / exclusiveMaximum, OAS 3.0 and 2.0 form
                exclusive.append(key)
            elif not isinstance(value, bool):
                out[key] = value
        for keyword in exclusive:
            bound = "minimum" if keyword == "exclusiveMinimum" else "maximum"
            if bound in out:
                out[keyword] = out.pop(bound)
        if nullable:
            return _nullable(out)
        return out

    def _discriminator(self, value: Any) -> Any:
        if isinstance(value, str):
            return {"propertyName": value}
        if isinstance(value, dict):
            mapping = value.get("mapping")
            if isinstance(mapping, dict):
                return {**value, "mapping": {k: self._mapping_ref(v) for k, v in mapping.items()}}
        return value

    def _mapping_ref(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(self.prefix):
            name = unescape_token(value[len(self.prefix):])
            if name in self._raw:
                return defs_ref(name)
        return value

    # -- references ---------------------------------------------------------------------------------------

    def ref(self, ref: str, where: Where) -> str:
        """The rewritten reference, or "" (reported) when it names nothing."""
        rewritten = self._rewritten.get(ref)
        if rewritten is None:
            rewritten = self._rewrite(ref, where)
            if rewritten:
                self._rewritten[ref] = rewritten
        return rewritten

    def _rewrite(self, ref: str, where: Where) -> str:
        if ref.startswith(self.prefix):
            rest = ref[len(self.prefix):]
            if "/" not in rest:
                name = unescape_token(rest)
                if name in self._raw:
                    return defs_ref(name)
        known = self._bad_refs.get(ref)
        if known is not None:
            return self._unresolved(ref, known, where)
        if not ref.startswith("#"):
            why = ("a network reference; toolc never fetches" if "://" in ref or ref.startswith("//")
                   else "an external reference that was not pulled into the document")
            return self._unresolved(ref, f"$ref {ref!r} is {why}", where)
        try:
            target = resolve_pointer(self.document, ref)
        except PointerError as exc:
            return self._unresolved(ref, f"$ref names nothing in the document: {exc}", where)
        if not isinstance(target, dict | bool):
            return self._unresolved(ref, f"$ref {ref!r} names a {type(target).__name__}, not a schema", where)
        name = self._lift_name(ref)
        self._rewritten[ref] = defs_ref(name)  # before the walk: the target may refer to itself
        self.definitions[name] = {}
        self.definitions[name] = self.schema(target, ref[1:])
        return defs_ref(name)

    def _lift_name(self, ref: str) -> str:
        """`#/components/schemas/X/properties/y` → `X_properties_y`; `#/components/parameters/p/schema` →
        `parameters_p_schema`; a whole external file `#/x-toolc-external/schemas_Pet.yaml` → `Pet` (the part
        of its slug after the last `_`), a pointer into one → the pointer's tokens; `_2`, `_3`... if taken."""
        tokens = [unescape_token(token) for token in ref[2:].split("/")]
        if tokens[0] == "x-toolc-external" and len(tokens) > 1:
            stem = _FILE_SUFFIX.sub("", tokens[1])
            tokens = tokens[2:] or [stem.rsplit("_", 1)[-1] or stem]
        if tokens[:2] == ["components", "schemas"]:
            tokens = tokens[2:]
        elif tokens[:1] in (["components"], ["definitions"]):
            tokens = tokens[1:]
        base = _NAME_CHARS.sub("_", "_".join(tokens)).strip("_") or "schema"
        name, n = base, 1
        while name in self.definitions:
            n += 1
            name = f"{base}_{n}"
        return name

    def _unresolved(self, ref: str, message: str, where: Where) -> str:
        """Report a bad reference; the empty string means "drop the `$ref`"."""
        self._bad_refs[ref] = message
        self._fail(UNRESOLVED_REF, message, where)
        return ""

    def _bad_ref(self, ref: object, where: Where) -> str:
        self._fail(UNRESOLVED_REF, f"$ref must be a string, not {type(ref).__name__}", (where, "$ref"))
        return ""

    def _fail(self, code: str, message: str, where: Where) -> None:
        self.failures += 1
        self.diagnostics.warning(code, message, source=self.source, tool=self._tool, pointer=render(where))


def _nullable(out: JsonObject) -> JsonObject:
    kind = out.get("type")
    if "$ref" in out or "allOf" in out or "oneOf" in out or "anyOf" in out:
        outer = {key: out.pop(key) for key in _ANNOTATIONS if key in out}
        outer["anyOf"] = [out, {"type": "null"}]
        return outer
    if isinstance(kind, str):
        out["type"] = [kind, "null"] if kind != "null" else kind
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    else:
        return out
    enum = out.get("enum")
    if isinstance(enum, list) and None not in enum:
        out["enum"] = [*enum, None]
    return out
