"""What the generated router's server (`toolc_router.serve_*`) needs baked in: `toolc_router/_serve.json`.

One line per served tool, in tool-id order (the order `tools/list` pages through), keyed by the name the tool is
served under over MCP; the value holds the tool id, title, description, MCP annotations and the output schema
when MCP clients can be given one. Input schemas are not repeated: the server reads them (and each source's
shared `$defs`) from `_schemas.json`, the file the router validates against.

MCP names follow the providers' name rules with MCP's own alphabet (`A-Z a-z 0-9 _ - .`, at most 128
characters, SEP-986) and the project's `names.server_prefix`; duplicates are always renamed (`_2`, ...), never
skipped, so every routed tool can be served.

Annotations: an MCP tool's are its server's (hints, as the server declared them); an OpenAPI operation's come
from its HTTP method (RFC 9110: GET/HEAD/OPTIONS are read-only, PUT and DELETE idempotent, DELETE destructive;
every HTTP API is open-world), except where the operation's words or the project file said otherwise (`policy`).

Descriptions: every served tool has one (MCP clients and the conformance suite's `tools-list` check expect it):
the tool's own, else its title, else the HTTP method and path of an operation, or the tool and server names.

Output schemas: up to MCP 2025-11-25 an `outputSchema` must have an object root, and a client checks every
structured result against it. A root `$ref` is inlined; a schema whose root is not an object (an array, a
string, a union) is not published, and such results reach the client as text only. Nor is the schema of an
operation whose success statuses answer with different bodies, or some with none (`PartialOutputBinding`):
a success that carries no conforming structured content would be an error to the client.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from compiler.codegen.router.reuse import FilePieces, piece_key
from compiler.config import NamesConfig
from compiler.ir import Catalog, HttpBinding, PartialOutputBinding, Source, Tool
from compiler.policy import is_read_only
from compiler.providers.names import Mangler, assign_names

MCP_NAMES = Mangler(re.compile(r"[^A-Za-z0-9_.-]"), max_length=128)
_DEFS_REF = re.compile(r"^#/\$defs/([^/]+)$")
_IDEMPOTENT = ("GET", "HEAD", "OPTIONS", "PUT", "DELETE")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def mcp_names(tools: Iterable[Tool], names: NamesConfig) -> dict[str, str]:
    """Tool id → the name the generated MCP server serves it under."""
    served, _ = assign_names(tools, "mcp", MCP_NAMES, names.model_copy(update={"namesake": "rename"}))
    return served


def tool_annotations(tool: Tool) -> dict[str, Any]:
    if isinstance(tool.binding, HttpBinding):
        method = tool.binding.method.upper()
        destructive = tool.annotations.destructive_hint  # set where the operation's words or the project file said
        return {"readOnlyHint": is_read_only(tool),
                "destructiveHint": method == "DELETE" if destructive is None else destructive,
                "idempotentHint": method in _IDEMPOTENT, "openWorldHint": True}
    hints = tool.annotations
    pairs = (("title", hints.title), ("readOnlyHint", hints.read_only_hint),
             ("destructiveHint", hints.destructive_hint), ("idempotentHint", hints.idempotent_hint),
             ("openWorldHint", hints.open_world_hint))
    return {key: value for key, value in pairs if value is not None}


def served_description(tool: Tool) -> str:
    """The tool's description, or a stand-in built from what else is known about it when it has none."""
    if tool.description.strip():
        return tool.description
    if tool.title:
        return tool.title
    if isinstance(tool.binding, HttpBinding):
        return f"{tool.binding.method.upper()} {tool.binding.path}"
    return f"{tool.name} (a tool of MCP server {tool.source})"


def _target(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    reference = schema.get("$ref")
    match = _DEFS_REF.match(reference) if isinstance(reference, str) else None
    if match is None:
        return None
    found = defs.get(match.group(1).replace("~1", "/").replace("~0", "~"))
    return found if isinstance(found, Mapping) else None


def _is_object(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> bool:
    if depth > 8:
        return False
    if schema.get("type") == "object":
        return True
    target = _target(schema, defs)
    if target is not None and _is_object(target, defs, depth + 1):
        return True
    # A conjunction with one object branch only accepts objects.
    return any(isinstance(branch, Mapping) and _is_object(branch, defs, depth + 1)
               for branch in schema.get("allOf") or ())


def output_schema(tool: Tool, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The `outputSchema` to publish (object root, root `$ref` inlined), or None."""
    schema = tool.output_schema
    if not isinstance(schema, Mapping):
        return None
    if isinstance(tool.binding, PartialOutputBinding):
        return None  # some success answer has another body, or none: it could not carry conforming content
    own = {**defs, **(schema.get("$defs") or {})}
    target = _target(schema, own)
    if target is not None:
        schema = {**target, **{key: value for key, value in schema.items() if key != "$ref"}}
    if not _is_object(schema, own):
        return None
    return {**schema, "type": "object"}


def serve_file(catalog: Catalog, tools: Iterable[Tool], names: NamesConfig) -> bytes:
    """`{"format": 1, "tools": {mcp name: {"id", "title"?, "description", "annotations", "outputSchema"?}}}`."""
    routed = sorted(tools, key=lambda tool: tool.id)
    return b"".join(serve_chunks(catalog, routed, mcp_names(routed, names), FilePieces({}, None, keep=False),
                                 tool_hash=lambda tool: ""))


def serve_chunks(catalog: Catalog, tools: Iterable[Tool], served: Mapping[str, str], pieces: FilePieces, *,
                 tool_hash: Callable[[Tool], str]) -> Iterator[bytes]:
    """`serve_file`'s bytes, one line per tool, each line a piece (`router.reuse`) keyed by the tool's IR hash
    and the name it is served under (`served`: `mcp_names` of every tool, assigned over the whole set)."""
    routed = sorted(tools, key=lambda tool: tool.id)
    known = {source.id: source for source in catalog.sources}
    yield pieces.frame(b'{"format":1,\n"tools":{\n')
    for index, tool in enumerate(routed):
        key = piece_key("serve", tool.id, tool_hash(tool), served[tool.id])
        yield pieces.piece(key, lambda: (_served_line(tool, served[tool.id], known.get(tool.source)), []))  # noqa: B023
        yield pieces.frame(b",\n" if index < len(routed) - 1 else b"\n")
    yield pieces.frame(b"}}\n")


def _served_line(tool: Tool, name: str, source: Source | None) -> bytes:
    entry: dict[str, Any] = {"id": tool.id, "description": served_description(tool), "annotations": tool_annotations(tool)}
    if tool.title:
        entry["title"] = tool.title
    output = output_schema(tool, source.definitions if source is not None else {})
    if output is not None:
        entry["outputSchema"] = output
    return f"{_dumps(name)}:{_dumps(entry)}".encode()
