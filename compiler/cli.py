"""The `toolc` command line: the click group and `toolc compile`; the other commands live beside the code
they drive and are registered here. Exit codes and shared helpers: `cli_support.py` (and the README).
"""

from __future__ import annotations

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
from compiler.config import ALL_TARGETS, Config
from compiler.diagnostics import Diagnostics, Severity
from compiler.drift.commands import check_command, diff_command
from compiler.emit import report
from compiler.live_commands import LIVE_COMMANDS
from compiler.providers.explain import explain_command
from compiler.serialize import canonical_json


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolc")
def main() -> None:
    """toolc: compile MCP tool listings and OpenAPI documents into provider tool schemas, typed stubs and a router."""


@main.command("compile")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-c", "--config", "config_path", type=click.Path(path_type=Path), default=Path("toolc.yaml"),
              show_default=True, help="The project file (used when no PATH is given).")
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), help="Output folder (default: the project's).")
@click.option("--target", "targets", help=f"Comma-separated targets: {', '.join(ALL_TARGETS)} (or openai, claude, all).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Write a JSON report here, even on failure.")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option("--live", is_flag=True, help="Ask the MCP servers instead of reading their recordings.")
@click.option("-v", "--verbose", is_flag=True, help="Print info diagnostics too (the full loss report).")
@guarded
def compile_command(paths: tuple[Path, ...], config_path: Path, out_dir: Path | None, targets: str | None,
                    report_path: Path | None, strict: bool, live: bool, verbose: bool) -> None:
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


for _command in (*LIVE_COMMANDS, check_command, diff_command, explain_command):
    main.add_command(_command)
