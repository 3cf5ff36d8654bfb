"""Parameters and request bodies → the fields of one flat input schema, and where each goes on the wire.

Merging: path-item parameters first, in document order; an operation parameter with the same (name, in)
replaces it in place, new ones follow. OAS 3 header parameters named Accept, Content-Type or Authorization are
ignored, as the specification says (the media types and security schemes decide those headers; TC314).

Bodies: a JSON media type (`application/json` first, then any `+json`; JSON Patch last unless the body is an array)
wins, else the first media type with a schema (form-urlencoded, multipart...), recorded as `body_content_type`. An
object body (`properties`, possibly through `$ref`s to shared schemas and `allOf`) is flattened: each property
becomes an argument, required if the body is; in an optional body its required properties are `required_in_body`
(the input schema says it with `dependentRequired`). Each property keeps its `encoding` (style, explode,
contentType, allowReserved); multipart parts get the specification's default part types. Anything else (array,
primitive, union, map without properties) is one `body` argument with `whole_body`. Swagger 2.0: the `in: body`
parameter is the body; `in: formData` parameters make a form body (`collectionFormat` as their encoding).

Collision rule: the body's properties keep their names; then parameters claim their own names in location order
path, query, header, cookie (document order within one location). A field whose name is already claimed is
renamed `{name}_{in}` (`{name}_{in}_2`, ... if that is taken too), after every unique name was claimed, so a
rename never takes a name that another field has of its own (TC305, info).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.ir import ArgumentLocation, JsonObject
from compiler.refs import unescape_token
from compiler.sources.openapi.codes import ARGUMENT_RENAMED, BAD_OBJECT, UNSUPPORTED_MEDIA_TYPE
from compiler.sources.openapi.document import Context, Skip
from compiler.sources.openapi.schema_dialect import pointer

PARAMETER_LOCATIONS = ("path", "query", "header", "cookie")
_CLAIM_ORDER = {"body": 0, "path": 1, "query": 2, "header": 3, "cookie": 4}
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
_COLLECTION_STYLE = {"ssv": "spaceDelimited", "tsv": "tabDelimited", "pipes": "pipeDelimited"}
_SWAGGER_SCHEMA_KEYS = ("type", "format", "items", "default", "maximum", "exclusiveMaximum", "minimum",
                        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                        "uniqueItems", "enum", "multipleOf", "x-nullable")
_RESERVED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(slots=True)
class Field:
    """One argument before naming: `wire_name` is its name on the wire, `name` its final schema property."""

    wire_name: str
    location: ArgumentLocation
    schema: Any
    required: bool
    style: str | None = None
    explode: bool | None = None
    whole_body: bool = False
    name: str = ""
    content_type: str | None = None
    allow_reserved: bool = False
    required_in_body: bool = False
    kind: str | None = None


@dataclass(slots=True)
class Body:
    schema: Any
    required: bool
    content_type: str
    encoding: JsonObject


def merged_parameters(ctx: Context, lists: tuple[tuple[Any, str], ...], tool: str) -> list[tuple[JsonObject, str]]:
    merged: dict[tuple[str, str], tuple[JsonObject, str]] = {}
    allowed = (*PARAMETER_LOCATIONS, "body", "formData") if ctx.swagger else PARAMETER_LOCATIONS
    for listed, where in lists:
        raw_list, base = ctx.follow(listed, where, tool=tool, what="parameter list")
        if raw_list is None:
            continue
        if not isinstance(raw_list, list):
            ctx.diagnostics.report(BAD_OBJECT, "`parameters` must be a list", source=ctx.location, tool=tool,
                                   pointer=base)
            raise Skip
        for index, raw in enumerate(raw_list):
            param, where = ctx.deref(raw, f"{base}/{index}", tool=tool, what="parameter")
            name, location = param.get("name"), param.get("in")
            if not isinstance(name, str) or not name or location not in allowed:
                ctx.diagnostics.report(BAD_OBJECT, f"a parameter needs a `name` and an `in` of {', '.join(allowed)}"
                                       f" (got name={name!r}, in={location!r})", source=ctx.location, tool=tool,
                                       pointer=where)
                raise Skip
            if location == "header" and not ctx.swagger and name.lower() in _RESERVED_HEADERS:
                ctx.ignored_headers += 1
                continue
            merged[(name, location)] = (param, where)
    return list(merged.values())


def parameter_field(ctx: Context, param: JsonObject, where: str, tool: str) -> Field:
    known = ctx.field_cache.get(id(param))
    if known is not None:
        return Field(*known)
    location: ArgumentLocation = param["in"]
    schema = _parameter_schema(ctx, param, where, tool)
    style = param.get("style")
    explode = param.get("explode")
    if ctx.swagger:
        style, explode = _swagger_style(param, location)
    if not isinstance(style, str):
        style = _DEFAULT_STYLE[location] if "content" not in param else None
    if not isinstance(explode, bool):
        explode = style == "form" if style is not None else None
    required = location == "path" or param.get("required") is True
    content_type = _content_type(param) if not ctx.swagger and "schema" not in param else None
    allow_reserved = location == "query" and param.get("allowReserved") is True
    known = (param["name"], location, schema, required, style, explode, False, "", content_type, allow_reserved, False,
             schema_kind(ctx.schemas.definitions, schema))
    ctx.field_cache[id(param)] = known
    return Field(*known)


def _content_type(param: JsonObject) -> str | None:
    content = param.get("content")
    if isinstance(content, dict):
        for media_type, media in content.items():
            if isinstance(media, dict) and "schema" in media:
                return str(media_type)
    return None


def _parameter_schema(ctx: Context, param: JsonObject, where: str, tool: str) -> Any:
    cached = ctx.param_cache.get(id(param))
    if cached is not None:
        return cached
    raw: Any
    if ctx.swagger:
        raw = {key: param[key] for key in _SWAGGER_SCHEMA_KEYS if key in param}
        schema, ok = ctx.schemas.entry(raw, where, tool, owner=param)
    else:
        raw, schema_where = param.get("schema"), where + "/schema"
        content = param.get("content")
        if raw is None and isinstance(content, dict):
            for media_type, media in content.items():
                if isinstance(media, dict) and "schema" in media:
                    raw, schema_where = media["schema"], f"{where}/content{pointer(media_type)}/schema"
                    break
        if raw is None:
            ctx.diagnostics.report(BAD_OBJECT, "a parameter needs a `schema` (or `content`); any value accepted",
                                   source=ctx.location, tool=tool, pointer=where)
            raw = {}
        schema, ok = ctx.schemas.entry(raw, schema_where, tool)
    if not ok:
        raise Skip
    schema = _annotate(schema, param)
    ctx.param_cache[id(param)] = schema
    return schema


def _annotate(schema: Any, param: JsonObject) -> Any:
    extra: JsonObject = {}
    description = param.get("description")
    if isinstance(description, str) and description and not (isinstance(schema, dict) and "description" in schema):
        extra["description"] = description
    if param.get("deprecated") is True:
        extra["deprecated"] = True
    if "example" in param and not (isinstance(schema, dict) and "examples" in schema):
        extra["examples"] = [param["example"]]
    if not extra or schema is False:
        return schema
    return {**schema, **extra} if isinstance(schema, dict) else extra


def _swagger_style(param: JsonObject, location: ArgumentLocation) -> tuple[str | None, bool | None]:
    if param.get("type") != "array":
        return None, None
    collection = param.get("collectionFormat", "csv")
    if collection == "multi":
        return "form", True
    if collection in _COLLECTION_STYLE:
        return _COLLECTION_STYLE[collection], False
    return _DEFAULT_STYLE[location], False


def request_body(ctx: Context, raw: Any, where: str, tool: str) -> Body | None:
    """OAS 3.x `requestBody`."""
    body, where = ctx.deref(raw, where, tool=tool, what="request body")
    content, media_types = ctx.media_types(body.get("content"), where + "/content", tool=tool)
    if not isinstance(content, dict):
        ctx.diagnostics.report(BAD_OBJECT, "a request body needs a `content` mapping", source=ctx.location,
                               tool=tool, pointer=where)
        raise Skip
    with_schema = [(media_type, media) for media_type, media, _ in media_types]
    places = {media_type: at for media_type, _, at in media_types}
    chosen: tuple[str, JsonObject] | None = None
    json_types = json_first([m for m, _ in with_schema], _is_array(ctx, with_schema))
    if json_types:
        chosen = next((m, media) for m, media in with_schema if m == json_types[0])
    elif with_schema:
        chosen = with_schema[0]
    required = body.get("required") is True
    if chosen is None:
        if not content:
            ctx.diagnostics.report(UNSUPPORTED_MEDIA_TYPE, "the request body lists no media type; no body is sent",
                                   source=ctx.location, tool=tool, pointer=where + "/content")
            return None
        first = str(next(iter(content)))
        ctx.diagnostics.report(UNSUPPORTED_MEDIA_TYPE, f"no schema for media type {first!r}; the body is taken as a "
                               "string", source=ctx.location, tool=tool, pointer=where + "/content")
        return Body({"type": "string"}, required, first, {})
    media_type, media = chosen
    schema, ok = ctx.schemas.entry(media["schema"], f"{places[media_type]}/schema", tool)
    if not ok:
        raise Skip
    encoding = media.get("encoding")
    return Body(schema, required, str(media_type), encoding if isinstance(encoding, dict) else {})


def json_first(media_types: list[str], array_body: bool) -> list[str]:
    """The JSON media types (`application/json`, `+json`), best first: `application/json`, then the others in
    document order, JSON Patch last unless the body is an array (a JSON Patch document is an array of operations:
    Kubernetes' PATCH lists it first for an object body, which is then sent as a merge patch)."""
    def base(media_type: str) -> str:
        return media_type.split(";", 1)[0].strip().lower()

    found = [m for m in media_types if base(m) == "application/json" or base(m).endswith("+json")]
    patch = [m for m in found if base(m) == "application/json-patch+json"]
    rest = [m for m in found if m not in patch]
    rest.sort(key=lambda m: base(m) != "application/json")
    return patch + rest if array_body and patch else rest + patch


def _is_array(ctx: Context, with_schema: list[tuple[str, JsonObject]]) -> bool:
    """Whether a JSON Patch media type of the body has an array schema (then it may be the one sent)."""
    return any(_is_array_schema(ctx.schemas.definitions, media.get("schema"), 0) for media_type, media in with_schema
               if "json-patch" in media_type.lower())


def _is_array_schema(definitions: dict[str, Any], schema: Any, depth: int) -> bool:
    resolved = resolved_schema(definitions, schema, depth)
    return isinstance(resolved, dict) and resolved.get("type") == "array"


def resolved_schema(definitions: dict[str, Any], schema: Any, depth: int = 0) -> Any:
    """`schema` with `$ref`s to shared schemas followed (raw OpenAPI `#/components/schemas/` refs too)."""
    while depth < 16 and isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref: str = schema["$ref"]
        name = ref.rsplit("/", 1)[-1]
        schema = definitions.get(unescape_token(name), definitions.get(name))
        depth += 1
    return schema


def swagger_body(ctx: Context, op: JsonObject, body: tuple[JsonObject, str] | None,
                 form: list[tuple[JsonObject, str]], tool: str) -> Body | None:
    consumes = op.get("consumes", ctx.document.get("consumes"))
    consumes = [c for c in consumes if isinstance(c, str)] if isinstance(consumes, list) else []
    if body is not None:
        param, where = body
        if "schema" not in param:
            ctx.diagnostics.report(BAD_OBJECT, "a body parameter needs a `schema`", source=ctx.location, tool=tool,
                                   pointer=where)
            raise Skip
        schema, ok = ctx.schemas.entry(param["schema"], where + "/schema", tool)
        if not ok:
            raise Skip
        json_types = json_first(consumes, _is_array_schema(ctx.schemas.definitions, schema, 0))
        concrete = [c for c in consumes if "*" not in c]
        content_type = (json_types or concrete or ["application/json"])[0]
        return Body(schema, param.get("required") is True, content_type, {})
    if not form:
        return None
    properties: JsonObject = {}
    required: list[str] = []
    encoding: JsonObject = {}
    for param, where in form:
        properties[param["name"]] = _parameter_schema(ctx, param, where, tool)
        if param.get("required") is True:
            required.append(param["name"])
        style, explode = _swagger_style(param, "query")
        if style is not None:  # collectionFormat: csv is `form` without explode, multi is `form` exploded
            encoding[param["name"]] = {"style": style, "explode": explode}
        if param.get("type") == "file":
            encoding.setdefault(param["name"], {})["contentType"] = "application/octet-stream"
    has_file = any(param.get("type") == "file" for param, _ in form)
    forms = [c for c in consumes if c.split(";")[0].strip().lower() in _FORM_TYPES]
    content_type = "multipart/form-data" if has_file else forms[0] if forms else _FORM_TYPES[0]
    form_schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        form_schema["required"] = required
    return Body(form_schema, bool(required), content_type, encoding)


def body_fields(ctx: Context, body: Body) -> list[Field]:
    flat = object_properties(ctx.schemas.definitions, body.schema, 0)
    if flat is None:
        return [Field("body", "body", body.schema, body.required, whole_body=True,
                      kind=schema_kind(ctx.schemas.definitions, body.schema))]
    properties, required = flat
    media = body.content_type.split(";", 1)[0].strip().lower()
    fields = []
    for name, schema in properties.items():
        encoding = body.encoding.get(name)
        style = explode = content_type = None
        allow_reserved = False
        if isinstance(encoding, dict):
            style = encoding.get("style") if isinstance(encoding.get("style"), str) else None
            explode = encoding.get("explode") if isinstance(encoding.get("explode"), bool) else None
            content_type = encoding.get("contentType") if isinstance(encoding.get("contentType"), str) else None
            allow_reserved = encoding.get("allowReserved") is True
        if media == "multipart/form-data" and content_type is None:
            content_type = _part_type(ctx.schemas.definitions, schema)
        fields.append(Field(name, "body", schema, body.required and name in required, style, explode,
                            content_type=content_type, allow_reserved=allow_reserved,
                            required_in_body=not body.required and name in required,
                            kind=schema_kind(ctx.schemas.definitions, schema)))
    return fields


def schema_kind(definitions: dict[str, Any], schema: Any) -> str | None:
    """The one JSON type a value of `schema` has (null aside), or None when it may have several."""
    resolved = resolved_schema(definitions, schema)
    if not isinstance(resolved, dict):
        return None
    kind = resolved.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None and "properties" in resolved and not any(k in resolved for k in ("anyOf", "oneOf")):
        kind = "object"
    return kind if isinstance(kind, str) else None


def _part_type(definitions: dict[str, Any], schema: Any) -> str:
    """OAS `encoding.contentType` defaults for a multipart part: binary strings are octet-streams, objects (and
    arrays of them) JSON, other primitives text/plain."""
    resolved = resolved_schema(definitions, schema)
    if isinstance(resolved, dict) and resolved.get("type") == "array":
        resolved = resolved_schema(definitions, resolved.get("items"))
    if not isinstance(resolved, dict):
        return "text/plain"
    if resolved.get("format") == "binary" or "contentMediaType" in resolved:
        return "application/octet-stream"
    kind = resolved.get("type")
    if kind == "object" or (kind is None and ("properties" in resolved or "$ref" in resolved)):
        return "application/json"
    return "text/plain"


def object_properties(definitions: dict[str, Any], schema: Any, depth: int) -> tuple[JsonObject, set[str]] | None:
    """The properties and required names of an object schema, through `$ref`s and `allOf`; None if not one."""
    if depth > 16 or not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if ref is not None:
        if not (isinstance(ref, str) and ref.startswith("#/$defs/")) or "properties" in schema or "allOf" in schema:
            return None
        return object_properties(definitions, definitions.get(unescape_token(ref[8:])), depth + 1)
    if any(key in schema for key in ("anyOf", "oneOf", "not", "if")) or schema.get("type", "object") != "object":
        return None
    properties: JsonObject = {}
    required: set[str] = set()
    all_of = schema.get("allOf")
    if all_of is not None:
        if not isinstance(all_of, list):
            return None
        for member in all_of:
            flat = object_properties(definitions, member, depth + 1)
            if flat is None:
                return None
            properties.update(flat[0])
            required.update(flat[1])
    own = schema.get("properties")
    if own is not None:
        if not isinstance(own, dict):
            return None
        properties.update(own)
    names = schema.get("required")
    if isinstance(names, list):
        required.update(name for name in names if isinstance(name, str))
    if not properties:
        return None
    return properties, required


def assign_names(ctx: Context, fields: list[Field], tool: str, where: str) -> None:
    """Give every field its schema property name by the collision rule in the module docstring."""
    order = sorted(fields, key=lambda f: _CLAIM_ORDER[f.location])
    taken: set[str] = set()
    losers: list[Field] = []
    for field in order:
        if field.wire_name in taken:
            losers.append(field)
        else:
            field.name = field.wire_name
            taken.add(field.name)
    for field in losers:
        base = f"{field.wire_name}_{field.location}"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        field.name = name
        taken.add(name)
        ctx.diagnostics.report(ARGUMENT_RENAMED, f"{field.location} parameter {field.wire_name!r} is the argument "
                               f"{name!r}: its name is taken", source=ctx.location, tool=tool, pointer=where)
