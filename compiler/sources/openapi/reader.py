"""`read_openapi`: one OpenAPI 2.0 / 3.0 / 3.1 document → a `Source` and its `Tool`s.

Order of work: version check, shared schemas (normalised once into `Source.definitions`), security schemes,
then operations in document order. Tool schemas refer to shared schemas as `#/$defs/<name>`; nothing is inlined
or bundled here (that is `RefResolver.bundle`/`inline`, later, per provider), so the pass is linear in the size
of the document. External files are expected to be pulled in already (`RefResolver.load_document`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from compiler.config import OpenApiConfig
from compiler.infra.collector import collector_paused
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Source, Tool
from compiler.policy import UNMATCHED_POLICY_PATTERN, is_selected, unmatched_source_names
from compiler.sources.lost_refs import without_lost_refs
from compiler.sources.openapi.codes import (
    IGNORED_CALLBACKS,
    IGNORED_HEADER,
    NOT_OPENAPI,
    NOT_SELECTED,
    OPERATION_SKIPPED,
    UNKNOWN_FIXED_PARAM,
)
from compiler.sources.openapi.credentials import report_credential_parameters
from compiler.sources.openapi.document import (
    Context,
    Skip,
    base_url,
    dialect_of,
    security_schemes,
    source_info,
)
from compiler.sources.openapi.operations import METHODS, assign_tool_names, build_tool, find_operations
from compiler.sources.openapi.presets import SOURCE_WIDE, SourceWidePresets, unapplied_source_wide
from compiler.sources.openapi.reuse import OperationTools, Unclean, context_key
from compiler.sources.openapi.risk import apply_risk_settings
from compiler.sources.openapi.schema_dialect import SchemaNormalizer
from compiler.sources.reuse import ToolReuse


def read_openapi(document: Any, *, source_id: str, location: str, diagnostics: Diagnostics,
                 config: OpenApiConfig | None = None, reuse: ToolReuse | None = None) -> tuple[Source, list[Tool]]:
    """Never raises on bad input: problems become TC3xx diagnostics, broken operations are skipped.

    The reader needs only the loaded document (external files already pulled in by
    `RefResolver.load_document`); its schemas stay `$ref`s into `Source.definitions`.
    The cyclic garbage collector is paused meanwhile: the pass allocates many small acyclic dicts next to a
    large live document, and collections that re-scan the document would cost ~15% on GitHub's spec.

    With `reuse` (the last compile's tools, `sources.reuse`), an operation whose inputs are the last compile's takes
    its tool from there (`sources.openapi.reuse`); an attempt that meets an operation with effects is dropped,
    diagnostics and all, and the source read from nothing.
    """
    with collector_paused():
        if reuse is not None and reuse.prior:
            attempt = Diagnostics()
            try:
                read = _read(document, source_id, location, attempt, config, reuse)
            except Unclean:
                pass
            else:
                diagnostics.extend(attempt)
                return read
        return _read(document, source_id, location, diagnostics, config, reuse, reusing=False)


def _read(document: Any, source_id: str, location: str, diagnostics: Diagnostics,
          config: OpenApiConfig | None, reuse: ToolReuse | None, *, reusing: bool = True) -> tuple[Source, list[Tool]]:
    empty = Source(id=source_id, kind="openapi", location=location)
    dialect = dialect_of(document, source=location, diagnostics=diagnostics)
    if dialect is None:
        return empty, []
    info = source_info(document, dialect)
    paths = document.get("paths")
    webhooks = _count_webhooks(document)
    if paths is None and dialect == "3.1":
        paths = {}
    if not isinstance(paths, dict):
        diagnostics.report(NOT_OPENAPI, "`paths` is missing or not a mapping: no operations to read",
                           source=location, pointer="/paths")
        return Source(id=source_id, kind="openapi", location=location, info=info), []

    schemas = SchemaNormalizer(document, swagger=dialect == "2.0", source=location, diagnostics=diagnostics)
    ctx = Context(document=document, dialect=dialect, source_id=source_id, location=location,
                  diagnostics=diagnostics, schemas=schemas,
                  base_url_override=config.base_url if config is not None else None)
    if ctx.base_url_override is None:
        ctx.base_url = base_url(document, dialect, ctx)
    operations, callbacks = find_operations(ctx, paths)
    if callbacks or webhooks:
        counted = [f"{n} {what}(s)" for n, what in ((callbacks, "callback"), (webhooks, "webhook")) if n]
        diagnostics.report(IGNORED_CALLBACKS, f"ignored {' and '.join(counted)}: requests the API makes are not tools",
                           source=location)
    if config is not None and not config.enabled:
        diagnostics.report(NOT_SELECTED, f"source disabled: {len(operations)} operation(s) not read", source=location)
        return Source(id=source_id, kind="openapi", location=location, info=info), []

    schemas.load_definitions()
    ctx.security_schemes = security_schemes(ctx)
    assign_tool_names(ctx, operations)
    allow = config.allow_tools if config is not None else ()
    deny = config.deny_tools if config is not None else ()
    fixed_params = config.fixed_params if config is not None else {}
    source_wide = SourceWidePresets(fixed_params.get(SOURCE_WIDE, {}))
    made = OperationTools(ctx, source_wide, context_key(ctx, config) if reuse is not None else None,
                          reuse if reusing else None, keep_for=reuse)
    tools: list[Tool] = []
    unselected = 0
    for operation in operations:
        if not is_selected(operation.name, allow, deny):
            unselected += 1
            continue
        try:
            tools.append(made.tool(operation, partial(build_tool, ctx, operation, fixed_params.get(operation.name, {}),
                                                      source_wide)))
        except Skip:
            diagnostics.report(OPERATION_SKIPPED, f"{operation.method.upper()} {operation.path} is not a tool: "
                               "see the diagnostic before this one", source=location,
                               tool=f"openapi:{source_id}:{operation.name}", pointer=operation.where)
        except RecursionError:
            diagnostics.report(OPERATION_SKIPPED, f"{operation.method.upper()} {operation.path} is not a tool: "
                               "its schemas nest too deeply", source=location,
                               tool=f"openapi:{source_id}:{operation.name}", pointer=operation.where)
    _report_unapplied(source_wide, diagnostics, location)
    for problem in unmatched_source_names((operation.name for operation in operations), allow, deny, fixed_params):
        diagnostics.report(UNMATCHED_POLICY_PATTERN, f"the project file's entry for this document: {problem}",
                           source=location)
    report_credential_parameters(tools, diagnostics, location)
    if unselected:
        diagnostics.report(NOT_SELECTED, f"{unselected} operation(s) left out by allow_tools/deny_tools",
                           source=location)
    if ctx.ignored_headers:
        diagnostics.report(IGNORED_HEADER, f"ignored {ctx.ignored_headers} header parameter(s) named Accept, "
                           "Content-Type or Authorization: media types and security schemes decide those",
                           source=location)
    if config is not None:
        tools = apply_risk_settings(tools, config, diagnostics=diagnostics, location=location)
    schemas.finish()
    tools = without_lost_refs(tools, schemas.definitions, diagnostics, location=location,
                              skipped_code=OPERATION_SKIPPED)
    made.keep()
    source = Source(id=source_id, kind="openapi", location=location, definitions=schemas.definitions, info=info)
    return source, tools


def _report_unapplied(source_wide: SourceWidePresets, diagnostics: Diagnostics, location: str) -> None:
    """A source-wide preset no operation took is an error, as a preset naming nothing is for one operation."""
    for entry in unapplied_source_wide(source_wide.presets, source_wide.applied):
        diagnostics.report(UNKNOWN_FIXED_PARAM, f"preset {entry!r} for every operation ({SOURCE_WIDE!r}) fits no "
                           "operation: no argument of that name, nor a declared path parameter or body field",
                           source=location)


def _count_webhooks(document: Any) -> int:
    count = 0
    for key in ("webhooks", "x-webhooks"):
        hooks = document.get(key)
        if isinstance(hooks, dict):
            for item in hooks.values():
                if isinstance(item, dict) and "$ref" not in item:
                    count += sum(1 for key in item if key in METHODS)
                else:
                    count += 1
    return count
