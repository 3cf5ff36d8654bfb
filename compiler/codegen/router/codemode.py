"""`toolc_router/_codemode.json`: the Python functions code mode offers a model, one per routed tool.

Each source is a module of the sandbox named as its stub package, each tool a keyword-only async function named as
its stub, so a program reads like code written against the typed stubs (`await petstore.find_pets(limit=3)`).
Arguments and answers are plain JSON values (dicts and lists): the sandbox has no pydantic. Per function:

    tool        the tool id the router calls
    params      Python name → the argument's name on the wire (`id_` → `id`)
    signature   `async def find_pets(*, tags: list[str] | None = None, limit: int | None = None) -> list[Any]:`
    doc         the docstring: description, tool id, each argument, what the call returns

`tools` holds the two code-mode tools as `toolc serve --code-mode` lists them. `codemode.py` in the router
type-checks a program against the signatures and serves the docs search from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import orjson

from compiler.build import Build
from compiler.codegen.router.reuse import FilePieces, piece_key
from compiler.codegen.stubs.identifiers import snake_name, unique_names
from compiler.codegen.stubs.stub_names import StubNames
from compiler.codegen.stubs.stub_packages import function_names, package_names
from compiler.fit.codemode import definitions
from compiler.infra.serialize import compact_json
from compiler.ir import Source, Tool

MAX_DEPTH = 4
"""Nesting rendered as types; deeper values are `Any` (the router validates the whole schema anyway)."""
MAX_LITERALS = 12
"""Enum values spelt as a `Literal[...]`; a longer enum is its base type."""
MAX_DESCRIPTION = 600
MAX_ANSWER_KEYS = 12
"""Keys of an answer listed in a docstring (required ones first); the rest are counted."""
MAX_ARGUMENT_NOTE = 200
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def annotation(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> str:
    """A Python annotation a JSON value fitting `schema` satisfies (looser where the schema is too rich)."""
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return "Any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return annotation(defs.get(name), defs, depth + 1) if ref.startswith("#/$defs/") else "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= MAX_LITERALS and all(
            isinstance(value, str | int) and not isinstance(value, bool) for value in enum):
        return f"Literal[{', '.join(json.dumps(value) for value in enum)}]"
    for union in ("anyOf", "oneOf"):
        branches = schema.get(union)
        if isinstance(branches, list) and branches:
            return _union([annotation(branch, defs, depth + 1) for branch in branches])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([annotation({**schema, "type": one}, defs, depth) for one in kind])
    if kind == "array":
        return f"list[{annotation(schema.get('items'), defs, depth + 1)}]"
    if kind == "object" or "properties" in schema:
        return "dict[str, Any]"
    return _SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _union(parts: list[str]) -> str:
    kept = list(dict.fromkeys(parts))
    if "Any" in kept:
        return "Any"
    return " | ".join(sorted(kept, key=lambda part: part == "None"))  # None last, as people write it


def _resolved(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """`schema` with a root `$ref` to a shared definition followed (a few hops at most)."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and depth < MAX_DEPTH:
        ref = schema["$ref"]
        schema = defs.get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/$defs/") else None
        depth += 1
    return schema


def answer_shape(schema: Any, defs: Mapping[str, Any]) -> str:
    """What a call returns, for the docstring: an object's keys with their types, or a list of such objects, so a
    program reads the answer without seeing it first (`list of dict: number (int), title (str), user (dict), ...`)."""
    schema = _resolved(schema, defs)
    if not isinstance(schema, Mapping):
        return "the answer as JSON"
    if schema.get("type") == "array":
        item = _resolved(schema.get("items"), defs)
        return f"list of {answer_shape(item, defs)}" if isinstance(item, Mapping) else "list"
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return annotation(schema, defs)
    required = set(schema.get("required") or ())
    keys = sorted(properties, key=lambda key: (key not in required, key))
    shown = ", ".join(f"{key} ({annotation(_resolved(properties[key], defs), defs)})"
                      for key in keys[:MAX_ANSWER_KEYS])
    more = f", and {len(keys) - MAX_ANSWER_KEYS} more keys" if len(keys) > MAX_ANSWER_KEYS else ""
    return f"dict: {shown}{more}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def function_entry(tool: Tool, name: str, schema: Mapping[str, Any],
                   shared: Mapping[str, Any]) -> dict[str, Any]:
    """The `_codemode.json` entry of one tool: its signature, docstring and argument names (`schema`: the bundled
    input schema; `shared`: the source's definitions, which the output schema refers to)."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    required = set(schema.get("required") or ()) & set(properties)
    defs = schema.get("$defs") if isinstance(schema.get("$defs"), Mapping) else {}
    assert isinstance(defs, Mapping)
    wires = sorted(properties, key=lambda wire: (wire not in required, wire))
    python = unique_names(wires, lambda raw: snake_name(raw, fallback="arg", prefix="p", reserved=("context",)))
    params: list[str] = []
    notes: list[str] = []
    for wire in wires:
        kind = annotation(properties[wire], defs)
        default = "" if wire in required else (" = None" if kind == "Any" else " | None = None")
        params.append(f"{python[wire]}: {kind}{default}")
        sent = f" (sent as {wire!r})" if python[wire] != wire else ""
        described = properties[wire].get("description") if isinstance(properties[wire], Mapping) else None
        note = _one_line(described, MAX_ARGUMENT_NOTE) if isinstance(described, str) else ""
        notes.append(f"    {python[wire]}{sent}: {note}".rstrip())
    output = _resolved(tool.output_schema, shared)
    returns = annotation(output, shared) if isinstance(output, Mapping) else "Any"
    returns = "dict[str, Any]" if returns.startswith("dict[") else returns
    arguments = f"*, {', '.join(params)}" if params else ""
    description = _one_line(tool.description or tool.title or f"Call the tool {tool.name!r}.", MAX_DESCRIPTION)
    doc = [description, "", f"Tool id: {tool.id}"]
    if notes:
        doc += ["", "Args:", *notes]
    doc += ["", f"Returns: {answer_shape(tool.output_schema, shared) if output is not None else 'the answer as JSON'}"]
    return {"tool": tool.id, "params": {python[wire]: wire for wire in wires},
            "signature": f"async def {name}({arguments}) -> {returns}:", "doc": "\n".join(doc)}


class Bundled(Protocol):
    """Tool → its bundled input schema (`router_package.BundledInputs`), and what bundling read besides it."""

    settings: list[int]

    def __getitem__(self, tool: Tool) -> Mapping[str, Any]: ...


def codemode_chunks(build: Build, routed: list[Tool], schemas: Bundled, pieces: FilePieces, *,
                    tool_hash: Callable[[Tool], str], stub_names: StubNames | None = None) -> Iterator[bytes]:
    """`_codemode.json`: module → function → entry, for every routed tool: the bytes of `compact_json` of that
    object + a newline, one function a piece (`router.reuse`), keyed by its tool's IR hash and its name (which
    depends on its source's other tools: looked up in `stub_names`, this compile's stub names, every time)."""
    packages = package_names(build.catalog.sources)
    modules: dict[str, tuple[Source, list[Tool], Mapping[str, str]]] = {}
    for source in build.catalog.sources:
        tools = [tool for tool in routed if tool.source == source.id]
        if tools:
            modules[packages[source.id]] = (source, tools, function_names(tools, stub_names))
    yield pieces.frame(b'{"format":1,"modules":{')
    for position, (module, (source, tools, names)) in enumerate(sorted(modules.items())):
        yield pieces.frame((b"," if position else b"") + orjson.dumps(module) + b":{")
        for index, tool in enumerate(sorted(tools, key=lambda item: names[item.name])):
            name = names[tool.name]
            key = piece_key("codemode", tool.id, tool_hash(tool), name, schemas.settings)
            yield pieces.frame(b"," if index else b"")
            yield pieces.piece(key, lambda: (_function_piece(tool, name, schemas, source), []))  # noqa: B023
        yield pieces.frame(b"}")
    yield pieces.frame(b'},"tools":' + compact_json(definitions()) + b"}\n")


def _function_piece(tool: Tool, name: str, schemas: Bundled, source: Source) -> bytes:
    return orjson.dumps(name) + b":" + compact_json(function_entry(tool, name, schemas[tool], source.definitions))
