"""The intermediate representation: one typed, immutable `Tool` for every MCP tool and OpenAPI operation.

Nothing after `compiler.sources` reads raw MCP or OpenAPI. Schemas inside the IR are JSON Schema 2020-12
dicts (OpenAPI 3.0 / Swagger 2.0 dialects are normalised by the OpenAPI source). A tool schema is resolved
against itself with its source's shared `definitions` overlaid as `$defs` (see `refs.RefResolver`): OpenAPI
tools refer to shared component schemas as `#/$defs/<name>`, MCP tools are self-contained. This keeps the
catalog as small as its input instead of repeating every closure per tool.

Schemas are plain dicts for speed; treat them as read-only. Lowering and codegen copy before they change.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

JsonObject = dict[str, Any]


class RiskLevel(enum.IntEnum):
    """Seed 000's levels; ordered so the router can say `risk >= HIGH`."""

    LOW = 0
    MEDIUM = 1
    HIGH = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> RiskLevel:
        return cls[label.upper()]


@dataclass(frozen=True, slots=True)
class Annotations:
    """MCP tool annotations (hints, never guarantees). None means the server did not say."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@dataclass(frozen=True, slots=True)
class McpBinding:
    """Call the tool on an MCP server by its original name."""

    server: str
    tool_name: str
    kind: Literal["mcp"] = "mcp"


ArgumentLocation = Literal["path", "query", "header", "cookie", "body"]


@dataclass(frozen=True, slots=True)
class HttpArgument:
    """Where one argument of the flattened input schema goes back on the wire."""

    name: str
    """The property name in the tool's input schema (after collision renaming)."""
    wire_name: str
    """The parameter's own name; for a body property, the key inside the JSON body."""
    location: ArgumentLocation
    required: bool = False
    style: str | None = None
    explode: bool | None = None
    whole_body: bool = False
    """True when the argument is the entire (non-object) request body."""
    content_type: str | None = None
    """A `content`-typed parameter's media type (its value is encoded in it, e.g. JSON, then percent-encoded); for a
    form or multipart body property, the part's `encoding.contentType` (or the OAS default for its schema)."""
    allow_reserved: bool = False
    """Query parameter `allowReserved` (or a form property's): RFC 3986 reserved characters other than the ones that
    would split the query (`& = # +`) go out unencoded."""
    required_in_body: bool = False
    """A property the body's schema requires, in a body that is optional: required whenever any body field is sent."""
    kind: str | None = None
    """The schema's one JSON type (`string`, `integer`, `number`, `boolean`, `array`, `object`), None when it has
    several or none: the router never spreads an object or array given where the schema says primitive."""


@dataclass(frozen=True, slots=True)
class CredentialArgument(HttpArgument):
    """A parameter that carries the API's credential (a chat API's `token` beside its OAuth scheme): hidden from the
    model, filled by the router from the scheme's credential. A subclass rather than a field of `HttpArgument`, so
    every other argument encodes (and hashes into the lock) exactly as before."""

    credential: str = ""
    """The security scheme whose credential fills it."""


@dataclass(frozen=True, slots=True)
class SecurityScheme:
    """An OpenAPI security scheme, enough for the router to attach credentials from config/env."""

    name: str
    type: str
    """apiKey | http | oauth2 | openIdConnect | mutualTLS"""
    scheme: str | None = None
    """For type http: bearer, basic, ..."""
    location: str | None = None
    """For apiKey: header, query or cookie."""
    param_name: str | None = None
    """For apiKey: the header/query/cookie name."""


@dataclass(frozen=True, slots=True)
class HttpBinding:
    """Call the tool as an HTTP request."""

    method: str
    """Upper-case HTTP method."""
    path: str
    """The path template, e.g. `/repos/{owner}/{repo}`."""
    base_url: str
    arguments: tuple[HttpArgument, ...]
    body_content_type: str | None = None
    body_required: bool = False
    """The request body is required: sent (at least `{}` for an object body) even when no body field is given."""
    security: tuple[tuple[SecurityScheme, ...], ...] = ()
    """Alternatives (any one suffices), each a set of schemes used together, as in OpenAPI."""
    kind: Literal["http"] = "http"


@dataclass(frozen=True, slots=True)
class PartialOutputBinding(HttpBinding):
    """An operation some success status of which answers with another body than `Tool.output_schema` describes,
    or with none (GitHub's 201 with an invitation or 204 with nothing): no output schema can be promised to MCP
    clients for every answer. A subclass rather than a field of `HttpBinding`, so every other binding encodes (and
    hashes into the lock) exactly as before."""

    output_partial: bool = True


Binding = McpBinding | HttpBinding


@dataclass(frozen=True, slots=True)
class Tool:
    id: str
    """`mcp:{server}:{tool}` or `openapi:{spec}:{operation}`."""
    source: str
    """The id of the Source the tool came from."""
    name: str
    """The tool's own name: the MCP tool name or the operationId (or method + path)."""
    description: str
    input_schema: JsonObject
    """Root is `type: object`."""
    binding: Binding
    title: str | None = None
    output_schema: JsonObject | None = None
    annotations: Annotations = Annotations()
    risk: RiskLevel = RiskLevel.LOW
    side_effects: tuple[str, ...] = ()
    """Sorted tags such as `fs.write`, `network.http`."""
    fixed_params: Mapping[str, Any] = field(default_factory=dict)
    """Preset arguments hidden from the model and merged in by the router."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields of the raw listing the IR has no slot for (`_meta`, `icons`, `execution`, `x-` keys), kept verbatim."""


SourceKind = Literal["mcp", "openapi"]


@dataclass(frozen=True, slots=True)
class Source:
    id: str
    kind: SourceKind
    location: str
    """Where it was read from: a file path relative to the project, or a server's command/url."""
    definitions: Mapping[str, JsonObject] = field(default_factory=dict)
    """Shared schemas, referred to from tool schemas as `#/$defs/<name>`."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """serverInfo/protocolVersion/capabilities for MCP; title/version/servers for OpenAPI."""


@dataclass(frozen=True, slots=True)
class Catalog:
    sources: tuple[Source, ...]
    tools: tuple[Tool, ...]

    def source(self, source_id: str) -> Source:
        for source in self.sources:
            if source.id == source_id:
                return source
        raise KeyError(source_id)

    def definitions_for(self, tool: Tool) -> Mapping[str, JsonObject]:
        return self.source(tool.source).definitions

    def tool(self, tool_id: str) -> Tool:
        for tool in self.tools:
            if tool.id == tool_id:
                return tool
        raise KeyError(tool_id)
