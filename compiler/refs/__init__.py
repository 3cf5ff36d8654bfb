"""The shared RefResolver (DESIGN.md decision 2). One resolver for MCP and OpenAPI schemas.

Contract (used by sources, providers and codegen):

- `resolve_pointer(document, ref)`: the node a local `#/...` JSON pointer names (RFC 6901 + URI escaping).
- `RefResolver.load_document(path)`: parse a document and pull in every relative-file `$ref` it reaches
  (never the network, never outside the root folder), rewriting them to local pointers under
  `x-toolc-external` (`refs.external`).
- `RefResolver.bundle(schema, defs)`: a self-contained schema whose `$ref`s all point into its own `$defs`;
  recursion kept. `defs` are the source's shared definitions, visible to the schema as `#/$defs/<name>`
  (the schema's own `$defs` win over shared ones of the same name) (`refs.bundler`).
- `refused_ref(node)`: the `$ref` an object stood for when the resolver refused it (its TC2xx diagnostic sits on
  the `$ref`), or None: readers of non-schema objects (OpenAPI operations, parameter lists) skip what was lost.
- `RefResolver.inline(schema, defs, max_depth)`: no `$ref` left; recursion unrolled to `max_depth`, then
  pruned to the referenced schema's type and description, with a diagnostic (`refs.inliner`).

Results are read-only and share unchanged subtrees with their input and with each other: copy before mutating.

Supported: JSON pointers (escaped, percent-encoded), `$defs`/`definitions`/any pointer, `$id` base-URI
changes and embedded resources (absolute, relative, URN), `$anchor` and draft-07 `$id: "#name"` anchors,
draft-07 semantics (siblings of `$ref` ignored) when `$schema` says draft-04/06/07. Not supported:
`$dynamicRef` / `$recursiveRef` (TC209, kept as written); remote documents (TC201, never fetched).

Diagnostic codes (TC201-TC210) are listed in `refs.codes`.
"""

from __future__ import annotations

from compiler.ir import JsonObject
from compiler.refs.codes import (
    BAD_POINTER,
    BUDGET_EXCEEDED,
    EMPTY_LOOP,
    MAX_NESTING,
    MISSING_FILE,
    NETWORK_REF,
    NOT_AN_OBJECT,
    OUTSIDE_ROOT,
    RECURSION_PRUNED,
    TOO_DEEP,
    UNSUPPORTED,
)
from compiler.refs.external import EXTERNAL_KEY
from compiler.refs.pointers import (
    PointerError,
    defs_ref,
    escape_token,
    local_def_name,
    resolve_pointer,
    unescape_token,
)
from compiler.refs.resolver import RefResolver
from compiler.refs.walker import refused_ref

__all__ = [
    "BAD_POINTER",
    "BUDGET_EXCEEDED",
    "EMPTY_LOOP",
    "EXTERNAL_KEY",
    "MAX_NESTING",
    "MISSING_FILE",
    "NETWORK_REF",
    "NOT_AN_OBJECT",
    "OUTSIDE_ROOT",
    "RECURSION_PRUNED",
    "TOO_DEEP",
    "UNSUPPORTED",
    "JsonObject",
    "PointerError",
    "RefResolver",
    "defs_ref",
    "escape_token",
    "local_def_name",
    "refused_ref",
    "resolve_pointer",
    "unescape_token",
]
