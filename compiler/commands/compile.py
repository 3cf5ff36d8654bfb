"""`toolc compile [PATH...] [-c toolc.yaml]`: run the pipeline and swap the output folder in."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from compiler.build import Build
from compiler.catalog_json import report
from compiler.commands.support import (
    failed,
    failure_exit_code,
    guarded,
    inputs_options,
    load_inputs,
    parse_targets,
    print_diagnostics,
)
from compiler.config import ALL_TARGETS
from compiler.fit.forms import budgets
from compiler.fit.guide import FORM_NAMES, chosen_form
from compiler.infra import ending
from compiler.infra.diagnostics import CompilerError, Diagnostic, Diagnostics, Severity
from compiler.infra.serialize import canonical_json
from compiler.providers.registry import ALIASES

CANNOT_WRITE_REPORT = "TC760"


@click.command("compile")
@inputs_options
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), help="Output folder (default: the project's).")
@click.option("--target", "targets",
              help=f"Comma-separated targets: {', '.join(ALL_TARGETS)} (or {', '.join(ALIASES)}; none: catalog only).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Write a JSON report here, even on failure.")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option("--live", is_flag=True, help="Ask the MCP servers instead of reading their recordings.")
@click.option("--codegen/--no-codegen", default=None,
              help="Emit (or skip) the typed stubs and router under python/ (default: the project's `codegen`).")
@click.option("-v", "--verbose", is_flag=True, help="Print info diagnostics too (the full loss report).")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress display and no summary line (diagnostics are still printed).")
@guarded
def compile_command(paths: tuple[Path, ...], config_path: Path, out_dir: Path | None, targets: str | None,
                    report_path: Path | None, strict: bool, live: bool, codegen: bool | None, verbose: bool,
                    quiet: bool) -> None:
    """Compile the project (or the OpenAPI documents / recorded listings given as PATHs) into the output folder.

    On a terminal, a progress bar on stderr shows the running stage (not with --quiet, nor in a pipe)."""
    from compiler.infra.progress import for_terminal
    from compiler.pipeline import compile_project, write_build

    try:
        config, inputs = load_inputs(paths, config_path)
    except CompilerError as exc:  # the report is written even when the project file is what failed
        if report_path is not None:
            write_report(report_path, None, Diagnostics(list(exc.diagnostics)))
        raise
    if inputs is not None and out_dir is None:
        raise click.UsageError("compiling PATHs needs --out DIR")
    if codegen is not None:
        config = config.model_copy(update={"codegen": codegen})
    destination = out_dir or config.output_dir
    build = None
    progress = for_terminal(quiet=quiet)
    try:
        try:
            build = compile_project(config, inputs, targets=parse_targets(targets), live=live, out_dir=destination,
                                    progress=progress)
        finally:
            progress.end()  # the bar's line is finished before any diagnostic is printed
        diagnostics = build.diagnostics
        print_diagnostics(diagnostics, verbose=verbose)
        if failed(diagnostics, strict):
            click.echo(f"toolc: compile failed; {destination} left as it was", err=True)
            sys.exit(failure_exit_code(diagnostics))
        write_build(build, destination)
        if not quiet:
            click.echo(
                f"toolc: {len(build.catalog.tools)} tools from {len(build.catalog.sources)} sources → {destination} "
                f"({len(build.files)} files; {diagnostics.count(Severity.ERROR)} errors, "
                f"{diagnostics.count(Severity.WARNING)} warnings, {diagnostics.count(Severity.INFO)} notes)",
                err=True,
            )
            advice = what_to_send(build)
            if advice:
                click.echo(f"toolc: too big to send every tool: {advice} (see {destination}/schemas/README.md)",
                           err=True)
    finally:
        if report_path is not None:
            write_report(report_path, build)
        if build is not None:
            build.files.release_spool()  # now, not at interpreter exit: the process ends without one (`cli.py`)
            ending.hold(build)  # nor freed object by object as this returns


def what_to_send(build: Build) -> str:
    """`target: file` for each target that should not get every tool at once (empty when every target can)."""
    limits = budgets(build)
    chosen = {target: chosen_form(fit.summary["forms"], limits.get(target)) for target, fit in sorted(build.fit.items())}
    return "; ".join(f"{target} {FORM_NAMES[form]}" for target, form in chosen.items() if form != "all")


def write_report(path: Path, build: Build | None, diagnostics: Diagnostics | None = None) -> None:
    """`--report`: the diagnostics, per-target sizes and each output file's size; its folder is created. Without a
    build (the project file failed), only `diagnostics`."""
    diagnostics = build.diagnostics if build else diagnostics or Diagnostics()
    data = report(build.catalog if build else None, diagnostics, extra=build.report_extra() if build else None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(canonical_json(data))
    except OSError as exc:
        raise CompilerError(Diagnostic.of(CANNOT_WRITE_REPORT, f"cannot write the report: {exc.strerror or exc}",
                                          source=str(path))) from None
