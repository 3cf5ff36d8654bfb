"""Fit every target's output to what one request may carry: toolsets, the discovery form, the provider's deferred
form, token counts and budgets. Runs after the providers stage, before codegen (the router serves discovery from it).

Files (per target T, beside `schemas/T.json`):
    schemas/toolsets/<name>.T.json   one toolset's tools array (fits T's request limit)
    schemas/toolsets/index.json      toolset → tools and, per target, file/tools/tokens; tool → toolsets, tokens;
                                     per target, what each form costs at the start of a request (`forms`)
    schemas/discovery.T.json         the three meta-tools (`discovery.py`)
    schemas/code.T.json              code mode's two meta-tools (`codemode.py`): search the functions, run a program
    schemas/T.deferred.json          the provider's own deferred loading, where it has one (`deferred.py`): the
                                     `tools` argument as is, its search tool and every tool with
                                     `defer_loading: true` (OpenAI Responses: in `namespace` groups,
                                     `namespaces.py`); left out with TC773 when it would exceed a request

Budgets (`budgets:` in the project file) apply to every file of T that holds tools as they are: `schemas/T.json`
(when it holds them) and each toolset file; over budget is TC770, naming the file's largest tools.

`schemas/T.json` keeps every tool when they fit T's request limit. When they do not, it is written in the
discovery form instead (TC771), so that no tools file toolc writes exceeds a request limit; the toolset files and
the discovery form together still reach every tool through the one name map of T.

Nothing here decodes a tools file or encodes a tool again: a toolset file is byte ranges of `schemas/T.json` and
token counts add up from the per-tool figures the lowering workers counted (`spans.py`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from compiler.build import Build, FitOutput, TargetOutput
from compiler.config import Config
from compiler.fit import aside as aside_files
from compiler.fit import deferred
from compiler.fit.codemode import code_tools
from compiler.fit.discovery import meta_tools
from compiler.fit.guide import guide
from compiler.fit.namespaces import Namespace, plan_namespaces
from compiler.fit.toolsets import Toolset, plan_toolsets
from compiler.incremental.kept_files import KeptFiles, recipe
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.serialize import canonical_json
from compiler.ir import JsonObject, Tool
from compiler.providers import codes, spans, tokens
from compiler.providers.dialect import Deferral, LoweringCache, lower_env
from compiler.providers.lower import lower_tool, wants_strict
from compiler.providers.registry import ALIASES, PROVIDERS

INDEX_FORMAT = 1
DEFAULT_LIMIT = 128
"""Toolset size when no target declares a request limit."""


def _diag(code: str, message: str, target: str = "", tool: str = "") -> Diagnostic:
    return Diagnostic.of(code, message, provider=target, tool=tool, pointer="/" if tool else "")


def limit_for(targets: Iterable[str], config: Config) -> int:
    """Tools per toolset: the smallest request limit of the targets, or the project's smaller `max_tools`."""
    limits = [PROVIDERS[t].caps.max_tools for t in targets if PROVIDERS[t].caps.max_tools is not None]
    configured = config.toolsets.max_tools
    return min([*(limit for limit in limits if limit is not None), *([configured] if configured else [])],
               default=DEFAULT_LIMIT)


def toolset_limit(build: Build) -> int:
    return limit_for(build.targets, build.config)


REVERSIBLE = frozenset({codes.MAP_ENTRIES, codes.JSON_ENCODED})
"""Loss codes that are reversible transforms (the router undoes them before validating and calling)."""


def budgets(build: Build) -> dict[str, int]:
    """Target → token budget (an alias's budget applies to each of its targets; a target's own wins)."""
    out: dict[str, int] = {}
    for key, value in build.config.budgets.items():
        if key in ALIASES:
            for target in ALIASES[key]:
                out.setdefault(target, value)
    out.update({key: value for key, value in build.config.budgets.items() if key in PROVIDERS})
    return out


def _meta_form(build: Build, target: str, tools: list[Tool], shared: LoweringCache) -> list[JsonObject]:
    """The `tools` argument of a form made of toolc's meta-tools (discovery, code mode), lowered for `target`.
    Each tool with a cache of its own, but every one with `shared`'s pruned-recursion index: a fresh index read
    the build's every diagnostic again looking for the tool's pruned recursions (Microsoft Graph: 20 meta-tools,
    230,000 diagnostics each time, 0.4 s of a recompile's fit)."""
    dialect = PROVIDERS[target]
    strict = wants_strict(target, build.config)
    definitions: list[JsonObject] = []
    for tool in tools:
        env = lower_env(build.resolver, {}, build.config, LoweringCache(pruned=shared.pruned))
        lowered, _entry, _found = lower_tool(target, tool, tool.name, env, strict=strict)
        assert lowered is not None, f"meta-tool {tool.name} does not lower for {target}"
        definitions.append(lowered.definition)
    return dialect.tools_array(definitions)


def _largest(costs: Mapping[str, int], names: Mapping[str, str], ids: list[str], count: int = 3) -> str:
    """The largest tools by provider name (diagnostics are printed cut short: names, not ids)."""
    top = sorted(ids, key=lambda tool_id: (-costs[tool_id], tool_id))[:count]
    return ", ".join(f"{names.get(tool_id, tool_id)} ({costs[tool_id]})" for tool_id in top)


def _provider_names(output: TargetOutput) -> dict[str, str]:
    """Tool id → provider name, from the name map (the definitions themselves stay in their file)."""
    return {entry["tool"]: name for name, entry in output.names.get("tools", {}).items()}


class _Namespaces:
    """The namespaces, planned once for the targets that group deferred functions."""

    def __init__(self) -> None:
        self.planned: list[Namespace] | None = None

    def __call__(self, toolsets: list[Toolset], by_id: Mapping[str, Tool]) -> list[Namespace]:
        if self.planned is None:
            self.planned = plan_namespaces(toolsets, by_id)
        return self.planned


def _deferred_recipe(output: TargetOutput, form: deferred.DeferredForm) -> str:
    """What the deferred file is made of (`kept_files.recipe`): its skeleton and the definitions, in order."""
    skeleton = hashlib.sha256(canonical_json(form.skeleton)).hexdigest()
    return recipe(["deferred", output.target, skeleton, *(output.digests[tool_id] for tool_id in form.tool_ids)])


def _write_deferred(build: Build, kept: KeptFiles, path: str, output: TargetOutput, form: deferred.DeferredForm,
                    source: BinaryIO) -> int:
    """Write the deferred file (or keep the last compile's, made of the same); its size."""
    file_recipe = _deferred_recipe(output, form)
    found = kept.find(path, file_recipe)
    if found is None:
        size = build.files.write_chunks(path, deferred.chunks(form, output.layout, source))
    else:
        build.files.keep(path, found.path, found.digest)
        size = build.files.size(path)
    kept.record(path, file_recipe, build.files.digest(path))
    return size


def _deferred_path(target: str) -> str:
    return f"schemas/{target}.deferred.json"


def _deferred_jobs(build: Build, namespaces: list[Namespace]) -> list[aside_files.DeferredJob]:
    """The deferred forms a child may write: those no byte limit applies to (their size is not needed before the
    index is written) and within their tool limit."""
    jobs = []
    for target, output in build.providers.items():
        deferral = PROVIDERS[target].deferral
        if deferral is None or deferral.max_bytes is not None:
            continue
        form = deferred.plan(deferral, list(output.layout.spans), namespaces)
        if not _over_limits(deferral, 0, len(form.tool_ids)):
            jobs.append(aside_files.DeferredJob(_deferred_path(target), target, form, _deferred_recipe(output, form)))
    return jobs


def _deferred(build: Build, kept: KeptFiles, output: TargetOutput, source: BinaryIO,
              namespaces: list[Namespace], writer: aside_files.AsideWriter) -> dict[str, Any]:
    """Write `schemas/<target>.deferred.json` (or leave it to the child writing aside: then its row's `bytes` are
    set by `emit_fit` once it is taken in), or say why it cannot be sent (TC773); its index row."""
    dialect, layout = PROVIDERS[output.target], output.layout
    deferral = dialect.deferral
    assert deferral is not None
    path = _deferred_path(dialect.target)
    job = writer.deferred_job(path)
    form = job.form if job is not None else deferred.plan(deferral, list(layout.spans), namespaces)
    row: dict[str, Any] = {"file": path, "tools": len(form.tool_ids), "start_tokens": deferred.start_tokens(form)}
    if deferral.group_type is not None:
        row["namespaces"] = form.groups
    # The definitions alone may already be too big: then the file is never written (Graph's would be 273 MB).
    size = sum(span.length for span in layout.spans.values())
    over = _over_limits(deferral, size, len(form.tool_ids))
    if job is not None and not over:  # no byte limit: its size cannot make it over
        writer.later(job)
    elif not over:
        size = _write_deferred(build, kept, path, output, form, source)
        over = _over_limits(deferral, size, len(form.tool_ids))
        if over:
            del build.files[path]
    row["bytes"] = size
    row["sendable"] = not over
    if over:
        row.update(file=None, why="; ".join(over))
        build.diagnostics.add(_diag(codes.DEFERRED_OVER_LIMIT, (
            f"{path} not written: with every tool deferred the request would carry {' and '.join(over)}; send a "
            f"toolset file with the search tool beside its tools, each with defer_loading: true "
            f"(schemas/toolsets/index.json)"), dialect.target))
    return row


def _deferred_sizes(index_targets: Mapping[str, Any], sizes: Mapping[str, int]) -> None:
    """Each deferred form the child wrote: its size, in its row of the index."""
    for row in index_targets.values():
        found = row["files"].get("deferred")
        if found is not None and found["file"] in sizes:
            found["bytes"] = sizes[found["file"]]


def _over_limits(deferral: Deferral, size: int, count: int) -> list[str]:
    """Why a deferred request of `size` bytes and `count` tools cannot be sent (empty: it can)."""
    over = []
    if deferral.max_bytes is not None and size > deferral.max_bytes:
        over.append(f"{size:,} bytes or more, over the {deferral.max_bytes:,}-byte request limit")
    if deferral.max_tools is not None and count > deferral.max_tools:
        over.append(f"{count:,} tools, over the {deferral.max_tools:,} its tool search holds")
    return over


def _forms(files: Mapping[str, Any], discovery: Mapping[str, Any], toolset_files: list[tuple[str, list[str], int]],
           all_tokens: int, fits: bool) -> dict[str, Any]:
    """What each way of giving the model the API costs at the start of a request, and whether it can be sent."""
    costs = sorted(cost for _path, ids, cost in toolset_files if ids)
    forms: dict[str, Any] = {
        "all": {"file": files["all"]["file"] if fits else None, "start_tokens": all_tokens, "sendable": fits},
        "toolsets": {"files": len(costs), "start_tokens": costs[-1] if costs else 0,
                     "median_tokens": costs[len(costs) // 2] if costs else 0, "sendable": True},
    }
    if "deferred" in files:
        row = files["deferred"]
        forms["deferred"] = {"file": row["file"], "start_tokens": row["start_tokens"], "sendable": row["sendable"]}
    forms["discovery"] = {"file": files["discovery"]["file"] if "discovery" in files else None,
                          "start_tokens": discovery["tokens"], "sendable": True}
    code = files["code"]
    forms["code"] = {"file": code["file"], "start_tokens": code["tokens"], "sendable": True}
    return forms


@dataclass(frozen=True)
class _Plan:
    """What every target's files are cut along: the toolsets, each tool's membership, the token budgets."""

    emitted_ids: list[str]
    by_id: dict[str, Tool]
    toolsets: list[Toolset]
    member_of: dict[str, list[str]]
    budgets: dict[str, int]
    meta_cache: LoweringCache
    """What lowering the meta-tools (discovery, code mode) shares over every target: the pruned-recursion index
    (`_meta_form`)."""


@dataclass
class _Written:
    """One target's fit files, as written: the index's rows and the files budgets apply to."""

    files: dict[str, Any] = field(default_factory=dict)
    sendable: list[tuple[str, list[str], int]] = field(default_factory=list)
    """(path, tool ids, tokens) of every file of the target that holds tools as they are (budgets apply)."""
    toolset_rows: dict[str, Any] = field(default_factory=dict)
    """Toolset name → this target's row of it in the index."""


def _plan(build: Build) -> _Plan:
    """Cut the emitted tools into toolsets (TC772 for a toolset whose globs match nothing)."""
    emitted_ids = sorted({tool_id for output in build.providers.values() for tool_id in output.tools})
    by_id = {tool.id: tool for tool in build.catalog.tools}
    toolsets, empty = plan_toolsets([by_id[i] for i in emitted_ids], build.config.toolsets, toolset_limit(build))
    for name in empty:
        build.diagnostics.add(_diag(codes.EMPTY_TOOLSET, f"toolset {name!r}: its globs match no tool"))
    member_of: dict[str, list[str]] = {}
    for toolset in toolsets:
        for tool_id in toolset.tool_ids:
            member_of.setdefault(tool_id, []).append(toolset.name)
    return _Plan(emitted_ids, by_id, toolsets, member_of, budgets(build), LoweringCache())


def _write_toolsets(build: Build, kept: KeptFiles, plan: _Plan, output: TargetOutput, namespaces: _Namespaces,
                    writer: aside_files.AsideWriter) -> _Written:
    """Each toolset's file (cut from the target's tools array, or as a child wrote it: `aside`) and the
    provider's deferred form."""
    written = _Written()
    dialect = PROVIDERS[output.target]
    layout = output.layout
    aside = writer.take(output.target)
    with output.array.open("rb") as source:
        for toolset, (path, ids) in zip(plan.toolsets, aside_files.toolset_files(plan.toolsets, output), strict=True):
            aside_files.write_toolset(build.files, kept, path, ids, output, source, aside)
            cost = spans.array_tokens(layout, ids)
            written.sendable.append((path, ids, cost))
            written.toolset_rows[toolset.name] = {"file": path, "tools": len(ids), "tokens": cost}
        if dialect.deferral is not None:
            written.files["deferred"] = _deferred(build, kept, output, source, namespaces(plan.toolsets, plan.by_id),
                                                  writer)
    return written


def _write_discovery(build: Build, output: TargetOutput, written: _Written, cache: LoweringCache) -> dict[str, Any]:
    """The discovery form: its own file when asked for, and `schemas/<target>.json` when the tools do not fit
    one request (TC771). Returns its row."""
    target, dialect = output.target, PROVIDERS[output.target]
    discovery = canonical_json(_meta_form(build, target, meta_tools(), cache))
    row = {"file": f"schemas/discovery.{target}.json", "tools": 3, "tokens": tokens.count_bytes(discovery)}
    if build.config.toolsets.discovery or not output.fits_one_request:
        build.add_file(f"schemas/discovery.{target}.json", discovery)
        written.files["discovery"] = row
    if not output.fits_one_request:
        all_path = f"schemas/{target}.json"
        build.add_file(all_path, discovery)
        instead = (f"schemas/{target}.deferred.json, the provider's own deferred loading, or a toolset file"
                   if dialect.deferral is not None else "a toolset file")
        build.diagnostics.add(_diag(codes.DISCOVERY_FORM, (
            f"{len(output.layout.spans)} tools exceed a request's {dialect.caps.max_tools}: {all_path} holds the "
            f"discovery form (search, describe, call by id); to give the model the tools themselves send {instead} "
            f"(schemas/README.md compares the forms)"), target))
    return row


def _write_code_mode(build: Build, target: str, written: _Written, cache: LoweringCache) -> None:
    """Code mode's form, for every target: the same two tools whatever the API."""
    code = canonical_json(_meta_form(build, target, code_tools(), cache))
    build.add_file(f"schemas/code.{target}.json", code)
    written.files["code"] = {"file": f"schemas/code.{target}.json", "tools": 2, "tokens": tokens.count_bytes(code)}


def _check_budget(build: Build, output: TargetOutput, sendable: list[tuple[str, list[str], int]],
                  budget: int | None) -> None:
    """TC770 for each file of the target over its token budget, naming its largest tools."""
    over = [(path, ids, cost) for path, ids, cost in sendable if budget is not None and cost > budget]
    if not over:
        return
    costs = {tool_id: span.tokens for tool_id, span in output.layout.spans.items()}
    names = _provider_names(output)
    for path, ids, cost in over:
        build.diagnostics.add(_diag(codes.OVER_BUDGET, (
            f"{cost} tokens, over the budget of {budget}; largest: "
            f"{_largest(costs, names, ids)} ({path}, {len(ids)} tools)"), output.target))


def _fit_target(build: Build, kept: KeptFiles, plan: _Plan, output: TargetOutput, namespaces: _Namespaces,
                writer: aside_files.AsideWriter) -> tuple[_Written, Any]:
    """Write one target's fit files and check its budget; its files and index row."""
    target, dialect = output.target, PROVIDERS[output.target]
    written = _write_toolsets(build, kept, plan, output, namespaces, writer)
    all_path, all_ids, fits = f"schemas/{target}.json", list(output.layout.spans), output.fits_one_request
    all_tokens = spans.array_tokens(output.layout, all_ids)
    discovery = _write_discovery(build, output, written, plan.meta_cache)
    _write_code_mode(build, target, written, plan.meta_cache)
    files = written.files
    files["all"] = {"file": all_path, "tools": len(all_ids), "fits": fits, "all_tools_tokens": all_tokens,
                    "tokens": all_tokens if fits else files["discovery"]["tokens"]}
    if fits:
        written.sendable.insert(0, (all_path, all_ids, all_tokens))
    _check_budget(build, output, written.sendable, plan.budgets.get(target))
    forms = _forms(files, discovery, written.sendable[1 if fits else 0:], all_tokens, fits)
    row = {"tokens_method": tokens.method(dialect.tokenizer_exact), "files": files,
           "budget": plan.budgets.get(target), "forms": forms}
    return written, row


def emit_fit(build: Build) -> dict[str, FitOutput]:
    """Add the toolset, discovery, code-mode and deferred files and the index; count tokens; enforce budgets. Returns each
    target's figures; the providers stage's output is read, never changed.

    Reads only the layout of each target's tools array (`spans.py`): toolset files are byte ranges of it, and token
    counts add up from per-tool figures the lowering workers counted."""
    if not build.providers:
        return {}
    plan = _plan(build)
    namespaces = _Namespaces()
    index_sets: dict[str, Any] = {t.name: {"origin": t.origin, "tools": list(t.tool_ids), "targets": {}}
                                  for t in plan.toolsets}
    index_targets: dict[str, Any] = {}
    tool_tokens: dict[str, dict[str, int]] = {tool_id: {} for tool_id in plan.emitted_ids}
    fit: dict[str, FitOutput] = {}
    kept = KeptFiles(build.out_dir, build.diagnostics)
    writer = aside_files.AsideWriter(build, kept, plan.toolsets, build.providers,
                                     lambda: _deferred_jobs(build, namespaces(plan.toolsets, plan.by_id)))
    try:
        for target, output in build.providers.items():
            for tool_id, span in output.layout.spans.items():
                tool_tokens[tool_id][target] = span.tokens
            written, row = _fit_target(build, kept, plan, output, namespaces, writer)
            for name, toolset_row in written.toolset_rows.items():
                index_sets[name]["targets"][target] = toolset_row
            index_targets[target] = row
            all_row = row["files"]["all"]
            fit[target] = FitOutput(target, {"tokens": all_row["all_tools_tokens"],
                                             "tokens_method": row["tokens_method"], "toolsets": len(plan.toolsets),
                                             "fits_one_request": all_row["fits"], "forms": row["forms"]})
        _deferred_sizes(index_targets, writer.finish(build.files, kept))
    finally:
        writer.close()
    index = {"format": INDEX_FORMAT, "tokenizer": tokens.ENCODING, "limit": toolset_limit(build),
             "toolsets": index_sets, "targets": index_targets,
             "tools": {tool_id: {"toolsets": plan.member_of.get(tool_id, []), "tokens": tool_tokens[tool_id]}
                       for tool_id in plan.emitted_ids}}
    build.add_file("schemas/toolsets/index.json", canonical_json(index))
    build.add_file("schemas/README.md", guide(index_targets))
    build.saved_with_output.append(kept.save)
    return fit


def toolsets_of(index: JsonObject, tool_id: str) -> list[str]:
    entry = index.get("tools", {}).get(tool_id, {})
    return list(entry.get("toolsets", []))

