"""The `toolc` command line: the click group. The commands live in `compiler/commands/`, the only layer above the
pipeline, and are imported only when invoked: `toolc compile` should not pay for the mcp SDK, the drift differ or
the provider explainer (click's documented lazy-group pattern). Exit codes: `commands/support.py` (and the README).
"""

from __future__ import annotations

import importlib

import click

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
