"""`toolc explain TOOL --provider P [-c toolc.yaml | PATH...]`: one tool's source schema, what a provider gets,
every loss on the way (with all the reasons a strict lowering was refused, not just the first), the reversible
transforms among them, its token cost for that provider and the toolsets it is in."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from compiler.commands.support import guarded, inputs_options, load_inputs, parse_targets
from compiler.config import ALL_TARGETS, Config, OpenApiConfig
from compiler.fit.forms import REVERSIBLE, limit_for
from compiler.fit.toolsets import plan_toolsets
from compiler.infra.diagnostics import CompilerError, Diagnostic, Diagnostics, Severity
from compiler.infra.serialize import canonical_json
from compiler.ir import Catalog, Tool
from compiler.policy import is_read_only
from compiler.providers import codes
from compiler.providers.dialect import lower_env
from compiler.providers.lower import lower_tool, wants_strict
from compiler.providers.names import assign_names
from compiler.providers.registry import ALIASES, PROVIDERS
from compiler.providers.tokens import count_json, method
from compiler.sources.openapi.risk import assess


def find_tool(catalog: Catalog, wanted: str) -> Tool:
    """By id, else by the tool's own name (unique), else by `source:name`."""
    for tool in catalog.tools:
        if tool.id == wanted:
            return tool
    matches = [t for t in catalog.tools if wanted in (t.name, f"{t.source}:{t.name}")]
    if len(matches) == 1:
        return matches[0]
    if matches:
        hint = "; candidates: " + ", ".join(t.id for t in matches[:10])
    else:
        near = close_matches(catalog.tools, wanted)
        hint = f"; did you mean {' or '.join(repr(name) for name in near)}?" if near else ""
    raise CompilerError(Diagnostic(codes.UNKNOWN_TOOL, Severity.ERROR,
                                   f"no single tool {wanted!r} among {len(catalog.tools)} tools{hint}"))


def _plain(name: str) -> str:
    return "".join(character for character in name.casefold() if character.isalnum())


def close_matches(tools: Sequence[Tool], wanted: str, limit: int = 3) -> list[str]:
    """Tool names a person may have meant, compared without case and separators: the same letters first
    (`get_users` for `get-users`), then the nearest spellings (`get_pets` for `getPet`)."""
    by_plain: dict[str, str] = {}
    for tool in sorted(tools, key=lambda tool: tool.id):
        by_plain.setdefault(_plain(tool.name), tool.name)
    plain = _plain(wanted)
    spelt = difflib.get_close_matches(plain, sorted(by_plain), n=limit, cutoff=0.75)
    return list(dict.fromkeys(by_plain[name] for name in ([plain] if plain in by_plain else []) + spelt))[:limit]


def explain(config: Config, catalog: Catalog, resolver: Any, tool: Tool, target: str) -> dict[str, Any]:
    names, name_diagnostics = assign_names(catalog.tools, target, PROVIDERS[target].mangler, config.names)
    losses = [d for d in name_diagnostics if d.tool == tool.id]
    result: dict[str, Any] = {"tool": tool.id, "provider": target, "source_schema": tool.input_schema}
    if tool.id not in names:
        result.update(name=None, definition=None)
    else:
        env = lower_env(resolver, catalog.definitions_for(tool), config, fail_fast=False)
        lowered, entry, diagnostics = lower_tool(target, tool, names[tool.id], env,
                                                 strict=wants_strict(target, config))
        losses += diagnostics
        result.update(name=names[tool.id], definition=lowered.definition if lowered else None,
                      strict=lowered.strict if lowered else None, name_map_entry=entry)
    result["losses"] = [d.to_json() for d in losses]
    result["transforms"] = [d.to_json() for d in losses if d.code in REVERSIBLE]
    result["tokens"] = ({"count": count_json(result["definition"]), "method": method(PROVIDERS[target].tokenizer_exact)}
                        if result.get("definition") else None)
    targets = config.targets or (target,)
    toolsets, _empty = plan_toolsets(catalog.tools, config.toolsets, limit_for(targets, config))
    result["toolsets"] = [toolset.name for toolset in toolsets if tool.id in toolset.tool_ids]
    return result


def risk_of(tool: Tool, settings: OpenApiConfig | None) -> dict[str, Any]:
    """What the router's policy sees of the tool, and why where it is not the evidence's alone."""
    assessment = assess(tool, settings)
    return {"level": tool.risk.label, "read_only": is_read_only(tool), "side_effects": list(tool.side_effects),
            "reason": assessment.reason if assessment is not None else None}


def _print_text(result: dict[str, Any]) -> None:
    click.echo(f"# {result['tool']} → {result['provider']} as {result['name']!r}"
               + (f" (strict: {str(result.get('strict')).lower()})" if result.get("definition") else ""))
    risk = result["risk"]
    click.echo(f"\n## risk\n{risk['level']}, {'read-only' if risk['read_only'] else 'not read-only'}; side effects: "
               f"{', '.join(risk['side_effects']) or '-'}" + (f"\n{risk['reason']}" if risk["reason"] else ""))
    click.echo("\n## source input schema")
    click.echo(canonical_json(result["source_schema"]).decode().rstrip())
    click.echo("\n## lowered definition")
    click.echo(canonical_json(result["definition"]).decode().rstrip() if result["definition"] else "(not emitted)")
    if result.get("name_map_entry"):
        click.echo("\n## name map entry")
        click.echo(canonical_json(result["name_map_entry"]).decode().rstrip())
    click.echo(f"\n## reversible transforms ({len(result['transforms'])}; the router undoes them before the call)")
    for item in result["transforms"]:
        click.echo(f"{item['pointer'] or '/'}: [{item['code']}] {item['message']}")
    tokens = result.get("tokens")
    click.echo("\n## tokens")
    click.echo(f"{tokens['count']} ({tokens['method']})" if tokens else "(not emitted)")
    click.echo(f"\n## toolsets\n{', '.join(result['toolsets']) or '(none)'}")
    click.echo(f"\n## losses ({len(result['losses'])})")
    for loss in result["losses"]:
        click.echo(f"{loss['pointer'] or '/'}: {loss['severity']}[{loss['code']}]: {loss['message']}")


@click.command("explain")
@click.argument("tool_ref", metavar="TOOL")
@inputs_options
@click.option("-p", "--provider", "provider", required=True,
              help=f"One target: {', '.join(ALL_TARGETS)} (an alias means its first target: "
                   + ", ".join(f"{alias} = {targets[0]}" for alias, targets in ALIASES.items() if alias != "all") + ")")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@guarded
def explain_command(tool_ref: str, paths: tuple[Path, ...], provider: str, config_path: Path, as_json: bool) -> None:
    """Show TOOL's source schema, the schema PROVIDER gets, and what was lost on the way."""
    from compiler.pipeline import openapi_settings, project_inputs, read_catalog
    from compiler.refs import RefResolver

    targets = parse_targets(provider) or ()
    if not targets or targets[0] not in ALL_TARGETS:
        raise click.BadParameter(f"choose one of {', '.join(ALL_TARGETS)}", param_hint="--provider")
    config, inputs = load_inputs(paths, config_path)
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics, max_depth=config.resolver.max_depth, node_budget=config.resolver.node_budget)
    items = inputs if inputs is not None else project_inputs(config)
    catalog = read_catalog(config, items, resolver, diagnostics)
    tool = find_tool(catalog, tool_ref)
    result = explain(config, catalog, resolver, tool, targets[0])
    result["risk"] = risk_of(tool, openapi_settings(items).get(tool.source))
    resolver_notes = [d.to_json() for d in diagnostics if d.tool == result["tool"]]
    result["losses"] = resolver_notes + result["losses"]
    if as_json:
        click.echo(canonical_json(result).decode().rstrip())
    else:
        _print_text(result)
