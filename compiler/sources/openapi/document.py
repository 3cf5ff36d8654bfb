"""Document-level facts: the version, `Source.info`, base URLs, security schemes, and `$ref`s to OpenAPI objects.

Base URL, per operation: the config's `base_url`, else the operation's, path item's or document's first
`servers[].url` (most specific wins) with server variables replaced by their defaults (a default outside its `enum`:
the enum's first value, TC315); Swagger 2.0 builds `schemes[0]://host + basePath` (`https` when no scheme is given,
just `basePath` when there is no host). Relative URLs are kept as written here; the router resolves them against
the origin given at run time in `TOOLC_BASE_URL_<API>` (a local document's own location is no HTTP origin).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import HttpArgument, JsonObject, SecurityScheme
from compiler.refs import PointerError, refused_ref, resolve_pointer
from compiler.sources.openapi.codes import (
    BAD_OBJECT,
    NOT_OPENAPI,
    SERVER_VARIABLE,
    UNKNOWN_SECURITY_SCHEME,
    UNRESOLVED_REF,
)
from compiler.sources.openapi.schema_dialect import SchemaNormalizer, pointer

Dialect = Literal["2.0", "3.0", "3.1"]

_MAX_REF_HOPS = 32
_VARIABLE = re.compile(r"\{([^{}]+)\}")


class Skip(Exception):
    """Raised inside one operation after its cause was reported; the operation becomes a TC302."""


def dialect_of(document: Any, *, source: str, diagnostics: Diagnostics) -> Dialect | None:
    if not isinstance(document, dict):
        diagnostics.error(NOT_OPENAPI, f"an OpenAPI document is a mapping, not {type(document).__name__}",
                          source=source)
        return None
    if "swagger" in document:
        version, key = document["swagger"], "swagger"
        if str(version) in ("2.0", "2"):
            return "2.0"
    else:
        version, key = document.get("openapi"), "openapi"
        text = str(version)
        if isinstance(version, str) and re.fullmatch(r"3\.0(\.\d+)?(-[\w.]+)?", text):
            return "3.0"
        if isinstance(version, str) and re.fullmatch(r"3\.[12](\.\d+)?(-[\w.]+)?", text):
            return "3.1"  # 3.2 is read with the 3.1 schema dialect (plus its `query` method)
    if version is None:
        diagnostics.error(NOT_OPENAPI, "no `openapi` or `swagger` version field", source=source)
    else:
        diagnostics.error(NOT_OPENAPI, f"unsupported {key} version {version!r} (toolc reads 2.0, 3.0, 3.1, 3.2)",
                          source=source, pointer="/" + key)
    return None


@dataclass
class Context:
    """Everything one `read_openapi` call shares across operations."""

    document: JsonObject
    dialect: Dialect
    source_id: str
    location: str
    diagnostics: Diagnostics
    schemas: SchemaNormalizer
    security_schemes: dict[str, SecurityScheme] = field(default_factory=dict)
    base_url: str = ""
    base_url_override: str | None = None
    unknown_schemes: set[str] = field(default_factory=set)
    ignored_headers: int = 0
    ref_cache: dict[str, tuple[Any, str]] = field(default_factory=dict)
    """Resolved `$ref`s to OpenAPI objects (parameters, bodies, responses), by reference."""
    param_cache: dict[int, Any] = field(default_factory=dict)
    field_cache: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """A parameter's argument before naming, by `id()` of the parameter object."""
    argument_cache: dict[tuple[Any, ...], HttpArgument] = field(default_factory=dict)
    """Equal arguments are one (immutable) object: most operations share most of their parameters."""
    """Normalised, annotated parameter schemas by `id()` of the parameter object (alive as long as the document)."""

    @property
    def swagger(self) -> bool:
        return self.dialect == "2.0"

    def deref(self, node: Any, where: str, *, tool: str, what: str) -> tuple[Any, str]:
        """Follow `$ref`s to a parameter, request body, response, header or operation object; raise Skip if
        broken. Bundlers follow a `$ref` anywhere, so documents put them where the specification has none (an
        operation, a `responses` map): any OpenAPI object may be one."""
        node, where = self._target(node, where, tool=tool, what=what)
        if not isinstance(node, dict):
            self._not_an_object(node, where, tool, what)
        return node, where

    def follow(self, node: Any, where: str, *, tool: str, what: str) -> tuple[Any, str]:
        """Follow a `$ref` that stands for a whole list or map (`parameters: {$ref: params.yaml}`, `responses:
        {$ref: ...}`), as bundlers do; the value is returned as found, for the caller to check its type."""
        return self._target(node, where, tool=tool, what=what)

    def media_types(self, content: Any, where: str, *, tool: str) -> tuple[Any, list[tuple[str, JsonObject, str]]]:
        """A `content` map (`where` its place) followed where it or its media type objects are `$ref`s: the map, and
        (media type, media type object, its place) for each one that has a `schema`."""
        content, where = self.follow(content, where, tool=tool, what="content map")
        if not isinstance(content, dict):
            return content, []
        found: list[tuple[str, JsonObject, str]] = []
        for media_type, raw in content.items():
            media, at = self.follow(raw, where + pointer(str(media_type)), tool=tool, what="media type")
            if isinstance(media, dict) and "schema" in media:
                found.append((str(media_type), media, at))
        return content, found

    def _target(self, node: Any, where: str, *, tool: str, what: str) -> tuple[Any, str]:
        if isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            hit = self.ref_cache.get(ref) if isinstance(ref, str) else None
            if hit is None:
                hit = self._follow(node, where, tool=tool, what=what)
                if isinstance(ref, str):
                    self.ref_cache[ref] = hit
            node, where = hit
        self.refuse_lost(node, where, tool, what)
        return node, where

    def refuse_lost(self, node: Any, where: str, tool: str, what: str) -> None:
        """An external `$ref` the resolver refused (TC201-TC204, located in its file) left only a note: the object
        is gone, so the operation is not a tool, rather than one that silently lost its parameters."""
        ref = refused_ref(node)
        if ref is not None:
            self.diagnostics.warning(UNRESOLVED_REF, f"{what} $ref {ref} was not pulled in (see the TC2xx "
                                     "diagnostic on it)", source=self.location, tool=tool, pointer=where)
            raise Skip

    def _follow(self, node: Any, where: str, *, tool: str, what: str) -> tuple[Any, str]:
        seen: list[str] = []
        start = where
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                self.diagnostics.warning(UNRESOLVED_REF, f"{what} $ref {ref!r} is not a reference into the document "
                                         "(external references are pulled in by the resolver; network ones never)",
                                         source=self.location, tool=tool, pointer=where + "/$ref")
                raise Skip
            if ref in seen or len(seen) >= _MAX_REF_HOPS:
                chain = " → ".join([*seen, ref])
                self.diagnostics.warning(UNRESOLVED_REF, f"{what} $ref is circular: {chain}",
                                         source=self.location, tool=tool, pointer=start + "/$ref")
                raise Skip
            seen.append(ref)
            try:
                node = resolve_pointer(self.document, ref)
            except PointerError as exc:
                self.diagnostics.warning(UNRESOLVED_REF, f"{what} $ref names nothing in the document: {exc}",
                                         source=self.location, tool=tool, pointer=where + "/$ref")
                raise Skip from None
            where = ref[1:]
        return node, where

    def _not_an_object(self, node: Any, where: str, tool: str, what: str) -> NoReturn:
        self.diagnostics.warning(BAD_OBJECT, f"a {what} must be an object, not {type(node).__name__}",
                                 source=self.location, tool=tool, pointer=where)
        raise Skip


def source_info(document: JsonObject, dialect: Dialect) -> dict[str, Any]:
    info = document.get("info")
    info = info if isinstance(info, dict) else {}
    result: dict[str, Any] = {
        "title": info.get("title") if isinstance(info.get("title"), str) else None,
        "version": str(info["version"]) if info.get("version") is not None else None,
    }
    if dialect == "2.0":
        result["swagger"] = str(document.get("swagger"))
        swagger_url = _swagger_base_url(document)
        result["servers"] = [swagger_url] if swagger_url else []
    else:
        result["openapi"] = str(document.get("openapi"))
        servers = document.get("servers")
        result["servers"] = [url for url in map(_server_url, servers) if url is not None] \
            if isinstance(servers, list) else []
    return result


def base_url(document: JsonObject, dialect: Dialect, ctx: Context | None = None) -> str:
    if dialect == "2.0":
        return _swagger_base_url(document)
    return first_server(document.get("servers"), ctx, "/servers", "") or ""


def first_server(servers: Any, ctx: Context | None = None, where: str = "", tool: str = "") -> str | None:
    if isinstance(servers, list):
        for index, server in enumerate(servers):
            url = _server_url(server, ctx, f"{where}/{index}", tool)
            if url is not None:
                return url
    return None


def _server_url(server: Any, ctx: Context | None = None, where: str = "", tool: str = "") -> str | None:
    """The URL with each `{variable}` replaced by its default; a default outside the variable's `enum` is replaced by
    the enum's first value (TC315, when `ctx` is given to report it)."""
    if not isinstance(server, dict) or not isinstance(server.get("url"), str):
        return None
    url: str = server["url"]
    variables = server.get("variables")
    variables = variables if isinstance(variables, dict) else {}

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        variable = variables.get(name)
        variable = variable if isinstance(variable, dict) else {}
        default, enum = variable.get("default"), variable.get("enum")
        choices = [str(item) for item in enum] if isinstance(enum, list) and enum else None
        if default is not None and (choices is None or str(default) in choices):
            return str(default)
        if ctx is not None:
            problem = "has no default" if default is None else f"default {default!r} is not in its enum {choices}"
            chosen = f"{choices[0]!r} is used" if choices else "the URL keeps it"
            ctx.diagnostics.warning(SERVER_VARIABLE, f"server variable {name!r} {problem}: {chosen}",
                                    source=ctx.location, tool=tool, pointer=where + "/variables")
        return choices[0] if choices else match.group(0)

    return _VARIABLE.sub(substitute, url)


def _swagger_base_url(document: JsonObject) -> str:
    host = document.get("host")
    base_path = document.get("basePath")
    base_path = base_path if isinstance(base_path, str) else ""
    if not isinstance(host, str) or not host:
        return base_path
    schemes = document.get("schemes")
    scheme = schemes[0] if isinstance(schemes, list) and schemes and isinstance(schemes[0], str) else "https"
    return f"{scheme}://{host}{base_path}"


def security_schemes(ctx: Context) -> dict[str, SecurityScheme]:
    where = "/securityDefinitions" if ctx.swagger else "/components/securitySchemes"
    try:
        raw = resolve_pointer(ctx.document, "#" + where)
    except PointerError:
        return {}
    if not isinstance(raw, dict):
        ctx.diagnostics.warning(BAD_OBJECT, "security schemes must be a mapping; ignored", source=ctx.location,
                                pointer=where)
        return {}
    schemes: dict[str, SecurityScheme] = {}
    for name, entry in raw.items():
        try:
            scheme, _ = ctx.deref(entry, where + pointer(name), tool="", what="security scheme")
        except Skip:
            continue
        kind = scheme.get("type")
        if not isinstance(kind, str):
            ctx.diagnostics.warning(BAD_OBJECT, "a security scheme needs a `type`", source=ctx.location,
                                    pointer=where + pointer(name))
            continue
        if kind == "basic":  # Swagger 2.0
            schemes[name] = SecurityScheme(name=name, type="http", scheme="basic")
        elif kind == "apiKey":
            location, param = scheme.get("in"), scheme.get("name")
            schemes[name] = SecurityScheme(name=name, type=kind, location=location if isinstance(location, str)
                                           else None, param_name=param if isinstance(param, str) else None)
        elif kind == "http":
            http_scheme = scheme.get("scheme")
            schemes[name] = SecurityScheme(name=name, type=kind, scheme=http_scheme.lower()
                                           if isinstance(http_scheme, str) else None)
        else:
            schemes[name] = SecurityScheme(name=name, type=kind)
    return schemes


def security_for(ctx: Context, requirements: Any, where: str, tool: str) -> tuple[tuple[SecurityScheme, ...], ...]:
    """Alternatives (any one suffices), each the schemes used together; `()` among them means anonymous."""
    if not isinstance(requirements, list):
        if requirements is not None:
            ctx.diagnostics.warning(BAD_OBJECT, "`security` must be a list of requirement objects; ignored",
                                    source=ctx.location, tool=tool, pointer=where)
        return ()
    alternatives: list[tuple[SecurityScheme, ...]] = []
    for index, requirement in enumerate(requirements):
        if not isinstance(requirement, dict):
            ctx.diagnostics.warning(BAD_OBJECT, "a security requirement must be an object; ignored",
                                    source=ctx.location, tool=tool, pointer=f"{where}/{index}")
            continue
        used: list[SecurityScheme] = []
        for name in requirement:
            scheme = ctx.security_schemes.get(name)
            if scheme is None:
                if name in ctx.unknown_schemes:
                    continue
                ctx.unknown_schemes.add(name)
                ctx.diagnostics.warning(UNKNOWN_SECURITY_SCHEME, f"security scheme {name!r} is not declared",
                                        source=ctx.location, tool=tool, pointer=f"{where}/{index}")
                continue
            used.append(scheme)
        alternatives.append(tuple(used))
    return tuple(alternatives)
