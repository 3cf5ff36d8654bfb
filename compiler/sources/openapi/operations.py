"""Operations → Tools. Every operation under `paths` becomes a tool or exactly one TC302 saying why not.

Naming: the tool name is the operationId, else the slug `{method}_{path}` with every run of characters outside
`[A-Za-z0-9]` turned into `_` (`GET /pets/{petId}` → `get_pets_petId`, TC303). A name seen before in document
order gets `_2`, `_3`, ... (skipping names some other operation has of its own; TC304). Tool id:
`openapi:{source_id}:{name}`. Description: summary, a blank line, description (one of them if equal).
Output schema: the first 2xx response with a JSON schema (`200` before `201` ..., then `2XX`), `default` only
when no 2xx response is declared at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

from compiler.ir import HttpArgument, HttpBinding, JsonObject, PartialOutputBinding, Tool
from compiler.policy import operation_hints, operation_risk
from compiler.refs.pointers import PointerError, resolve_pointer
from compiler.sources.openapi.codes import (
    BAD_OBJECT,
    DUPLICATE_OPERATION_ID,
    MISSING_OPERATION_ID,
)
from compiler.sources.openapi.credentials import credential_parameters, with_credential
from compiler.sources.openapi.document import Context, Skip, first_server, security_for
from compiler.sources.openapi.parameters import (
    Body,
    Field,
    assign_names,
    body_fields,
    merged_parameters,
    parameter_field,
    request_body,
    swagger_body,
)
from compiler.sources.openapi.presets import SourceWidePresets, resolve_presets, with_source_wide
from compiler.sources.openapi.schema_dialect import pointer

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_METHODS_31 = (*METHODS, "query")  # 3.2 adds QUERY; harmless for 3.1 documents, which cannot have the key
_SLUG = re.compile(r"[^A-Za-z0-9]+")
_SUCCESS = re.compile(r"2\d\d")
_JSON = re.compile(r"^application/(?:[\w.+-]*\+)?json\s*(?:;.*)?$|^\*/\*$", re.IGNORECASE)


@dataclass(slots=True)
class Operation:
    path: str
    method: str
    op: Any
    path_item: JsonObject
    where: str
    """The method's place in its path item (diagnostics about the operation as a whole point here)."""
    item_where: str
    op_where: str
    """Where the operation object is: `where`, or where its `$ref` led (bundlers allow one here)."""
    lost: bool = False
    """Its `$ref` could not be followed (reported): the operation is skipped."""
    name: str = ""


def find_operations(ctx: Context, paths: Mapping[str, Any]) -> tuple[list[Operation], int]:
    """Every operation in document order, and the number of callbacks met (they are not tools)."""
    operations: list[Operation] = []
    callbacks = 0
    methods = _METHODS_31 if ctx.dialect == "3.1" else METHODS
    for path, raw_item in paths.items():
        where = "/paths" + pointer(str(path))
        if not isinstance(raw_item, dict):
            ctx.diagnostics.report(BAD_OBJECT, f"a path item must be an object, not {type(raw_item).__name__}; "
                                   "it has no operations", source=ctx.location, pointer=where)
            continue
        item = raw_item
        try:
            ctx.refuse_lost(raw_item, where, "", "path item")
        except Skip:  # its file could not be read (TC2xx, reported on the `$ref`)
            continue
        if "$ref" in raw_item:  # Swagger 2.0 allows it too
            try:
                resolved, _ = ctx.deref({"$ref": raw_item["$ref"]}, where, tool="", what="path item")
            except Skip:  # reported (TC307); the item's own operations are still read, each a tool or a TC302
                resolved = {}
            item = {**resolved, **{k: v for k, v in raw_item.items() if k != "$ref"}}
        for key, op in item.items():
            if key in methods:
                operations.append(_operation(ctx, str(path), key, op, item, f"{where}/{key}", where))
                if isinstance(op, dict) and isinstance(op.get("callbacks"), dict):
                    callbacks += len(op["callbacks"])
        extra = item.get("additionalOperations")
        if isinstance(extra, dict) and ctx.dialect == "3.1":
            for method, op in extra.items():
                operations.append(_operation(ctx, str(path), str(method).lower(), op, item,
                                             f"{where}/additionalOperations{pointer(str(method))}", where))
    return operations, callbacks


def _operation(ctx: Context, path: str, method: str, op: Any, item: JsonObject, where: str,
               item_where: str) -> Operation:
    """An operation given as a `$ref` (`get: {$ref: ops/get.yaml}`: not in the specification, but every common
    bundler follows it and real documents rely on that) is followed here, so its name, parameters and responses
    are its target's."""
    if not isinstance(op, dict):
        return Operation(path, method, op, item, where, item_where, op_where=where)
    try:
        resolved, op_where = ctx.deref(op, where, tool="", what="operation")
    except Skip:
        return Operation(path, method, op, item, where, item_where, op_where=where, lost=True)
    return Operation(path, method, resolved, item, where, item_where, op_where=op_where)


def assign_tool_names(ctx: Context, operations: list[Operation]) -> None:
    bases: list[str] = []
    for operation in operations:
        op_id = operation.op.get("operationId") if isinstance(operation.op, dict) else None
        if isinstance(op_id, str) and op_id.strip():
            bases.append(op_id.strip())
            continue
        slug = _SLUG.sub("_", f"{operation.method}_{operation.path}").strip("_")
        bases.append(slug)
        if isinstance(operation.op, dict):
            ctx.diagnostics.report(MISSING_OPERATION_ID, f"no operationId; the tool is named {slug!r}",
                                   source=ctx.location, tool=_tool_id(ctx, slug), pointer=operation.where)
    own = set(bases)
    used: set[str] = set()
    for operation, base in zip(operations, bases, strict=True):
        name = base
        if name in used:
            n = 2
            while f"{base}_{n}" in used or f"{base}_{n}" in own:
                n += 1
            name = f"{base}_{n}"
            ctx.diagnostics.report(DUPLICATE_OPERATION_ID, f"operationId {base!r} is used before; this operation "
                                   f"is the tool {name!r}", source=ctx.location, tool=_tool_id(ctx, name),
                                   pointer=operation.where)
        used.add(name)
        operation.name = name


def _tool_id(ctx: Context, name: str) -> str:
    return f"openapi:{ctx.source_id}:{name}"


def build_tool(ctx: Context, operation: Operation, fixed: Mapping[str, Any],
               source_wide: SourceWidePresets | None = None) -> Tool:
    """One operation → one Tool; raises Skip after reporting why it cannot be one. `source_wide`: the presets for
    every operation (`fixed_params: {"*": ...}`), and the record of those applied."""
    tool = _tool_id(ctx, operation.name)
    op = operation.op
    if operation.lost:
        raise Skip
    if not isinstance(op, dict):
        ctx.diagnostics.report(BAD_OBJECT, f"an operation must be an object, not {type(op).__name__}",
                               source=ctx.location, tool=tool, pointer=operation.where)
        raise Skip
    at = operation.op_where
    params = merged_parameters(ctx, ((operation.path_item.get("parameters"), operation.item_where + "/parameters"),
                                     (op.get("parameters"), at + "/parameters")), tool)
    fields: list[Field] = []
    body: Body | None = None
    swagger_body_param: tuple[JsonObject, str] | None = None
    form: list[tuple[JsonObject, str]] = []
    for param, where in params:
        if param["in"] == "body":
            swagger_body_param = (param, where)
        elif param["in"] == "formData":
            form.append((param, where))
        else:
            fields.append(parameter_field(ctx, param, where, tool))
    if ctx.swagger:
        body = swagger_body(ctx, op, swagger_body_param, form, tool)
    elif op.get("requestBody") is not None:
        body = request_body(ctx, op["requestBody"], at + "/requestBody", tool)
    if body is not None:
        fields.extend(body_fields(ctx, body))
    assign_names(ctx, fields, tool, at)

    security = security_for(ctx, op["security"] if "security" in op else ctx.document.get("security"),
                            at + "/security" if "security" in op else "/security", tool)
    has_object_body = body is not None and not any(field.whole_body for field in fields)
    if source_wide is not None:
        fixed = with_source_wide(fixed, source_wide.presets, fields, source_wide.applied)
    presets, hidden = resolve_presets(ctx, fields, fixed, security, has_object_body, tool, at)
    credentials = credential_parameters(fields, security, hidden)
    hidden |= set(credentials)
    properties: JsonObject = {}
    required: list[str] = []
    for field in fields:
        if id(field) in hidden:
            continue
        properties[field.name] = field.schema
        if field.required:
            required.append(field.name)
    input_schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    dependent = _body_dependencies([field for field in fields if id(field) not in hidden])
    if dependent:
        input_schema["dependentRequired"] = dependent
    input_schema["additionalProperties"] = False

    summary, details = _text(op.get("summary")), _text(op.get("description"))
    description = summary if not details or details == summary else \
        details if not summary else f"{summary}\n\n{details}"
    method = operation.method.upper()
    risk = operation_risk(operation.name, summary, operation.path, method)
    binding = HttpBinding(
        method=method,
        path=operation.path,
        base_url=_base_url(ctx, op, operation.path_item, tool, at, operation.item_where),
        # pinned ones too (the wire keeps their style), and those a credential fills
        arguments=tuple(with_credential(_argument(ctx, field), credentials.get(id(field))) for field in fields),
        body_content_type=body.content_type if body is not None else None,
        body_required=body is not None and body.required,
        security=security,
    )
    output = output_schema(ctx, op, at, tool)
    if output is not None and not success_bodies_agree(ctx, op, tool):
        binding = PartialOutputBinding(**{item.name: getattr(binding, item.name)
                                          for item in dataclass_fields(binding)})
    return Tool(
        id=tool,
        source=ctx.source_id,
        name=operation.name,
        description=description,
        input_schema=input_schema,
        binding=binding,
        title=summary or None,
        output_schema=output,
        annotations=operation_hints(method, risk),
        risk=risk.level,
        side_effects=risk.side_effects,
        fixed_params=presets,
        extra=_extra(op),
    )


def _body_dependencies(fields: list[Field]) -> dict[str, list[str]]:
    """An optional body's required properties, as the input schema says it: any body field given requires them
    (JSON Schema `dependentRequired`; the router's serializer enforces the same before sending)."""
    body = [field.name for field in fields if field.location == "body" and not field.whole_body]
    needed = [field.name for field in fields if field.required_in_body]
    return {name: [other for other in needed if other != name] for name in body
            if any(other != name for other in needed)}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _argument(ctx: Context, field: Field) -> HttpArgument:
    key = (field.name, field.wire_name, field.location, field.required, field.style, field.explode, field.whole_body,
           field.content_type, field.allow_reserved, field.required_in_body, field.kind)
    argument = ctx.argument_cache.get(key)
    if argument is None:
        argument = ctx.argument_cache[key] = HttpArgument(
            name=field.name, wire_name=field.wire_name, location=field.location, required=field.required,
            style=field.style, explode=field.explode, whole_body=field.whole_body, content_type=field.content_type,
            allow_reserved=field.allow_reserved, required_in_body=field.required_in_body, kind=field.kind)
    return argument


def _base_url(ctx: Context, op: JsonObject, path_item: JsonObject, tool: str, where: str, item_where: str) -> str:
    """The most specific `servers` wins: the operation's, the path item's, then the document's (see document.py)."""
    if ctx.base_url_override is not None:
        return ctx.base_url_override
    if not ctx.swagger:
        for servers, at in ((op.get("servers"), where), (path_item.get("servers"), item_where)):
            url = first_server(servers, ctx, at + "/servers", tool)
            if url is not None:
                return url
    return ctx.base_url


def _extra(op: JsonObject) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if isinstance(op.get("tags"), list) and op["tags"]:
        extra["tags"] = op["tags"]
    if op.get("deprecated") is True:
        extra["deprecated"] = True
    for key, value in op.items():
        if isinstance(key, str) and key.startswith("x-"):
            extra[key] = value
    return extra


def output_schema(ctx: Context, op: JsonObject, where: str, tool: str) -> Any:
    responses, at = ctx.follow(op.get("responses"), where + "/responses", tool=tool, what="responses")
    if responses is None:
        return None
    if not isinstance(responses, dict):
        ctx.diagnostics.report(BAD_OBJECT, "`responses` must be a mapping; no output schema", source=ctx.location,
                               tool=tool, pointer=at)
        return None
    codes = {str(code): code for code in responses}
    success = sorted(code for code in codes if _SUCCESS.fullmatch(code))
    success += [code for code in codes if code in ("2XX", "2xx")]
    candidates = success or [code for code in codes if code == "default"]
    for code in candidates:
        response, response_where = ctx.deref(responses[codes[code]], f"{at}/{code}", tool=tool,
                                             what="response")
        schema, schema_where = _response_schema(ctx, op, response, response_where, tool)
        if schema is not None:
            normalised, ok = ctx.schemas.entry(schema, schema_where, tool)
            if not ok:
                raise Skip
            return normalised
    return None


def success_bodies_agree(ctx: Context, op: JsonObject, tool: str) -> bool:
    """Every 2xx response of `op` declares the same JSON body schema (read as written, `$ref`s to responses
    followed). Only a question asked of the document: a reference that does not resolve answers no, quietly (the
    output schema's own response was resolved, and reported, by `output_schema`)."""
    responses = op.get("responses")
    if not isinstance(responses, dict):
        return True
    schemas: list[Any] = []
    for code, response in responses.items():
        if not (_SUCCESS.fullmatch(str(code)) or str(code) in ("2XX", "2xx")):
            continue
        for _ in range(8):
            if not (isinstance(response, dict) and isinstance(response.get("$ref"), str)):
                break
            try:
                response = resolve_pointer(ctx.document, response["$ref"])
            except PointerError:  # a reference the document cannot follow: not known to agree
                return False
        if not isinstance(response, dict):
            return False
        schemas.append(_response_schema(ctx, op, response, "", tool)[0])
    # Encoded only to compare two or more: most operations answer one success status (GitHub's 987 encodings,
    # one per 2xx body, are 118 now; Stripe's 417 none).
    return len(schemas) <= 1 or len({json.dumps(schema, sort_keys=True) for schema in schemas}) == 1


def _response_schema(ctx: Context, op: JsonObject, response: JsonObject, where: str, tool: str) -> tuple[Any, str]:
    if ctx.swagger:
        produces = op.get("produces", ctx.document.get("produces"))
        if isinstance(produces, list) and produces and not any(
                isinstance(p, str) and _JSON.match(p) for p in produces):
            return None, where
        return response.get("schema"), where + "/schema"
    _, media_types = ctx.media_types(response.get("content"), f"{where}/content", tool=tool)
    for media_type, media, at in media_types:
        if _JSON.match(media_type):
            return media["schema"], f"{at}/schema"
    return None, where
