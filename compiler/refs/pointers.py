"""JSON pointers and URI joining for the resolver's walkers (the keyword tables are `compiler.schema`'s).

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


DEFS_PREFIX = "#/$defs/"


def local_def_name(ref: str) -> str | None:
    """`#/$defs/a~1b` → `a/b`; None for any other reference (the inverse of `defs_ref` for a shared definition)."""
    if ref.startswith(DEFS_PREFIX) and "/" not in ref[len(DEFS_PREFIX):]:
        return unescape_token(ref[len(DEFS_PREFIX):])
    return None


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
