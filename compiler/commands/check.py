"""`toolc check [PATH... --out DIR | -c toolc.yaml]` and `toolc diff OLD NEW`. Exit codes: 0 no drift at or above
--fail-on, 1 drift (or the compile failed), 2 usage / unreadable input.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click
import orjson

from compiler.build import Build
from compiler.codegen.router.pins import listed_entry, pinned_servers, tool_pins
from compiler.codes import severity
from compiler.commands.support import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    guarded,
    inputs_options,
    load_inputs,
    print_diagnostics,
)
from compiler.config import DEFAULT_CONFIG_NAME, Config
from compiler.drift.check import CATALOG_FILE, check_build, refresh_command
from compiler.drift.codes import COMPILE_FAILED, KIND_MISMATCH
from compiler.drift.diff import DriftReport, diff_catalogs
from compiler.drift.report import FORMATS, render
from compiler.drift.rules import Level
from compiler.incremental.project import prove_unchanged
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import catalog_from_json
from compiler.ir import Catalog, McpBinding
from compiler.pipeline import Input, adhoc_inputs, check_targets, compile_project
from compiler.sources.mcp_pins import changes, refusal_reason

_FAIL_ON = click.Choice(["ERR", "WARN", "INFO"], case_sensitive=False)
_FORMAT = click.Choice(list(FORMATS))


def _finish(report: DriftReport, fmt: str, fail_on: str, pinning: list[str] | None = None) -> None:
    level = Level.parse(fail_on)
    click.echo(render(report, fmt, level), nl=False)
    for line in pinning or ():
        click.echo(line, err=fmt != "text")
    sys.exit(EXIT_FAILED if report.fails(level) or pinning else EXIT_OK)


def pinning_violations(build: Build, out_dir: Path) -> list[str]:
    """What the generated router would refuse (gate `pinning`) on the live servers `build` was compiled from:
    one line per pinned tool of the output folder's catalog whose live definition changed, in the router's words."""
    try:
        compiled = catalog_from_json(orjson.loads((out_dir / CATALOG_FILE).read_bytes()))
    except (OSError, ValueError, KeyError, TypeError):
        return []  # no compiled catalog: `check_build` reports the folder's state
    pins = tool_pins(list(compiled.tools), pinned_servers(build.config, Diagnostics()))
    listed: dict[str, dict[str, dict[str, object]]] = {}
    for tool in build.catalog.tools:
        if isinstance(tool.binding, McpBinding):
            listed.setdefault(tool.binding.server, {})[tool.binding.tool_name] = listed_entry(tool)
    return [f"pinning: mcp:{server}:{name}: {refusal_reason(name, diff)}"
            for server, server_pins in sorted(pins.items())
            for name, diff in sorted(changes(server_pins, listed.get(server, {})).items())]


def _stop_on_errors(diagnostics: Diagnostics, what: str) -> None:
    if not diagnostics.has_errors:
        return
    print_diagnostics(diagnostics)
    diagnostics_codes = {d.code for d in diagnostics if d.severity.value == "error"}
    failed = severity(COMPILE_FAILED).value
    click.echo(f"toolc: {failed}[{COMPILE_FAILED}]: {what} failed to compile; nothing compared", err=True)
    sys.exit(EXIT_USAGE if all(code.startswith("TC1") for code in diagnostics_codes) else EXIT_FAILED)


@click.command("check")
@inputs_options
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path),
              help="The output folder to compare with (default: the project's; needed with PATHs).")
@click.option("--live", is_flag=True, help="Ask the MCP servers instead of reading their recordings.")
@click.option("--fail-on", default="ERR", type=_FAIL_ON, show_default=True,
              help="Fail on classified changes at or above this level (differing generated files always fail).")
@click.option("--format", "fmt", default="text", type=_FORMAT, show_default=True)
@guarded
def check_command(paths: tuple[Path, ...], config_path: Path, out_dir: Path | None, live: bool, fail_on: str,
                  fmt: str) -> None:
    """Recompile in memory and compare with the output folder and its toolc.lock; exit 1 on drift."""
    config, inputs = load_inputs(paths, config_path)
    if inputs is not None and out_dir is None:
        raise click.UsageError("checking PATHs needs --out DIR (the folder `toolc compile PATH... --out DIR` made)")
    out_dir = out_dir or config.output_dir
    if inputs is not None:
        refresh = "toolc compile " + " ".join(item.display for item in inputs) + f" --out {out_dir}"
    else:
        config_arg = None if config_path == Path(DEFAULT_CONFIG_NAME) else str(config_path)
        refresh = refresh_command(live=live, config_arg=config_arg)
    if not live:
        _finish_if_unchanged(config, inputs, out_dir, refresh, fmt, fail_on)
    build = compile_project(config, inputs, live=live, out_dir=out_dir)
    _stop_on_errors(build.diagnostics, " ".join(map(str, paths)) if inputs is not None else str(config_path))
    diagnostics = Diagnostics()
    report = check_build(build, where=str(out_dir), diagnostics=diagnostics, refresh=refresh)
    print_diagnostics(diagnostics)
    _finish(report, fmt, fail_on, pinning_violations(build, out_dir) if live else None)


def _finish_if_unchanged(config: Config, inputs: list[Input] | None, out_dir: Path, refresh: str, fmt: str,
                         fail_on: str) -> None:
    """No compile when the last one's record proves the folder current (`incremental.project`): the same report
    a compile finding nothing would give. A record that proves nothing (or is not ours: a TC140 note, printed
    with -v only, as notes are) leaves the full check to run."""
    notes = Diagnostics()
    targets = check_targets(config.targets, notes)
    if notes.has_errors:
        return
    record = prove_unchanged(config, inputs, targets, out_dir, notes)
    if record is None:
        return
    _finish(DriftReport(tools_old=record.tools, tools_new=record.tools, refresh=refresh), fmt, fail_on)


def compile_alone(path: Path) -> Catalog:
    """Compile one OpenAPI document or MCP listing in memory (no targets, no codegen) into its catalog."""
    root = Path.cwd()
    config = Config(root=root, codegen=False, targets=())
    with tempfile.TemporaryDirectory(prefix="toolc-diff-") as empty:
        build = compile_project(config, adhoc_inputs([path], root), targets=(), out_dir=Path(empty))
    _stop_on_errors(build.diagnostics, str(path))
    return build.catalog


def diff_inputs(old: Catalog, new: Catalog, old_path: Path, new_path: Path) -> DriftReport:
    kinds = {source.kind for source in old.sources}, {source.kind for source in new.sources}
    if kinds[0] != kinds[1]:
        diagnostics = Diagnostics()
        diagnostics.report(KIND_MISMATCH, f"cannot compare {'/'.join(sorted(kinds[0])) or 'nothing'} with "
                           f"{'/'.join(sorted(kinds[1])) or 'nothing'}", source=f"{old_path} {new_path}")
        _stop_on_errors(diagnostics, "the pair")
    by = "name" if len(old.sources) <= 1 and len(new.sources) <= 1 else "id"
    return diff_catalogs(old, new, by=by)


@click.command("diff")
@click.argument("old_path", metavar="OLD", type=click.Path(path_type=Path))
@click.argument("new_path", metavar="NEW", type=click.Path(path_type=Path))
@click.option("--fail-on", default="ERR", type=_FAIL_ON, show_default=True,
              help="Exit 1 when a change reaches this level for any audience.")
@click.option("--format", "fmt", default="text", type=_FORMAT, show_default=True)
@guarded
def diff_command(old_path: Path, new_path: Path, fail_on: str, fmt: str) -> None:
    """Classify the changes between two MCP listings or two OpenAPI documents (stub / wire / model)."""
    old = compile_alone(old_path)
    new = compile_alone(new_path)
    _finish(diff_inputs(old, new, old_path, new_path), fmt, fail_on)
