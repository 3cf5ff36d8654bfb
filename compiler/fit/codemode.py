"""Code mode: two meta-tools through which a model reaches every tool by writing a short Python program.

    toolc_search_docs   {query, limit?}   → the best-matching functions as ready Python signatures with docstrings
    toolc_execute_code  {code}            → runs the program in the router's sandbox (`pydantic-monty`); each
                                            function is one tool, called through the router's checked path

The generated router serves them (`python/toolc_router/codemode.py`); they are lowered for each target like any
tool (`schemas/code.<target>.json`), so every file passes that target's validator. Their text names nothing of
the project, so code mode costs the same few hundred tokens whatever the API's size.
"""

from __future__ import annotations

from compiler.fit.discovery import as_tools
from compiler.ir import JsonObject, Tool

SEARCH_DOCS, EXECUTE = "toolc_search_docs", "toolc_execute_code"

_SCHEMAS: dict[str, tuple[str, JsonObject]] = {
    SEARCH_DOCS: (
        "Search the Python functions that call this API. Returns the best matches as ready-to-use signatures "
        "with docstrings (arguments, types, what the call returns). Read them before writing code for "
        f"{EXECUTE}.",
        {"type": "object", "properties": {
            "query": {"type": "string", "description": "What you want to do, e.g. 'list issues of a repository'."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most this many (5)."}},
         "required": ["query"]}),
    EXECUTE: (
        "Run a Python program in a sandbox (no files, network, environment or clock; modules: the API's, plus "
        "asyncio, json, re, math, collections). Call the API as `import <module>` then `await <module>.<function>(arg=...)` "
        f"with the signatures {SEARCH_DOCS} gave: each call is checked, audited and returns the answer as "
        "dicts and lists; a refused call raises PermissionError, a failed one RuntimeError. Chain calls and keep "
        "intermediate data in variables; print what you need or end with an expression. The code is type-checked "
        "first; time, memory, tool calls and output are limited.",
        {"type": "object", "properties": {
            "code": {"type": "string", "description": "The Python program (top-level await allowed)."}},
         "required": ["code"]}),
}


def definitions() -> list[JsonObject]:
    """The two tools as `toolc serve --code-mode` lists them over MCP (name, description, input schema)."""
    return [{"name": name, "description": description, "input_schema": schema}
            for name, (description, schema) in _SCHEMAS.items()]


def code_tools() -> list[Tool]:
    """The code-mode meta-tools as catalog tools (lowered per target by the same code as every tool)."""
    return as_tools(_SCHEMAS)
