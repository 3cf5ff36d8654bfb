"""The only place that orders the stages (`_STAGES`, run by `compile_project` under the project's limits):

    config ─► read sources ─► Catalog ─► catalog.json ─► providers (schemas/) ─► fit (toolsets, tokens)
           ─► codegen (python/) ─► lock ─► write

Each stage adds its files to the `Build` and hands on a typed value the later ones read (`build.py`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from compiler.build import Build
from compiler.catalog_json import emit_catalog
from compiler.codegen.cache import load_record, save_record
from compiler.codegen.python import emit_python
from compiler.config import (
    DUPLICATE_SOURCE,
    UNKNOWN_TARGET,
    Config,
    OpenApiConfig,
    RecordingConfig,
    ServerConfig,
)
from compiler.drift.lock import emit_lock
from compiler.fit.forms import emit_fit
from compiler.incremental import project as project_cache
from compiler.incremental.ir_hash import tool_hashes
from compiler.infra import limits
from compiler.infra.collector import paused_then_frozen
from compiler.infra.detect import detect_kind
from compiler.infra.diagnostics import CompilerError, Diagnostics
from compiler.infra.loading import recording_reads
from compiler.infra.output import OutputFolder, write_tree
from compiler.infra.progress import Progress
from compiler.ir import Catalog, Source, Tool
from compiler.policy import UNMATCHED_POLICY_PATTERN, unmatched_policy_patterns
from compiler.preset_secrets import warn_literal_secret_presets
from compiler.providers.registry import PROVIDERS
from compiler.providers.schemas import emit_providers
from compiler.refs import RefResolver
from compiler.sources import reuse as tool_reuse
from compiler.sources.openapi import read_openapi
from compiler.sources.recording import read_recording
from compiler.sources.reuse import ToolReuse

UNKNOWN_KIND = "TC104"

@dataclass(frozen=True)
class Input:
    """One thing to read: an OpenAPI document, a recorded listing, or (with --live) a server."""

    path: Path
    display: str
    source_id: str | None
    settings: OpenApiConfig | RecordingConfig | ServerConfig | None = None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def project_inputs(config: Config) -> list[Input]:
    inputs: list[Input] = []
    entries: list[OpenApiConfig | RecordingConfig] = [*config.openapi, *config.recordings]
    for entry in entries:
        inputs.append(Input(config.path(entry.path), entry.path, entry.id, entry))
    for server in config.mcp_servers:
        if server.enabled:
            inputs.append(Input(config.path(server.recording_path), server.recording_path, server.id, server))
    return inputs


def adhoc_inputs(paths: Iterable[Path], root: Path) -> list[Input]:
    return [Input(path, _relative(path, root), None) for path in paths]


def openapi_settings(inputs: Iterable[Input]) -> dict[str, OpenApiConfig]:
    """Source id → its `openapi:` entry in the project file (the id `_read_input` gives the source)."""
    return {item.source_id or item.path.stem: item.settings for item in inputs
            if isinstance(item.settings, OpenApiConfig)}


def _read_input(item: Input, resolver: RefResolver, diagnostics: Diagnostics,
                reuse: ToolReuse | None = None) -> tuple[Source, list[Tool]] | None:
    """Read one input into IR; a fatal problem becomes an error diagnostic and the input is left out."""
    try:
        document = resolver.load_document(item.path, display=item.display)
        kind = detect_kind(document)
        if kind == "openapi":
            settings = item.settings if isinstance(item.settings, OpenApiConfig) else None
            source_id = item.source_id or item.path.stem
            return read_openapi(document, source_id=source_id, location=item.display,
                                diagnostics=diagnostics, config=settings, reuse=reuse)
        if kind == "mcp-recording":
            server = document.get("server") if isinstance(document.get("server"), str) else None
            source_id = item.source_id or server or item.path.stem
            return read_recording(document, source_id=source_id, location=item.display, diagnostics=diagnostics,
                                  config=_recording_settings(item.settings))
        diagnostics.report(UNKNOWN_KIND, "neither an OpenAPI document nor an MCP tool listing", source=item.display)
    except CompilerError as exc:
        diagnostics.add(exc.diagnostic)
    return None


def _recording_settings(settings: Any) -> RecordingConfig | None:
    if isinstance(settings, RecordingConfig):
        return settings
    if isinstance(settings, ServerConfig):
        return RecordingConfig(id=settings.id, path=settings.recording_path, enabled=settings.enabled,
                               allow_tools=settings.allow_tools, deny_tools=settings.deny_tools,
                               fixed_params=settings.fixed_params, trusted=settings.trusted)
    return None


def build_catalog(read: Iterable[tuple[Source, list[Tool]]], diagnostics: Diagnostics) -> Catalog:
    sources: dict[str, Source] = {}
    tools: list[Tool] = []
    for source, source_tools in read:
        if source.id in sources:
            diagnostics.report(DUPLICATE_SOURCE, f"two inputs have the source id {source.id!r}: give one an `id`",
                               source=source.location)
            continue
        sources[source.id] = source
        tools.extend(source_tools)
    return Catalog(sources=tuple(sorted(sources.values(), key=lambda s: s.id)),
                   tools=tuple(sorted(tools, key=lambda t: t.id)))


def read_catalog(config: Config, inputs: list[Input], resolver: RefResolver, diagnostics: Diagnostics,
                 *, live: bool = False, reuse: ToolReuse | None = None) -> Catalog:
    """With `live`, servers are asked for their listings (`sources.mcp_live.fetch_listings`), which come back in
    the same shape as recordings and go through the same reader: live and recorded compiles cannot differ.
    With `reuse`, OpenAPI sources take the tools of operations that did not change from the last compile."""
    live_listings: dict[str, Any] = {}
    if live:
        from compiler.sources.mcp_live import fetch_listings

        servers = [item.settings for item in inputs if isinstance(item.settings, ServerConfig)]
        live_listings = fetch_listings(servers, diagnostics, root=config.root)
    read: list[tuple[Source, list[Tool]]] = []
    for item in inputs:
        if live and isinstance(item.settings, ServerConfig):
            listing = live_listings.get(item.settings.id)
            if listing is not None:
                read.append(read_recording(listing, source_id=item.settings.id, location=item.display,
                                           diagnostics=diagnostics, config=_recording_settings(item.settings)))
            continue
        result = _read_input(item, resolver, diagnostics, reuse)
        if result is not None:
            read.append(result)
    return build_catalog(read, diagnostics)


def check_targets(targets: Iterable[str], diagnostics: Diagnostics) -> tuple[str, ...]:
    chosen: list[str] = []
    for target in targets:
        if target not in PROVIDERS:
            diagnostics.report(UNKNOWN_TARGET, f"unknown target {target!r}; choose from {', '.join(PROVIDERS)}")
        elif target not in chosen:
            chosen.append(target)
    return tuple(chosen)


def compile_project(
    config: Config,
    inputs: list[Input] | None = None,
    *,
    targets: Iterable[str] | None = None,
    live: bool = False,
    out_dir: Path | None = None,
    progress: Progress | None = None,
) -> Build:
    """Run every stage in memory. Nothing is written: see `write_build`. `progress` hears each stage (one step
    per stage and per target; the caller ends it after writing).

    The compile runs under the project's limits (`compiler.infra.limits`), including its memory budget: running out
    of it anywhere is the diagnostic TC139, and the stages after it do not run."""
    with limits.use(config.limits), limits.memory_budget(config.limits.memory_mb), recording_reads() as reads:
        build = _compile(config, inputs, targets=targets, live=live, out_dir=out_dir, progress=progress or Progress())
    if not live:  # a live compile read servers, not files: nothing proves it unchanged later
        build.reads = dict(reads)
        build.project_key = project_cache.fingerprint(config, inputs, build.targets, build.reads)
    return build


def _compile(config: Config, inputs: list[Input] | None, *, targets: Iterable[str] | None, live: bool,
             out_dir: Path | None, progress: Progress) -> Build:
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics, max_depth=config.resolver.max_depth, node_budget=config.resolver.node_budget)
    chosen = check_targets(targets if targets is not None else config.targets, diagnostics)
    progress.begin(1 + len(_STAGES) + len(chosen), "reading sources")
    destination = out_dir or config.output_dir
    try:
        # Reading decodes each document and builds the catalog: millions of small acyclic containers. With the
        # collector running, decoding alone set off collections that only rescanned what it was building
        # (GitHub's 13 MB: 0.15 s of decoding, 0.08 s paused); what reading leaves is frozen as it ends (below).
        with paused_then_frozen():
            reuse = tool_reuse.load(destination, diagnostics)
            catalog = read_catalog(config, inputs if inputs is not None else project_inputs(config), resolver,
                                   diagnostics, live=live, reuse=reuse)
    except Exception as exc:
        gc.unfreeze()
        if not limits.is_out_of_memory(exc):
            raise
        _out_of_memory(diagnostics, config, "while reading the sources")
        return Build(config=config, catalog=build_catalog((), diagnostics), resolver=resolver,
                     diagnostics=diagnostics, targets=chosen)
    try:  # from here every way out unfreezes: reading froze what it made
        warn_literal_secret_presets(config, diagnostics)
        progress.step(f"catalog.json: {len(catalog.tools)} tools")
        _warn_unmatched_policy(config, catalog, diagnostics)
        # The catalog lives, unchanged, until the end of the compile: out of the cyclic GC's generations (frozen
        # as reading ended, and what the warnings made now), the collector stops rescanning its millions of objects
        # (a third of lowering time on Microsoft Graph) and forked workers stop dirtying the pages they share with
        # this process.
        gc.freeze()
        build = Build(config=config, catalog=catalog, resolver=resolver, diagnostics=diagnostics, targets=chosen,
                      previous_output=OutputFolder(destination), previous_codegen=load_record(destination),
                      progress=progress, out_dir=destination, known_tools=reuse.known)
        build.saved_with_output.append(partial(_save_tools, build, reuse, destination))
        done = "reading the sources"
        for stage, run in _STAGES:
            if limits.over_budget():  # checked between stages: what one stage left behind stops the next
                _out_of_memory(diagnostics, config, f"after {done}")
                break
            progress.stage(stage)
            try:
                run(build)
            except Exception as exc:
                if not limits.is_out_of_memory(exc):
                    raise
                _out_of_memory(diagnostics, config, f"in {stage}")
                break
            progress.step()
            done = stage
    finally:
        gc.unfreeze()  # a process that compiles again (tests, the pytest plugin) gets its memory back
    return build


def _save_tools(build: Build, reuse: ToolReuse, destination: Path) -> None:
    """The tools cache, for the next compile: with the IR hashes this one made (none without targets)."""
    reuse.save(destination, {tool.id: tool for tool in build.catalog.tools}, build.ir_hashes or {})


def _catalog(build: Build) -> None:
    if not build.targets:                      # catalog.json: the IR as read (with targets: written below, while
        emit_catalog(build)                    # a forked worker lowers beside this process)


def _providers(build: Build) -> None:
    if build.targets:                          # each tool's IR hash: the key of its lowering's reuse, and the lock's
        build.ir_hashes = tool_hashes(build.catalog, build.known_ir)
        build.providers = emit_providers(build, meanwhile=partial(emit_catalog, build))
    else:
        build.providers = emit_providers(build)  # schemas/<target>.json + .names.json, per target


def _fit(build: Build) -> None:
    build.fit = emit_fit(build)                # toolsets, discovery/deferred forms, token counts, budgets


def _codegen(build: Build) -> None:
    build.codegen = emit_python(build)         # python/: stubs and router (reads the providers' name maps)


def _lock(build: Build) -> None:
    build.lock = emit_lock(build)              # toolc.lock, last: hashes the catalog and the providers' output


_STAGES: tuple[tuple[str, Callable[[Build], None]], ...] = (
    ("catalog.json", _catalog), ("schemas/", _providers), ("schemas/ (fit)", _fit), ("python/", _codegen),
    ("toolc.lock", _lock))
"""The stages after reading, in order; each hands on a typed value the later ones read (`build.py`)."""


def _out_of_memory(diagnostics: Diagnostics, config: Config, stage: str) -> None:
    diagnostics.report(limits.OUT_OF_MEMORY, f"the compile went over its memory budget {stage} (limits.memory_mb="
                       f"{config.limits.memory_mb}); nothing is written")


def write_build(build: Build, out_dir: Path) -> None:
    """Swap the output folder in, then refresh the caches beside it (codegen's, and the project record that lets
    `toolc check` prove an unchanged project without compiling)."""
    write_tree(out_dir, build.files)
    for save in build.saved_with_output:
        save()
    if build.codegen is not None:
        save_record(out_dir, build.codegen)
    if build.project_key is not None and build.reads is not None:
        record = project_cache.ProjectRecord(reads=build.reads, outputs=project_cache.output_hashes(build.files),
                                             tools=len(build.catalog.tools))
        project_cache.save(out_dir, build.project_key, record)


def _warn_unmatched_policy(config: Config, catalog: Catalog, diagnostics: Diagnostics) -> None:
    """TC326 for each `policy` name or pattern that matches no tool: a deny rule that matches nothing protects
    nothing, and the user believes it does (an error under `--strict`, as every warning is)."""
    lists = {"allow_tools": config.policy.allow_tools, "deny_tools": config.policy.deny_tools,
             "admin_tools": config.policy.admin_tools, "deny_side_effect_tags": config.policy.deny_side_effect_tags}
    for key, index, pattern in unmatched_policy_patterns(catalog.tools, lists):
        what = "side-effect tag" if key == "deny_side_effect_tags" else "tool id or name"
        diagnostics.report(UNMATCHED_POLICY_PATTERN, f"policy.{key}: {pattern!r} matches no {what} of the "
                           f"{len(catalog.tools)} tools; check its spelling (globs: *, ?, [...])",
                           pointer=f"/policy/{key}/{index}")
