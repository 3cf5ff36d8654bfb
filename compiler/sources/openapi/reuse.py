"""Which operations of an OpenAPI source may take the tool the last compile built (`sources.reuse`), and when.

An operation's tool is what `build_tool` makes of the operation, its path item, the rest of the document (shared
components, security, servers, external files pulled in) and the source's settings; the reader's memos only save
work. Two keys say whether those inputs are the last compile's:

- the source's context: sha256 of its id, location, dialect, settings and the document without `paths`;
- an operation's key: sha256 of its place, method, tool name, the operation as decoded and its path item's own
  fields (its `parameters` and `servers`, not its other operations).

Both are taken over the decoded JSON (orjson, in C: Microsoft Graph's 20 MB in 0.05 s), in document order: a
document that only reorders keys is read again. A `$ref` that could lead into `paths` or outside the document
(anything but a plain pointer into `components`, `definitions`, `parameters`, `responses` or pulled-in files)
makes its operation (or, in the context, the whole source) unkeyed: its tool is always built.

Building one operation's tool can do more than make it: report a diagnostic, lift a schema into the shared
definitions, count a dropped `x-` keyword, apply a source-wide preset. Such effects fall to whichever operation
meets a shared node first, so a tool is reused only from a source whose every operation built its tool and did
nothing else (`clean`); then no operation's tool depends on another's. When an operation built here has an effect
while others were reused, the source is read again from nothing (`Unclean`), and is not kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import orjson

from compiler.config import OpenApiConfig
from compiler.ir import Tool
from compiler.sources.openapi.document import Context
from compiler.sources.openapi.operations import METHODS, Operation
from compiler.sources.openapi.presets import SourceWidePresets
from compiler.sources.reuse import ToolReuse

_NOT_PLAIN_REF = re.compile(
    rb'"\$ref":"(?!#/(?:components|definitions|parameters|responses|x-toolc-external)/[^"\\]*")')
"""A `$ref` in compact JSON that is not a pointer into one of those (its first token spelled out, no escape)."""


_OPERATION_KEYS = frozenset({*METHODS, "query", "additionalOperations"})
"""A path item's keys that hold operations: each operation's key holds its own, not its neighbours'."""


class Unclean(Exception):
    """An operation built while others were reused had an effect beyond its tool: read the source from nothing."""


def _plain_refs_only(encoded: bytes) -> bool:
    return _NOT_PLAIN_REF.search(encoded) is None


def context_key(ctx: Context, config: OpenApiConfig | None) -> str | None:
    """The key of everything but `paths` an operation's tool reads, or None when it cannot be keyed."""
    rest = {key: value for key, value in ctx.document.items() if key != "paths"}
    settings = config.model_dump(mode="json") if config is not None else None
    try:
        encoded = orjson.dumps([ctx.source_id, ctx.location, ctx.dialect, settings, rest])
    except TypeError:  # a value JSON has no encoding for (a YAML document's own types): not keyed
        return None
    return hashlib.sha256(encoded).hexdigest() if _plain_refs_only(encoded) else None


def _state(ctx: Context, source_wide: SourceWidePresets) -> tuple[int, ...]:
    """Everything besides its tool that building an operation can change."""
    schemas = ctx.schemas
    return (len(ctx.diagnostics), schemas.failures, schemas.dropped_extensions, len(schemas.definitions),
            ctx.ignored_headers, len(ctx.unknown_schemes), len(source_wide.applied))


class OperationTools:
    """One source's operations → tools: the last compile's where the keys match, else built (and watched)."""

    def __init__(self, ctx: Context, source_wide: SourceWidePresets, context: str | None,
                 reuse: ToolReuse | None, *, keep_for: ToolReuse | None) -> None:
        """`reuse`: the last compile's tools to take (None: build every one); `keep_for`: where a clean source's
        tools are left for the next compile (None: nowhere, and no key is computed)."""
        self.ctx = ctx
        self.source_wide = source_wide
        self.context = context if keep_for is not None else None
        self.reuse = reuse
        self.keep_for = keep_for
        self.prior = reuse.prior_for(ctx.source_id, context) if reuse is not None and context is not None else None
        self.clean = self.context is not None
        self.tools: dict[str, Tool] = {}
        """Operation key → its tool, for the next compile."""
        self._unkeyed: list[tuple[Operation, Tool]] = []
        """Tools built with nothing to reuse: keyed only if the source turns out clean (GitHub's, Stripe's are not)."""

    def tool(self, operation: Operation, build: Callable[[], Tool]) -> Tool:
        key = self._key(operation) if self.prior is not None else None
        if key is not None and self.prior is not None and key in self.prior.tools and self.reuse is not None:
            tool = self.reuse.decode(self.prior, key)
            if tool is not None:
                self.tools[key] = tool
                return tool
        before = _state(self.ctx, self.source_wide)
        try:
            tool = build()
        except Exception:  # a skipped operation: reported, and not a tool
            self._effect()
            raise
        if _state(self.ctx, self.source_wide) != before:
            self._effect()
        if key is not None:
            self.tools[key] = tool
        elif self.prior is None and self.clean:
            self._unkeyed.append((operation, tool))
        return tool

    def _effect(self) -> None:
        self.clean = False
        if self.prior is not None:
            raise Unclean

    def keep(self) -> None:
        """Hand a clean source's tools to the next compile."""
        if not self.clean or self.keep_for is None or self.context is None:
            return
        for operation, tool in self._unkeyed:
            key = self._key(operation)
            if key is not None:
                self.tools[key] = tool
        self.keep_for.keep(self.ctx.source_id, self.context, self.tools)

    def _key(self, operation: Operation) -> str | None:
        """sha256 of the operation as read (a `$ref`'s target) and of its path item's own fields (`parameters`,
        `servers`: not its other operations), or None when it holds a `$ref` that could lead elsewhere."""
        item = {key: value for key, value in operation.path_item.items() if key not in _OPERATION_KEYS}
        try:
            encoded = orjson.dumps([operation.path, operation.item_where, item, operation.method, operation.where,
                                    operation.op_where, operation.name, operation.lost, operation.op])
        except TypeError:
            return None
        return hashlib.sha256(encoded).hexdigest() if _plain_refs_only(encoded) else None
