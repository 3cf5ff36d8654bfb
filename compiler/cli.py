"""The `toolc` command line: the click group. The commands live in `compiler/commands/`, the only layer above the
pipeline, and are imported only when invoked: `toolc compile` should not pay for the mcp SDK, the drift differ or
the provider explainer (click's documented lazy-group pattern). Exit codes: `commands/support.py` (and the README).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType
from typing import Any

import click

from compiler.infra import ending
from compiler.infra.collector import paused_then_frozen

LAZY_COMMANDS = {
    "check": "compiler.commands.check:check_command",
    "compile": "compiler.commands.compile:compile_command",
    "diff": "compiler.commands.check:diff_command",
    "explain": "compiler.commands.explain:explain_command",
    "health": "compiler.commands.live:health_command",
    "list": "compiler.commands.live:list_command",
    "record": "compiler.commands.live:record_command",
    "serve": "compiler.commands.serve:serve_command",
}


SUMMARIES = {
    "check": "Recompile in memory and compare with the output folder and its toolc.lock; exit 1 on drift.",
    "compile": "Compile the project (or the OpenAPI documents / recorded listings given as PATHs) into the output "
               "folder.",
    "diff": "Classify the changes between two MCP listings or two OpenAPI documents (stub / wire / model).",
    "explain": "Show TOOL's source schema, the schema PROVIDER gets, and what was lost on the way.",
    "health": "Connect to each MCP server and report it healthy, degraded or unhealthy (exit 1 if any is unhealthy).",
    "list": "List the tools of the project (recordings, OpenAPI documents, or --live servers) or of the documents "
            "given as PATHs, with risk and side effects (and, with --tokens, what each costs per target; with "
            "--search, only the best matches of a query).",
    "record": "Ask MCP servers for their tools and write one recording per server (no secrets, no timestamps).",
    "serve": "Serve the project's compiled tools through its policy-checked router (run `toolc compile` first), or "
             "the output folder of an ad-hoc compile with --out.",
}
"""Each command's summary (the first paragraph of its help) for `toolc --help`, which would otherwise import every
command to read it (`list`'s search loads numpy: 0.15 s). A test compares them with the commands' own help."""

ENDS_WITHOUT_TEARDOWN = frozenset({"compile"})
"""Commands that leave nothing to clean up once they return (output written, workers joined, spool folder
removed; no sinks or servers): run as the `toolc` script, their process ends at once (`os._exit`, as mypy
ends) instead of the interpreter freeing a big API's objects one by one on the way out, 0.1-0.2 s after a compile
of GitHub or Stripe."""


class LazyGroup(click.Group):
    ran: str | None = None
    """The command this process ran (as the script runs one)."""
    script: bool = False
    """Run as the `toolc` script (`__call__`), whose process a command of `ENDS_WITHOUT_TEARDOWN` ends at once."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The `toolc` script's entry. click's test runner calls `main`, so a test's process never ends here."""
        self.script = True
        try:
            return self.main(*args, **kwargs)
        except SystemExit as exc:
            if self.ran in ENDS_WITHOUT_TEARDOWN and threading.active_count() == 1:  # (`--live` may leave some)
                _end_now(exc.code)
            raise

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        self.ran = command.name if command is not None else None
        if self.script and self.ran in ENDS_WITHOUT_TEARDOWN:
            ending.ends_at_once()
        return name, command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `--help`, from `SUMMARIES`, shortened as click shortens a command's own help."""
        listed = [(name, click.Command(name, help=SUMMARIES[name])) for name in self.list_commands(ctx)]
        limit = formatter.width - 6 - max(len(name) for name, _ in listed)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in listed])

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            module_name, attribute = LAZY_COMMANDS[cmd_name].split(":")
            command = getattr(_command_module(module_name), attribute)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolc")
def main() -> None:
    """toolc: compile MCP tool listings and OpenAPI documents into provider tool schemas, typed stubs and a router."""


def _command_module(name: str) -> ModuleType:
    """A command's module, imported the first time with the collector paused and what the import made frozen out
    of its generations: some 100,000 objects (modules, classes, functions, pydantic's validators) that live as
    long as the process, which the 72 collections importing `compile` set off (0.01-0.03 s) only rescanned, as
    every later collection would."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    with paused_then_frozen():
        return importlib.import_module(name)


def _end_now(code: object) -> None:
    """End the process with `sys.exit(code)`'s status, skipping the interpreter's teardown. Returns (and the
    ordinary exit follows) when the output streams cannot be flushed, so that error is reported as usual."""
    status = code if isinstance(code, int) else 0 if code is None else 1
    try:
        if not isinstance(code, int | None):
            print(code, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status)
