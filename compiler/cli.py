"""The `toolc` command line: the click group and `toolc compile`; the other commands live beside the code
they drive and are registered here. Exit codes and shared helpers: `cli_support.py` (and the README).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from compiler.cli_support import (
    EXIT_FAILED,
    failed,
    guarded,
    load_project,
    parse_targets,
    print_diagnostics,
)
from compiler.config import ALL_TARGETS, DEFAULT_CONFIG_NAME, Config
from compiler.diagnostics import Diagnostics, Severity
from compiler.emit import report
from compiler.serialize import canonical_json

# Commands that live beside the code they drive, imported only when invoked: `toolc compile` should not pay
# for the mcp SDK, the drift differ or the provider explainer (click's documented lazy-group pattern).
LAZY_COMMANDS = {
    "check": "compiler.drift.commands:check_command",
    "diff": "compiler.drift.commands:diff_command",
    "explain": "compiler.providers.explain:explain_command",
    "health": "compiler.live_commands:health_command",
    "list": "compiler.live_commands:list_command",
    "record": "compiler.live_commands:record_command",
    "serve": "compiler.serve_command:serve_command",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            module_name, attribute = LAZY_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolc")
def main() -> None:
    """toolc: compile MCP tool listings and OpenAPI documents into provider tool schemas, typed stubs and a router."""


@main.command("compile")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-c", "--config", "config_path", type=click.Path(path_type=Path), default=Path(DEFAULT_CONFIG_NAME),
              show_default=True, help="The project file (used when no PATH is given).")
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), help="Output folder (default: the project's).")
@click.option("--target", "targets", help=f"Comma-separated targets: {', '.join(ALL_TARGETS)} (or openai, claude, all).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Write a JSON report here, even on failure.")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option("--live", is_flag=True, help="Ask the MCP servers instead of reading their recordings.")
@click.option("--codegen/--no-codegen", default=None,
              help="Emit (or skip) the typed stubs and router under python/ (default: the project's `codegen`).")
@click.option("-v", "--verbose", is_flag=True, help="Print info diagnostics too (the full loss report).")
@guarded
def compile_command(paths: tuple[Path, ...], config_path: Path, out_dir: Path | None, targets: str | None,
                    report_path: Path | None, strict: bool, live: bool, codegen: bool | None, verbose: bool) -> None:
    """Compile the project (or the OpenAPI documents / recorded listings given as PATHs) into the output folder."""
    from compiler.pipeline import adhoc_inputs, compile_project, write_build

    if paths:
        if out_dir is None:
            raise click.UsageError("compiling PATHs needs --out DIR")
        config = Config(root=Path.cwd())
        inputs = adhoc_inputs(paths, Path.cwd())
    else:
        config = load_project(config_path)
        inputs = None
    if codegen is not None:
        config = config.model_copy(update={"codegen": codegen})
    destination = out_dir or config.output_dir
    build = None
    try:
        build = compile_project(config, inputs, targets=parse_targets(targets), live=live, out_dir=destination)
        diagnostics = build.diagnostics
        print_diagnostics(diagnostics, verbose=verbose)
        if failed(diagnostics, strict):
            click.echo(f"toolc: compile failed; {destination} left as it was", err=True)
            sys.exit(EXIT_FAILED)
        write_build(build, destination)
        click.echo(
            f"toolc: {len(build.catalog.tools)} tools from {len(build.catalog.sources)} sources → {destination} "
            f"({len(build.files)} files; {diagnostics.count(Severity.ERROR)} errors, "
            f"{diagnostics.count(Severity.WARNING)} warnings, {diagnostics.count(Severity.INFO)} notes)",
            err=True,
        )
    finally:
        if report_path is not None:
            diags = build.diagnostics if build else Diagnostics()
            report_path.write_bytes(canonical_json(report(build.catalog if build else None, diags,
                                                              extra=build.artifacts.get("report") if build else None)))
