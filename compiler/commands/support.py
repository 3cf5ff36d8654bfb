"""What every `toolc` command shares: exit codes, diagnostic printing, the inputs every command takes (PATHs or
`-c/--config`), and the guard that turns any failure into a diagnostic. Command modules import from here, never
from `cli.py`, so that `cli.py` can import them all without an import cycle.

    0  success (warnings allowed unless --strict)
    1  the compile (or check) failed: errors, or with --strict warnings; the previous output is untouched
    2  usage or project-file error
    3  internal error (a bug: please report it with the printed diagnostic)
  130  interrupted (Ctrl-C); the previous output is untouched
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from compiler.config import DEFAULT_CONFIG_NAME, PROJECT_FILE_ERRORS, Config, config_from_data, input_kind
from compiler.infra.diagnostics import CompilerError, Diagnostic, Diagnostics, Severity, group_notes
from compiler.infra.loading import load_document
from compiler.pipeline import Input
from compiler.providers.registry import ALIASES

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
INTERNAL_ERROR = "TC999"
PRINT_LIMIT = 40
NOTE_EXAMPLES = 3

F = TypeVar("F", bound=Callable[..., Any])


def print_diagnostics(diagnostics: Diagnostics, *, verbose: bool = False) -> None:
    """Errors and warnings on stderr, capped per severity (all with -v); with -v the notes too, grouped (`--report`
    has every one)."""
    shown: dict[Severity, int] = {}
    # Notes are left out before sorting, not after: Microsoft Graph has some 236,000 of them and a few warnings.
    printed = [d for d in diagnostics if d.severity is not Severity.INFO]
    for diagnostic in sorted(printed, key=Diagnostic.sort_key):
        shown[diagnostic.severity] = shown.get(diagnostic.severity, 0) + 1
        if shown[diagnostic.severity] <= PRINT_LIMIT or verbose:
            click.echo(diagnostic.render(), err=True)
    for severity, count in shown.items():
        if count > PRINT_LIMIT and not verbose:
            click.echo(f"... and {count - PRINT_LIMIT} more {severity.value}s (see --report or -v)", err=True)
    if verbose:
        print_notes(d for d in diagnostics if d.severity is Severity.INFO)


def print_notes(notes: Iterable[Diagnostic]) -> None:
    """The loss report as a person reads it: one header per code and reason with its count per target, then its
    first `NOTE_EXAMPLES` notes as `toolc` prints any diagnostic; a note alone in its group prints as itself. Line
    for line, what used to be a wall of 236,000 lines on Microsoft Graph is 650."""
    lines: list[str] = []
    for group in group_notes(notes, examples=NOTE_EXAMPLES):
        if group.count == 1:
            lines.append(group.first[0].render())
            continue
        lines.append(group.header())
        lines.extend(f"  {diagnostic.render()}" for diagnostic in group.first)
        if group.count > len(group.first):
            lines.append(f"  ... and {group.count - len(group.first):,} more (--report lists every one)")
    if lines:
        click.echo("\n".join(lines), err=True)


def failed(diagnostics: Diagnostics, strict: bool) -> bool:
    return diagnostics.has_errors or (strict and diagnostics.count(Severity.WARNING) > 0)


def failure_exit_code(diagnostics: Diagnostics) -> int:
    """2 when every error is the project file's or the command line's (an unknown target, two sources with one
    id), 1 when an input or the compile itself failed."""
    errors = {diagnostic.code for diagnostic in diagnostics if diagnostic.severity is Severity.ERROR}
    return EXIT_USAGE if errors and errors <= PROJECT_FILE_ERRORS else EXIT_FAILED


def load_project(config_path: Path) -> Config:
    config, inputs = load_inputs((), config_path)
    if inputs is not None:
        raise click.UsageError(f"{config_path} is an input document, not a project file: this command needs a "
                               "project file")
    return config


def load_inputs(paths: tuple[Path, ...], config_path: Path) -> tuple[Config, list[Input] | None]:
    """What to compile, as every command takes it: PATHs (OpenAPI documents, recorded listings; tool ids come from
    each file's name) or the project file `-c` names. `-c` naming an input document reads it as a PATH.
    Inputs are None for a project (its own list)."""
    from compiler.pipeline import (
        adhoc_inputs,  # the pipeline's imports are paid only by commands that compile
    )

    if not paths:
        if not config_path.exists():
            raise click.UsageError(f"no project file {config_path} (pass PATH... to read files without one)")
        data = load_document(config_path, display=str(config_path))
        if input_kind(data) is None:
            return config_from_data(data, root=config_path.resolve().parent, source=str(config_path)), None
        paths = (config_path,)
    return Config(root=Path.cwd()), adhoc_inputs(paths, Path.cwd())


def inputs_options(command: F) -> F:
    """`[PATH]...` and `-c/--config FILE`, the inputs `toolc compile` takes."""
    command = click.option("-c", "--config", "config_path", type=click.Path(path_type=Path),
                           default=Path(DEFAULT_CONFIG_NAME), show_default=True,
                           help="The project file (used when no PATH is given).")(command)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(command)


def guarded(command: F) -> F:
    """Run a command so that nothing but a diagnostic ever reaches the user, and map failures to exit codes."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CompilerError as exc:
            for diagnostic in exc.diagnostics:
                click.echo(diagnostic.render(), err=True)
            sys.exit(EXIT_USAGE if exc.usage or exc.diagnostic.code.startswith("TC1") else EXIT_FAILED)
        except KeyboardInterrupt:
            # Before click's own handler ("Aborted!", exit 1): output is built aside and swapped in at the end,
            # so an interrupted command never changed it.
            click.echo("toolc: interrupted; nothing was written (the output folder is as it was)", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.ClickException, click.exceptions.Exit, SystemExit):
            raise
        except Exception as exc:
            if "TOOLC_DEBUG" in os.environ:
                raise
            diagnostic = Diagnostic.of(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
            click.echo(diagnostic.render() + " (set TOOLC_DEBUG=1 for the traceback)", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]


def parse_targets(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    targets: list[str] = []
    for part in value.split(","):
        part = part.strip()
        if part and part != "none":  # `--target none` (or "") compiles the catalog only
            targets.extend(ALIASES.get(part, (part,)))
    return tuple(targets)
