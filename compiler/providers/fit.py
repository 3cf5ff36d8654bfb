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

import io
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, BinaryIO

from compiler.build import Build, TargetOutput
from compiler.config import Config
from compiler.diagnostics import Diagnostic
from compiler.ir import JsonObject, Tool
from compiler.providers import codes, deferred, spans, tokens
from compiler.providers.codemode import code_tools
from compiler.providers.dialect import Deferral, Dialect, LowerEnv
from compiler.providers.discovery import meta_tools
from compiler.providers.emit import layout_of, set_aside
from compiler.providers.guide import guide
from compiler.providers.lower import lower_tool, wants_strict
from compiler.providers.namespaces import Namespace, plan_namespaces
from compiler.providers.registry import ALIASES, PROVIDERS
from compiler.providers.toolsets import Toolset, plan_toolsets
from compiler.serialize import canonical_json

INDEX_FORMAT = 1
DEFAULT_LIMIT = 128
"""Toolset size when no target declares a request limit."""


def _diag(code: str, message: str, target: str = "", tool: str = "") -> Diagnostic:
    return Diagnostic(code=code, severity=codes.severity(code), message=message, provider=target, tool=tool,
                      pointer="/" if tool else "")


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


def _meta_form(build: Build, target: str, tools: list[Tool]) -> list[JsonObject]:
    """The `tools` argument of a form made of toolc's meta-tools (discovery, code mode), lowered for `target`."""
    dialect = PROVIDERS[target]
    strict = wants_strict(target, build.config)
    definitions: list[JsonObject] = []
    for tool in tools:
        env = LowerEnv(build.resolver, {}, build.config.resolver.max_depth, build.config.providers.model_dump())
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


@contextmanager
def _tools_file(build: Build, path: str) -> Iterator[BinaryIO]:
    spooled = build.files.spooled_path(path)
    with spooled.open("rb") if spooled is not None else io.BytesIO(build.files[path]) as source:
        yield source


class _Namespaces:
    """The namespaces, planned once for the targets that group deferred functions."""

    def __init__(self) -> None:
        self.planned: list[Namespace] | None = None

    def __call__(self, toolsets: list[Toolset], by_id: Mapping[str, Tool]) -> list[Namespace]:
        if self.planned is None:
            self.planned = plan_namespaces(toolsets, by_id)
        return self.planned


def _deferred(build: Build, dialect: Dialect, layout: spans.Layout, source: BinaryIO,
              namespaces: list[Namespace]) -> dict[str, Any]:
    """Write `schemas/<target>.deferred.json`, or say why it cannot be sent (TC773); its index row."""
    deferral = dialect.deferral
    assert deferral is not None
    path = f"schemas/{dialect.target}.deferred.json"
    form = deferred.plan(deferral, list(layout.spans), namespaces)
    row: dict[str, Any] = {"file": path, "tools": len(form.tool_ids), "start_tokens": deferred.start_tokens(form)}
    if deferral.group_type is not None:
        row["namespaces"] = form.groups
    # The definitions alone may already be too big: then the file is never written (Graph's would be 273 MB).
    size = sum(span.length for span in layout.spans.values())
    over = _over_limits(deferral, size, len(form.tool_ids))
    if not over:
        size = build.files.write_chunks(path, deferred.chunks(form, layout, source))
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


def emit_fit(build: Build) -> None:
    """Add the toolset, discovery, code-mode and deferred files and the index; count tokens; enforce budgets.

    Reads only the layout of each target's tools file (`spans.py`): toolset files are byte ranges of it, and token
    counts add up from per-tool figures the lowering workers counted."""
    if not build.providers:
        return
    config = build.config.toolsets
    emitted_ids = sorted({tool_id for output in build.providers.values() for tool_id in output.tools})
    by_id = {tool.id: tool for tool in build.catalog.tools}
    toolsets, empty = plan_toolsets([by_id[i] for i in emitted_ids], config, toolset_limit(build))
    namespaces = _Namespaces()
    for name in empty:
        build.diagnostics.add(_diag(codes.EMPTY_TOOLSET, f"toolset {name!r}: its globs match no tool"))
    member_of: dict[str, list[str]] = {}
    for toolset in toolsets:
        for tool_id in toolset.tool_ids:
            member_of.setdefault(tool_id, []).append(toolset.name)
    limits = budgets(build)
    index_sets: dict[str, Any] = {t.name: {"origin": t.origin, "tools": list(t.tool_ids), "targets": {}}
                                  for t in toolsets}
    index_targets: dict[str, Any] = {}
    tool_tokens: dict[str, dict[str, int]] = {tool_id: {} for tool_id in emitted_ids}
    for target, output in list(build.providers.items()):
        dialect = PROVIDERS[target]
        layout = layout_of(output)
        costs = {tool_id: span.tokens for tool_id, span in layout.spans.items()}
        for tool_id, cost in costs.items():
            tool_tokens[tool_id][target] = cost
        files: dict[str, Any] = {}
        sendable: list[tuple[str, list[str], int]] = []
        """(path, tool ids, tokens) of every file of this target that holds tools as they are (budgets apply)."""
        all_path = f"schemas/{target}.json"
        with _tools_file(build, all_path) as source:
            for toolset in toolsets:
                ids = [tool_id for tool_id in toolset.tool_ids if tool_id in layout.spans]
                path = f"schemas/toolsets/{toolset.name}.{target}.json"
                build.files.write_chunks(path, spans.array_chunks(layout, source, ids))
                cost = spans.array_tokens(layout, ids)
                sendable.append((path, ids, cost))
                index_sets[toolset.name]["targets"][target] = {"file": path, "tools": len(ids), "tokens": cost}
            if dialect.deferral is not None:
                files["deferred"] = _deferred(build, dialect, layout, source, namespaces(toolsets, by_id))
        all_ids = list(layout.spans)
        fits = dialect.caps.max_tools is None or len(all_ids) <= dialect.caps.max_tools
        all_tokens = spans.array_tokens(layout, all_ids)
        code = canonical_json(_meta_form(build, target, code_tools()))
        build.add_file(f"schemas/code.{target}.json", code)
        files["code"] = {"file": f"schemas/code.{target}.json", "tools": 2, "tokens": tokens.count_bytes(code)}
        discovery = canonical_json(_meta_form(build, target, meta_tools()))
        discovery_row = {"file": f"schemas/discovery.{target}.json", "tools": 3,
                         "tokens": tokens.count_bytes(discovery)}
        if config.discovery or not fits:
            build.add_file(f"schemas/discovery.{target}.json", discovery)
            files["discovery"] = discovery_row
            if not fits:
                # Replacing a file the providers stage added, deliberately: this one must be sendable. Its
                # definitions stay readable from `build.providers[target].tools`.
                set_aside(output)
                build.files[all_path] = discovery
                instead = (f"schemas/{target}.deferred.json, the provider's own deferred loading, or a toolset file"
                           if dialect.deferral is not None else "a toolset file")
                build.diagnostics.add(_diag(codes.DISCOVERY_FORM, (
                    f"{len(all_ids)} tools exceed a request's {dialect.caps.max_tools}: {all_path} holds the discovery "
                    f"form (search, describe, call by id); to give the model the tools themselves send {instead} "
                    f"(schemas/README.md compares the forms)"), target))
        files["all"] = {"file": all_path, "tools": len(all_ids), "fits": fits, "all_tools_tokens": all_tokens,
                        "tokens": all_tokens if fits else files["discovery"]["tokens"]}
        if fits:
            sendable.insert(0, (all_path, all_ids, all_tokens))
        over = [(path, ids, cost) for path, ids, cost in sendable if target in limits and cost > limits[target]]
        names = _provider_names(output) if over else {}
        for path, ids, cost in over:
            build.diagnostics.add(_diag(codes.OVER_BUDGET, (
                f"{cost} tokens, over the budget of {limits[target]}; largest: "
                f"{_largest(costs, names, ids)} ({path}, {len(ids)} tools)"), target))
        forms = _forms(files, discovery_row, sendable[1 if fits else 0:], all_tokens, fits)
        index_targets[target] = {"tokens_method": tokens.method(dialect.tokenizer_exact), "files": files,
                                 "budget": limits.get(target), "forms": forms}
        summary = dict(output.summary)
        summary.update(tokens=all_tokens, tokens_method=tokens.method(dialect.tokenizer_exact), toolsets=len(toolsets),
                       fits_one_request=fits, forms=forms)
        build.providers[target] = replace(output, summary=summary)
    index = {"format": INDEX_FORMAT, "tokenizer": tokens.ENCODING, "limit": toolset_limit(build),
             "toolsets": index_sets, "targets": index_targets,
             "tools": {tool_id: {"toolsets": member_of.get(tool_id, []), "tokens": tool_tokens[tool_id]}
                       for tool_id in emitted_ids}}
    build.add_file("schemas/toolsets/index.json", canonical_json(index))
    build.add_file("schemas/README.md", guide(index_targets))


def toolsets_of(index: JsonObject, tool_id: str) -> list[str]:
    entry = index.get("tools", {}).get(tool_id, {})
    return list(entry.get("toolsets", []))

