"""Connect-time view of a server: `${VAR}` expanded, and the set of secret values that must never be written.

A project file keeps `${API_TOKEN}` as written (`config.py`); only here, just before connecting, is it replaced by
the environment's value. Every value that came out of the environment is treated as secret, and so are the values
of env vars and headers named in `secrets`, of credential-looking env vars and headers (`*TOKEN*`, `Authorization`,
...), and of credentials inside URLs (userinfo, `?token=`-style query values). `redact` replaces each of them by
its `${NAME}` placeholder wherever it shows up: in a recording (a server can echo its environment into a tool
description) and in diagnostics (a server can print it on stderr).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from compiler.config import ServerConfig
from compiler.sources.mcp_pins import with_placeholders

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_NAME = re.compile(r"token|secret|passw|pwd|api[-_]?key|apikey|auth|credential|cookie|session|private|"
                          r"signature|^sig$|^key$|access[-_]?key", re.IGNORECASE)
MIN_SECRET_LENGTH = 4
"""Shorter values are not redacted: replacing every `1` or `on` in a listing would corrupt it, not protect it."""


class MissingVariable(LookupError):
    """A `${VAR}` whose variable is not set."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(f"environment variable {name} is not set (referenced by {where})")
        self.name = name


@dataclass(frozen=True)
class Connection:
    """Everything needed to reach one server, with the environment expanded. Never written anywhere."""

    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    """Secret value → the placeholder written instead of it."""

    def redact(self, data: Any) -> Any:
        return redact(data, self.secrets)


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


class _Expander:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.secrets: dict[str, str] = {}

    def __call__(self, text: str, where: str) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            value = self.environ.get(name)
            if value is None:
                raise MissingVariable(name, where)
            self.keep(value, name)
            return value

        return _REFERENCE.sub(replace, text)

    def keep(self, value: str, name: str) -> None:
        # A value with a line break is also kept line by line: stderr tails and logs show it one line at a time.
        for piece in (value, *(line.strip() for line in re.split(r"[\r\n]+", value))):
            if len(piece) >= MIN_SECRET_LENGTH:
                self.secrets.setdefault(piece, f"${{{name}}}")


def connection_for(server: ServerConfig, *, root: str, environ: Mapping[str, str] | None = None) -> Connection:
    """Expand `${VAR}` in the server's command, env, cwd, url and headers; collect the secret values.

    Raises MissingVariable when a referenced variable is unset.
    """
    expand = _Expander(os.environ if environ is None else environ)
    explicit = {name.lower() for name in server.secrets}
    command = tuple(expand(part, "command") for part in (*server.command, *server.args))
    env = {key: expand(value, f"env {key}") for key, value in server.env.items()}
    headers = {key: expand(value, f"header {key}") for key, value in server.headers.items()}
    named = [*((key, value, False) for key, value in env.items()), *((key, value, True) for key, value in headers.items())]
    for key, value, is_header in named:
        if key.lower() not in explicit and not looks_secret(key):
            continue
        expand.keep(value, key)
        scheme, _, credential = value.partition(" ")
        if is_header and credential and scheme.isalpha():  # `Authorization: Bearer <token>`: the token alone too
            expand.keep(credential.strip(), key)
    url = expand(server.url, "url") if server.url else None
    if url:
        _keep_url_credentials(url, expand)
    cwd = expand(server.cwd, "cwd") if server.cwd else None
    cwd = str((Path(root) / cwd).resolve()) if cwd else root
    return Connection(command=command, env=env, cwd=cwd, url=url, headers=headers, secrets=expand.secrets)


def _keep_url_credentials(url: str, expand: _Expander) -> None:
    parts = urlsplit(url)
    if parts.password:
        expand.keep(parts.password, "URL_PASSWORD")
    if parts.username and parts.password is None:
        expand.keep(parts.username, "URL_USERINFO")
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if looks_secret(name):
            expand.keep(value, f"URL_{name.upper()}")


def display_url(url: str) -> str:
    """A URL fit for a message: userinfo dropped, credential-looking query values masked."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    query = "&".join(f"{name}={'***' if looks_secret(name) else value}" for name, value in parse_qsl(parts.query))
    return parts._replace(netloc=netloc, query=query).geturl()


def redact(data: Any, secrets: Mapping[str, str]) -> Any:
    """A copy of `data` with every secret value replaced by its placeholder (in keys and string values): the
    router puts the same placeholders into a live listing before comparing it with the pins."""
    return with_placeholders(data, secrets)
