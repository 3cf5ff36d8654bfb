"""The second judge of the wire: a control request serialised independently from the OpenAPI document, compared
with what the router sent. Written from the specification's text (OAS 3.1 "Parameter Object", "Style Values",
"Style Examples", "Encoding Object"; Swagger 2.0 `collectionFormat`), it reads the raw document and shares no code
with the router or the compiler. Where the specification leaves a choice (the order of parameters, deepObject arrays,
which of several media types), the control accepts any of the choices the text allows and checks the rest exactly.

Argument names follow toolc's documented flattening (README: body properties keep their names, parameters claim
theirs in the order path, query, header, cookie; a taken name becomes `{name}_{in}`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from tests.servers.raw_http import RawRequest

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SWAGGER_SEPARATORS = {"csv": ",", "ssv": " ", "tsv": "\t", "pipes": "|"}
_STANDARD_HEADERS = {"host", "accept", "accept-encoding", "connection", "user-agent", "content-length",
                     "content-type", "cookie", "authorization"}


def _enc(text: str) -> str:
    """RFC 3986: everything but unreserved characters percent-encoded."""
    return quote(text, safe="")


def _text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return str(value)


class Document:
    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.swagger = "swagger" in raw

    def deref(self, node: Any) -> Any:
        for _ in range(64):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/")):
                return node
            target: Any = self.raw
            for token in node["$ref"][2:].split("/"):
                target = target[token.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def operation(self, name: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        seen: dict[str, int] = {}
        for path, item in self.raw.get("paths", {}).items():
            item = self.deref(item)
            for method in _METHODS:
                op = item.get(method)
                if not isinstance(op, dict):
                    continue
                base = op.get("operationId") or re.sub(r"[^A-Za-z0-9]+", "_", f"{method}_{path}").strip("_")
                seen[base] = seen.get(base, 0) + 1
                candidate = base if seen[base] == 1 else f"{base}_{seen[base]}"
                if candidate == name:
                    return path, method, op, item
        raise KeyError(name)

    def object_fields(self, schema: Any, depth: int = 0) -> tuple[dict[str, Any], set[str]] | None:
        schema = self.deref(schema)
        if not isinstance(schema, dict) or depth > 16 or any(k in schema for k in ("anyOf", "oneOf", "not")):
            return None
        if schema.get("type", "object") != "object":
            return None
        properties: dict[str, Any] = {}
        required: set[str] = set(schema.get("required") or ())
        for member in schema.get("allOf") or ():
            found = self.object_fields(member, depth + 1)
            if found is None:
                return None
            properties.update(found[0])
            required |= found[1]
        properties.update(schema.get("properties") or {})
        return (properties, required) if properties else None


def _param_schema(doc: Document, param: dict[str, Any]) -> dict[str, Any]:
    if doc.swagger:
        return param
    schema = param.get("schema")
    if schema is None:
        for media in (param.get("content") or {}).values():
            schema = media.get("schema")
            break
    resolved = doc.deref(schema)
    return resolved if isinstance(resolved, dict) else {}


def _style(doc: Document, param: dict[str, Any]) -> tuple[str, bool]:
    if doc.swagger:
        fmt = param.get("collectionFormat", "csv")
        return ("multi", True) if fmt == "multi" else (fmt, False)
    default = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}[param["in"]]
    style = param.get("style", default)
    return style, param.get("explode", style == "form")


def _deep(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _deep(f"{prefix}[{k}]", v)]
    if isinstance(value, list):
        return [pair for i, v in enumerate(value) for pair in _deep(f"{prefix}[{i}]", v)]
    return [(prefix, _text(value))]


def _query_pairs(name: str, value: Any, style: str, explode: bool) -> list[tuple[str, str]]:
    """Decoded `(key, value)` pairs of a query (or form) parameter."""
    if style == "deepObject":
        return _deep(name, value)
    separator = {"spaceDelimited": " ", "pipeDelimited": "|", "multi": ",", "csv": ","}.get(
        style, _SWAGGER_SEPARATORS.get(style, ","))
    if isinstance(value, list):
        items = [_text(v) for v in value]
        return [(name, item) for item in items] if explode else [(name, separator.join(items))]
    if isinstance(value, dict):
        if explode:
            return [(k, _text(v)) for k, v in value.items()]
        return [(name, separator.join(f"{k}{separator}{_text(v)}" for k, v in value.items()))]
    return [(name, _text(value))]


def _path_text(name: str, value: Any, style: str, explode: bool) -> str:
    """The raw (encoded) expansion of one path parameter."""
    if isinstance(value, list):
        items = [_enc(_text(v)) for v in value]
    elif isinstance(value, dict):
        items = [f"{_enc(k)}={_enc(_text(v))}" if explode else f"{_enc(k)},{_enc(_text(v))}"
                 for k, v in value.items()]
    else:
        items = [_enc(_text(value))]
    if style == "label":
        return "." + ("." if explode else ",").join(items)
    if style == "matrix":
        if isinstance(value, dict) and explode:
            return "".join(";" + item for item in items)
        if isinstance(value, list) and explode:
            return "".join(f";{name}={item}" for item in items)
        return f";{name}={','.join(items)}"
    separator = _SWAGGER_SEPARATORS.get(style, ",")
    return separator.join(items) if style in _SWAGGER_SEPARATORS else ",".join(items)


def _header_text(value: Any, explode: bool) -> str:
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={_text(v)}" if explode else f"{k},{_text(v)}" for k, v in value.items())
    return _text(value)


def _split_query(raw: str) -> list[tuple[str, str]]:
    pairs = []
    for piece in raw.split("&"):
        if piece:
            key, _, value = piece.partition("=")
            pairs.append((unquote(key.replace("+", "%20")), unquote(value.replace("+", "%20"))))
    return pairs


def _ordered(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted(pairs, key=lambda pair: pair[0])  # stable: the order of one key's values is kept


def compare(raw_document: Mapping[str, Any], name: str, arguments: Mapping[str, Any], sent: RawRequest) -> list[str]:
    """Differences between `sent` and the control request for operation `name` called with `arguments`."""
    doc = Document(raw_document)
    path, method, op, item = doc.operation(name)
    differences: list[str] = []
    params: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*(item.get("parameters") or ()), *(op.get("parameters") or ())]:
        param = doc.deref(raw)
        if not doc.swagger and param["in"] == "header" and param["name"].lower() in ("accept", "content-type",
                                                                                      "authorization"):
            continue
        params[(param["name"], param["in"])] = param

    body_param = next((p for p in params.values() if p["in"] == "body"), None)
    form = [p for p in params.values() if p["in"] == "formData"]
    body_schema: Any = None
    media_types: list[str] = []
    encoding: dict[str, Any] = {}
    if body_param is not None:
        body_schema = body_param.get("schema")
        media_types = op.get("consumes") or raw_document.get("consumes") or ["application/json"]
    elif form:
        body_schema = {"type": "object", "properties": {p["name"]: p for p in form}}
        media_types = [m for m in (op.get("consumes") or raw_document.get("consumes") or [])
                       if m in ("application/x-www-form-urlencoded", "multipart/form-data")] or \
            ["multipart/form-data" if any(p.get("type") == "file" for p in form)
             else "application/x-www-form-urlencoded"]
        encoding = {p["name"]: {"style": p.get("collectionFormat", "csv")} for p in form if p.get("type") == "array"}
    elif op.get("requestBody") is not None:
        content = doc.deref(op["requestBody"]).get("content") or {}
        media_types = list(content)
        sent_type = (sent.headers("content-type") or [""])[0].split(";")[0].strip()
        chosen = content.get(sent_type) or next(iter(content.values()), {})
        body_schema = chosen.get("schema")
        encoding = chosen.get("encoding") or {}

    # Names, by toolc's documented flattening rule.
    body_fields = doc.object_fields(body_schema) if body_schema is not None else None
    taken: set[str] = set(body_fields[0]) if body_fields else ({"body"} if body_schema is not None else set())
    names: dict[tuple[str, str], str] = {}
    order = {"path": 0, "query": 1, "header": 2, "cookie": 3}
    located = sorted((key for key in params if key[1] in order), key=lambda key: order[key[1]])
    losers = []
    for key in located:
        if key[0] in taken:
            losers.append(key)
        else:
            names[key] = key[0]
            taken.add(key[0])
    for key in losers:
        candidate, n = f"{key[0]}_{key[1]}", 1
        while candidate in taken:
            n += 1
            candidate = f"{key[0]}_{key[1]}_{n}"
        names[key] = candidate
        taken.add(candidate)

    if sent.method != method.upper():
        differences.append(f"method: {sent.method} != {method.upper()}")

    # Path.
    def expand(match: re.Match[str]) -> str:
        key = (match.group(1), "path")
        style, explode = _style(doc, params[key])
        return _path_text(key[0], arguments[names[key]], style, explode)

    expected_path = re.sub(r"\{([^{}]+)\}", expand, path)
    if sent.raw_path.split("/")[-len(expected_path.split("/")):] != expected_path.split("/"):
        differences.append(f"path: {sent.raw_path} != …{expected_path}")

    # Query (credentials aside: checked once each).
    credentials = _credential_keys(doc, op)
    expected_query: list[tuple[str, str]] = []
    for key, param in params.items():
        if key[1] != "query" or names.get(key) not in arguments or arguments[names[key]] is None:
            continue
        value = arguments[names[key]]
        if not doc.swagger and "content" in param:
            expected_query.append((key[0], json.dumps(value, separators=(",", ":"))))
            continue
        style, explode = _style(doc, param)
        expected_query.extend(_query_pairs(key[0], value, style, explode))
    got_query = [pair for pair in _split_query(sent.raw_query) if pair[0] not in credentials["query"]]
    if _ordered(got_query) != _ordered(expected_query):
        differences.append(f"query: {_ordered(got_query)} != {_ordered(expected_query)}")
    for key in credentials["query"]:
        if [k for k, _ in _split_query(sent.raw_query)].count(key) > 1:
            differences.append(f"credential: query {key!r} more than once")

    # Headers.
    declared = {key[0].lower() for key in params if key[1] == "header"}
    for key, param in params.items():
        if key[1] != "header" or names.get(key) not in arguments or arguments[names[key]] is None:
            continue
        value = arguments[names[key]]
        text = json.dumps(value, separators=(",", ":")) if not doc.swagger and "content" in param else \
            _header_text(value, _style(doc, param)[1])
        if sent.headers(key[0]) != [text]:
            differences.append(f"header: {key[0]} {sent.headers(key[0])} != {[text]}")
    extra = set(sent.header_names) - _STANDARD_HEADERS - declared - credentials["header"]
    if extra:
        differences.append(f"header: undeclared {sorted(extra)}")

    # Cookies.
    expected_cookies = []
    for key, _param in params.items():
        if key[1] == "cookie" and names.get(key) in arguments and arguments[names[key]] is not None:
            value = arguments[names[key]]
            expected_cookies.append((key[0], _header_text(value, False) if not isinstance(value, str) else value))
    got_cookies = [(n, unquote(v)) for n, v in sent.cookies if n not in credentials["cookie"]]
    if sorted(got_cookies) != sorted(expected_cookies):
        differences.append(f"cookie: {got_cookies} != {expected_cookies}")

    # Body.
    if body_schema is not None:
        if body_fields is not None:
            value: Any = {field: arguments[field] for field in body_fields[0] if field in arguments}
            if not value and not (body_param or {}).get("required") and not form and \
                    not doc.deref(op.get("requestBody") or {}).get("required"):
                value = None
        else:
            value = arguments.get("body")
        differences.extend(_compare_body(value, media_types, encoding, sent))
    elif sent.body:
        differences.append("body: sent, but the operation has none")
    return differences


def _credential_keys(doc: Document, op: dict[str, Any]) -> dict[str, set[str]]:
    schemes = doc.raw.get("securityDefinitions") if doc.swagger else \
        (doc.raw.get("components") or {}).get("securitySchemes")
    keys: dict[str, set[str]] = {"query": set(), "header": set(), "cookie": set()}
    requirements = op.get("security", doc.raw.get("security")) or []
    for requirement in requirements:
        for scheme_name in requirement:
            scheme = doc.deref((schemes or {}).get(scheme_name) or {})
            if scheme.get("type") == "apiKey":
                where = scheme.get("in", "header")
                keys[where].add(scheme["name"].lower() if where == "header" else scheme["name"])
    return keys


def _compare_body(value: Any, media_types: list[str], encoding: Mapping[str, Any], sent: RawRequest) -> list[str]:
    sent_type = (sent.headers("content-type") or [""])[0]
    base = sent_type.split(";")[0].strip().lower()
    if value is None:
        return ["body: sent, but no body field was given"] if sent.body else []
    declared = [m.split(";")[0].strip().lower() for m in media_types]
    if base not in declared and "*/*" not in declared:
        return [f"media type: {base!r} is not one of {media_types}"]
    if base == "application/json" or base.endswith("+json"):
        if base == "application/json-patch+json" and not isinstance(value, list):
            return ["media type: a JSON Patch document is an array"]
        try:
            got = json.loads(sent.body)
        except ValueError:
            return ["body: not JSON"]
        return [] if got == value else [f"body: {got!r} != {value!r}"]
    if base == "application/x-www-form-urlencoded":
        expected: list[tuple[str, str]] = []
        for field, item in value.items():
            rule = encoding.get(field) or {}
            if "json" in str(rule.get("contentType", "")):
                expected.append((field, json.dumps(item, separators=(",", ":"))))
                continue
            style = rule.get("style", "form")
            explode = rule.get("explode", style == "form") if style in ("form", "deepObject") else False
            expected.extend(_query_pairs(field, item, style, explode))
        got_pairs = _split_query(sent.body.decode())
        return [] if got_pairs == expected else [f"body: {got_pairs} != {expected}"]
    if base == "multipart/form-data":
        boundary = sent_type.split("boundary=", 1)[-1].strip('"').encode()
        got_parts = []
        for part in sent.body.split(b"--" + boundary)[1:-1]:
            head, _, data = part.strip(b"\r\n").partition(b"\r\n\r\n")
            got_name = re.search(rb'name="([^"]*)"', head)
            got_parts.append((got_name.group(1).decode() if got_name else "", data))
        expected_parts = []
        for field, item in value.items():
            rule = encoding.get(field) or {}
            if "style" in rule and isinstance(item, dict | list):  # OAS 3.1: an explicit style applies
                style = rule["style"]
                explode = rule.get("explode", style == "form")
                expected_parts.extend((k, v.encode()) for k, v in _query_pairs(field, item, style, explode))
            elif isinstance(item, dict):
                expected_parts.append((field, json.dumps(item, separators=(",", ":")).encode()))
            else:
                expected_parts.extend((field, _text(v).encode()) for v in (item if isinstance(item, list)
                                                                           else [item]))
        return [] if sorted(got_parts) == sorted(expected_parts) else [f"body: {got_parts} != {expected_parts}"]
    got_text = sent.body
    want = value.encode() if isinstance(value, str) else _text(value).encode()
    return [] if got_text == want else [f"body: {got_text!r} != {want!r}"]
