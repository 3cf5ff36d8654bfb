"""The one jinja2 Environment, shared by production and tests (style.md habit 8).

StrictUndefined: a template that names a missing variable fails the compile instead of emitting "".
Autoescape is off (we emit Python, not HTML); every value that reaches a template as Python source goes
through `pyrepr` (a string literal) or is an identifier already sanitised by `codegen.stubs.identifiers`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2


def pyrepr(value: Any) -> str:
    """A Python literal for JSON-like data; `repr` escapes quotes, backslashes, newlines and unicode safely."""
    return repr(value)


def templates_dir() -> Path:
    return Path(str(resources.files("compiler.templates")))


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Python source, not HTML
    )
    env.filters["pyrepr"] = pyrepr
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
