"""Presets written in the project file as literal secrets (TC111, warning).

A preset is baked as written into the router's `_tables.json` and into `catalog.json`: a token typed into
`fixed_params` ends up in files people commit. The way out is the same as for a server's env: keep the value in the
environment and write `${NAME}` in the preset, which the router expands on every call and never bakes. A preset is
flagged when its name reads like a credential's (`token`, `api_key`, `password`, `Authorization`...) or its value
has the shape of a well-known token (`Bearer ...`, `sk_live_...`, `ghp_...`, `xoxb-...`, `AKIA...`, a JWT), whatever
its name. The message never repeats the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from compiler.config import Config, ToolFilter
from compiler.infra.diagnostics import Diagnostics
from compiler.sources.mcp_env import MIN_SECRET_LENGTH, looks_secret

LITERAL_SECRET_PRESET = "TC111"

_REFERENCE = re.compile(r"\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*\}")
_TOKEN_SHAPE = re.compile(
    r"^(?:(?:Bearer|Basic|Token)\s+\S|(?:sk|rk|pk)_(?:live|test)_|sk-[A-Za-z0-9_-]{16}|gh[pousr]_[A-Za-z0-9]{8}|"
    r"github_pat_|glpat-|xox[abposr]-|AKIA[0-9A-Z]{12}|AIza[0-9A-Za-z_-]{20}|eyJ[A-Za-z0-9_-]{8,}\.)")
_NOT_ENV = re.compile(r"[^A-Z0-9]+")
_LOCATIONS = ("path", "query", "header", "cookie", "body")


def warn_literal_secret_presets(config: Config, diagnostics: Diagnostics) -> None:
    entries: list[tuple[str, str, ToolFilter]] = [
        *(("openapi", entry.id or _stem(entry.path), entry) for entry in config.openapi),
        *(("recordings", entry.id or _stem(entry.path), entry) for entry in config.recordings),
        *(("mcp_servers", entry.id, entry) for entry in config.mcp_servers)]
    for section, source, entry in entries:
        for tool, presets in entry.fixed_params.items():
            for path, name, value in _leaves(presets, ()):
                if _looks_secret(name, value):
                    _warn(diagnostics, section, source, tool, path, name)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """Every string in a preset, with its path of keys and the nearest name that says what it is (a layered
    preset's location is no name: `header: {X-Token: ...}` is named `X-Token`)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, str(index)))
    elif isinstance(value, str) and path:
        names = [part for part in path if not part.isdigit() and part not in _LOCATIONS]
        yield path, names[-1] if names else path[-1], value


def _looks_secret(name: str, value: str) -> bool:
    if _REFERENCE.search(value) or len(value) < MIN_SECRET_LENGTH:
        return False
    return looks_secret(name) or bool(_TOKEN_SHAPE.match(value))


def _warn(diagnostics: Diagnostics, section: str, source: str, tool: str, path: tuple[str, ...], name: str) -> None:
    variable = _NOT_ENV.sub("_", name.upper()).strip("_") or "PRESET"
    if variable[0].isdigit():
        variable = f"TOOLC_{variable}"
    which = "every operation ('*')" if tool == "*" else repr(tool)
    pointer = "/" + "/".join(_escape(part) for part in (section, source, "fixed_params", tool, *path))
    diagnostics.warning(LITERAL_SECRET_PRESET, f"preset {'.'.join(path)!r} of {which} looks like a secret and is "
                        "written as it is into _tables.json and catalog.json: put the value in the environment "
                        f"(export {variable}=...) and write \"${{{variable}}}\" in the preset; the router reads it "
                        "on every call and never bakes it", source=source, pointer=pointer)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
