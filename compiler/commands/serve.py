"""`toolc serve`: run the project's generated router package as an MCP server (stdio or Streamable HTTP) and
the flat-argument HTTP endpoint. The server itself lives in the generated package (`toolc_router.serve*`), so a
deployment runs `python -m toolc_router.serve` without toolc; this command finds the package in the project's
output folder and starts it from the project's folder (where the relative server commands and the audit
database are).

    toolc serve [-c toolc.yaml | --out DIR] [--transport stdio|http] [--host 127.0.0.1] [--port 8765] [--spec-hash H]

    TC680 error  the server refuses to start: a non-loopback --host without a bearer token in TOOLC_SERVE_TOKEN
                 (or a token shorter than 16 characters)
    TC681 error  no served router in the output folder: run `toolc compile` (with codegen on) first
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from compiler.commands.support import guarded, load_project
from compiler.config import DEFAULT_CONFIG_NAME
from compiler.infra.diagnostics import CompilerError, Diagnostic, Severity

REFUSED = "TC680"
NOT_COMPILED = "TC681"
PACKAGE = "toolc_router"


def _import_package(python_dir: Path) -> tuple[Any, Any]:
    """(`toolc_router.serve`, `toolc_router.serve_http`) from the output folder, ahead of anything else."""
    sys.path.insert(0, str(python_dir))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]
    return importlib.import_module(f"{PACKAGE}.serve"), importlib.import_module(f"{PACKAGE}.serve_http")


@click.command("serve")
@click.option("-c", "--config", "config_path", type=click.Path(path_type=Path), default=Path(DEFAULT_CONFIG_NAME),
              show_default=True, help="The project file.")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="MCP over stdin/stdout, or HTTP (MCP at /mcp, the flat-argument endpoint at /tools).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Bind address (http). Not loopback: TOOLC_SERVE_TOKEN must hold a bearer token.")
@click.option("--port", type=int, default=8765, show_default=True, help="Port (http).")
@click.option("--page-size", type=int, default=100, show_default=True, help="Tools per tools/list page.")
@click.option("--max-body", type=int, default=1024 * 1024, show_default=True, help="Largest request body (http).")
@click.option("--max-calls", type=int, default=16, show_default=True, help="Tool calls running at once.")
@click.option("--max-connections", type=int, default=64, show_default=True,
              help="Open connections (http); past it the idlest is closed.")
@click.option("--max-sessions", type=int, default=1000, show_default=True,
              help="MCP sessions of handshake-era clients (http); past it the idlest is evicted.")
@click.option("--head-timeout", type=float, default=10.0, show_default=True,
              help="Seconds for a request line and headers to arrive (http).")
@click.option("--body-timeout", type=float, default=30.0, show_default=True,
              help="Seconds for a request body to arrive (http).")
@click.option("--write-timeout", type=float, default=30.0, show_default=True,
              help="Seconds a client may leave its response unread (http).")
@click.option("--mode", type=click.Choice(["execution", "planning"]), default="execution", show_default=True,
              help="Invocation mode every call runs in (policy gate 2).")
@click.option("--spec-hash", help="The frozen spec's hash: lets execution mode run high-risk tools (gate 3).")
@click.option("--project-id", help="The project the calls belong to (gate 4).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              help="Serve the output folder a compile wrote (`toolc compile PATH... --out DIR`), without a project "
                   "file.")
@guarded
def serve_command(config_path: Path, transport: str, host: str, port: int, page_size: int, max_body: int,
                  max_calls: int, max_connections: int, max_sessions: int, head_timeout: float,
                  body_timeout: float, write_timeout: float, mode: str, spec_hash: str | None,
                  project_id: str | None, out_dir: Path | None) -> None:
    """Serve the project's compiled tools through its policy-checked router (run `toolc compile` first), or the
    output folder of an ad-hoc compile with --out."""
    output_dir, root, compile_hint = _what_to_serve(config_path, out_dir)
    python_dir = (output_dir / "python").resolve()
    package = python_dir / PACKAGE
    missing = [name for name in ("serve.py", "_serve.json", "_schemas.json") if not (package / name).is_file()]
    if missing:
        raise CompilerError(Diagnostic(NOT_COMPILED, Severity.ERROR, f"no served router here ({', '.join(missing)} "
                                       f"missing): run `{compile_hint}` first (with codegen on)",
                                       source=str(package)))
    serve, http = _import_package(python_dir)
    if transport == "http":
        try:
            http.bearer_token(host, os.environ)
        except http.ServeError as exc:
            raise CompilerError(Diagnostic(REFUSED, Severity.ERROR, str(exc), source=f"--host {host}"),
                                usage=True) from None
    os.chdir(root)
    argv = ["--transport", transport, "--host", host, "--port", str(port), "--page-size", str(page_size),
            "--max-body", str(max_body), "--max-calls", str(max_calls), "--max-connections", str(max_connections),
            "--max-sessions", str(max_sessions), "--head-timeout", str(head_timeout),
            "--body-timeout", str(body_timeout), "--write-timeout", str(write_timeout),
            "--schemas-dir", str((output_dir / "schemas").resolve()), "--mode", mode]
    argv += ["--spec-hash", spec_hash] if spec_hash else []
    argv += ["--project-id", project_id] if project_id else []
    sys.exit(serve.main(argv))


def _what_to_serve(config_path: Path, out_dir: Path | None) -> tuple[Path, Path, str]:
    """(output folder, folder to run in, the compile that makes the folder): an ad-hoc compile's output runs where
    the command was started; a project's, in the project's folder (its relative server commands and audit file)."""
    if out_dir is not None:
        return out_dir.resolve(), Path.cwd(), f"toolc compile PATH... --out {out_dir}"
    if not config_path.exists():
        raise click.UsageError(f"no project file {config_path}: name one with -c FILE, or serve the output folder an "
                               "ad-hoc compile wrote with `toolc serve --out DIR` (after `toolc compile PATH... "
                               "--out DIR`)")
    config = load_project(config_path)
    return config.output_dir, config.root, f"toolc compile -c {config_path}"
