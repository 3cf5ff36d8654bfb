"""JSON pointers, URI joining and the JSON Schema keyword tables the resolver's walkers share.

Nothing here reports diagnostics: callers turn `PointerError` and failed look-ups into located ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote, urljoin, uses_relative

# -- JSON pointers (RFC 6901, in their URI-fragment form) -------------------------------------------------


class PointerError(LookupError):
    """A JSON pointer that names nothing in its document."""


def unescape_token(token: str) -> str:
    return unquote(token).replace("~1", "/").replace("~0", "~")


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


# Characters a URI fragment may carry as they are (RFC 3986 pchar + "/" + "?"); everything else, including
# "%", spaces and non-ASCII, is percent-encoded so that `unescape_token` gives the name back exactly.
_FRAGMENT_SAFE = "!$&'()*+,;=:@/?~"


def fragment_token(name: str) -> str:
    """A name as one token of a `#/...` reference: pointer-escaped, then URI-fragment-encoded."""
    return quote(escape_token(name), safe=_FRAGMENT_SAFE)


def defs_ref(name: str) -> str:
    """The `$ref` a tool schema uses for a shared definition (round-trips any name, `%` and unicode too)."""
    return "#/$defs/" + fragment_token(name)


def split_pointer(pointer: str) -> list[str]:
    """`/a/b~1c` → `["a", "b/c"]`; `""` → `[]`. Raises PointerError for anything that is not a pointer."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(f"not a JSON pointer: #{pointer}")
    return [unescape_token(raw) for raw in pointer[1:].split("/")]


def step(node: Any, token: str, ref: str) -> Any:
    """One pointer step; raises PointerError naming `ref` when the step leads nowhere."""
    if isinstance(node, Mapping):
        if token not in node:
            raise PointerError(f"{ref}: no key {token!r}")
        return node[token]
    if isinstance(node, list):
        if not token.isdigit() or int(token) >= len(node) or (len(token) > 1 and token[0] == "0"):
            raise PointerError(f"{ref}: no index {token!r}")
        return node[int(token)]
    raise PointerError(f"{ref}: {token!r} is past a leaf")


def resolve_pointer(document: Any, ref: str) -> Any:
    """Follow a local reference (`#`, `#/a/b~1c/0`) inside `document`."""
    if not ref.startswith("#"):
        raise PointerError(f"not a local reference: {ref}")
    node = document
    for token in split_pointer(ref[1:]):
        node = step(node, token, ref)
    return node


# -- locations: cheap linked tuples, rendered to a JSON pointer only when a diagnostic needs one -----------

Loc = str | tuple[Any, str | int]
"""A rendered prefix (`""` for the root, `"/$defs/X"` for a target) or `(parent, token)`."""


def render(loc: Loc) -> str:
    tokens: list[str] = []
    while isinstance(loc, tuple):
        loc, token = loc
        tokens.append(escape_token(str(token)))
    return loc + "".join("/" + t for t in reversed(tokens))


# -- URIs -----------------------------------------------------------------------------------------------

SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

DEFAULT_BASE = "file:///__toolc__/schema.json"
"""The base URI of a schema without `$id`: a relative file `$ref` against it is an external file."""


def join_uri(base: str, ref: str) -> str:
    """RFC 3986 resolution that also keeps URNs and other non-hierarchical bases for `#fragment` refs."""
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    if SCHEME.match(ref):
        return ref
    scheme = base.partition(":")[0].lower()
    if scheme in uses_relative and scheme:
        return urljoin(base, ref)
    return ref


def strip_fragment(uri: str) -> str:
    return uri.partition("#")[0]


# -- JSON Schema keywords -------------------------------------------------------------------------------

SCHEMA = 1
"""The value is one subschema."""
SCHEMA_LIST = 2
"""The value is a list of subschemas."""
SCHEMA_MAP = 3
"""The value maps names to subschemas."""
ITEMS = 4
"""`items`: one subschema (2020-12) or a list of them (draft-07 tuples)."""
DEFINITIONS = 5
"""`$defs` / `definitions`: containers only, reachable by pointer; outputs drop them."""
DYNAMIC = 6
"""`$dynamicRef` / `$recursiveRef`: reported as unsupported."""

KEYWORDS: dict[str, int] = {
    "additionalProperties": SCHEMA,
    "additionalItems": SCHEMA,
    "contains": SCHEMA,
    "propertyNames": SCHEMA,
    "not": SCHEMA,
    "if": SCHEMA,
    "then": SCHEMA,
    "else": SCHEMA,
    "unevaluatedItems": SCHEMA,
    "unevaluatedProperties": SCHEMA,
    "contentSchema": SCHEMA,
    "allOf": SCHEMA_LIST,
    "anyOf": SCHEMA_LIST,
    "oneOf": SCHEMA_LIST,
    "prefixItems": SCHEMA_LIST,
    "properties": SCHEMA_MAP,
    "patternProperties": SCHEMA_MAP,
    "dependentSchemas": SCHEMA_MAP,
    "dependencies": SCHEMA_MAP,
    "items": ITEMS,
    "$defs": DEFINITIONS,
    "definitions": DEFINITIONS,
    "$dynamicRef": DYNAMIC,
    "$recursiveRef": DYNAMIC,
}
"""Keywords whose values hold subschemas. Anything else (`enum`, `const`, `default`, `examples`, unknown
keywords) is data: a `$ref` inside it is not a reference and is copied as written."""

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "discriminator",
        "xml",
        "externalDocs",
    }
)
"""Keywords with no validation effect: they may be merged into a referenced schema as they are."""


def is_annotation(key: str) -> bool:
    return key in ANNOTATIONS or key.startswith("x-")


LEGACY_DIALECTS = ("draft-07", "draft-06", "draft-04", "draft-03")


def is_legacy(schema: Any) -> bool:
    """Drafts before 2019-09 ignore every keyword next to `$ref` and spell anchors as `$id: "#name"`."""
    dialect = schema.get("$schema") if isinstance(schema, Mapping) else None
    return isinstance(dialect, str) and any(name in dialect for name in LEGACY_DIALECTS)
