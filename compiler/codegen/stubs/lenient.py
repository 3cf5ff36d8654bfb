"""Output models that never refuse what their JSON Schema accepts (design decision 11: strict on the way out,
lenient on the way back).

An API's answer is data nobody here wrote, and the router checks it against nothing stricter than the tool's
JSON Schema. The generator's models are stricter than that schema in places, so each output schema is rewritten
before the models are generated:

| construct | generated as is | rewritten for the output model |
|---|---|---|
| `minLength`/`maxLength`/`pattern`/`format`, number bounds, `multipleOf`, item and property counts, `uniqueItems`, `contains`, `propertyNames`, `patternProperties` | pydantic constraints (and Rust regex, not ECMA) | dropped: a real value that misses them is still the value |
| `additionalProperties: false` | `extra='forbid'` | dropped |
| an object without `additionalProperties` | extra keys silently dropped (hidden) | `additionalProperties: true`: `extra='allow'`, kept on the model |
| `discriminator` | a tagged union that refuses an unlisted tag | dropped: a plain union |
| `prefixItems` (draft-04 tuple `items`) | `list[Any]` even with no `type` | dropped with `items` (which only covers what follows the prefix) |
| a node with no `type` whose keywords imply one (`properties`, `items`), except a branch of an `allOf` | that type only (an object model, a list) | `anyOf` of that type and every other JSON type |
| `type: ["object", "null", ...]` | the object model only | `anyOf` of the object and the other types |
| `unevaluatedProperties`, `dependentSchemas`, `if`/`then`/`else`, `not` | (mostly ignored) | dropped |
| `x-` extensions | dropped (`models._walk`) | dropped here, so the one this rewrite adds is the only one |
| `type: boolean` (alone or in a `type` list) | `bool`, which also takes `0`, `1.0`, `"yes"`: in a union with `int`, pydantic's smart mode turns the answer `0.0` into `False` | `StrictBool` (a list is split: `anyOf` of the boolean and the other types) |

Types, `required`, `enum`/`const` and nullability (`type: [..., "null"]`, `anyOf` with `{type: null}`) stay: the
model types what the document promises, and an answer that breaks it reaches the caller as the stub's
`ToolOutputError`, raw. Input models are not rewritten (strict on the way out).

A definition the source shares (an OpenAPI component) can be reached from both sides. The output side keeps its
name (it is what callers read: `Pet`); the input side reaches a strict copy named `<name>Input` (`PetInput`), and
only for definitions some output reaches. Both rewrites are memoised on the definition's identity, so every tool
hands `SharedDefinitions.split` the same object for one definition, as the resolver's memo does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.codegen.stubs.models import STRICT_BOOLEAN, ref_target, references
from compiler.refs import escape_token
from compiler.schema import map_subschemas

DROPPED_ON_OUTPUT = frozenset({
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems", "uniqueItems", "minContains", "maxContains", "contains", "minProperties",
    "maxProperties", "propertyNames", "patternProperties", "unevaluatedProperties", "unevaluatedItems",
    "dependentSchemas", "dependentRequired", "dependencies", "if", "then", "else", "not", "discriminator",
    "contentEncoding", "contentMediaType", "contentSchema", "additionalItems",
})
"""Keywords an output model does not enforce (see the table above)."""

_OBJECT_HINTS = ("properties", "additionalProperties", "required")
_ARRAY_HINTS = ("items",)
_PINNED = ("$ref", "allOf", "anyOf", "oneOf", "enum", "const")
"""Keywords that already decide a node's type (or leave it to their branches)."""
_JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
STRICT_SUFFIX = "Input"


def lenient(node: Any, *, typed_elsewhere: bool = False) -> Any:
    """`node` (a schema without `$defs`, or one definition) rewritten for an output model. `typed_elsewhere`: the
    node is a branch of an `allOf`, whose other branches decide the type (an untyped branch there is the usual
    way to add properties to a `$ref`; it is not widened)."""
    if not isinstance(node, Mapping):
        return node
    out = {key: value for key, value in node.items()
           if key not in DROPPED_ON_OUTPUT and not (isinstance(key, str) and key.startswith("x-"))}
    if out.get("additionalProperties") is False:
        del out["additionalProperties"]
    if "prefixItems" in out or isinstance(out.get("items"), list):  # 2020-12 and draft-04 tuples
        out.pop("prefixItems", None)
        out.pop("items", None)
    out = map_subschemas(out, lambda sub, step: lenient(sub, typed_elsewhere=step[0] == "allOf"))
    kind = out.get("type")
    if kind == "boolean" and not _pins_values(out):
        return {**out, **STRICT_BOOLEAN}
    if isinstance(kind, list) and "boolean" in kind and len(kind) > 1 and not _pins_values(out):
        others = [t for t in kind if t != "boolean"]
        rest = lenient({**out, "type": others[0] if len(others) == 1 else others}, typed_elsewhere=typed_elsewhere)
        return {"anyOf": [{"type": "boolean", **STRICT_BOOLEAN}, rest]}
    implied = None if typed_elsewhere else _implied_type(out)
    kind = out.get("type", implied)
    if _is_object(kind) and "additionalProperties" not in out:
        out["additionalProperties"] = True
    if implied is not None:
        return {"anyOf": [{**out, "type": implied}, {"type": [t for t in _JSON_TYPES if t != implied]}]}
    if isinstance(kind, list) and "object" in kind and len(kind) > 1:  # the generator types it as the object only
        return {"anyOf": [{**out, "type": "object"}, {"type": [t for t in kind if t != "object"]}]}
    return out


def _pins_values(node: Mapping[str, Any]) -> bool:
    """Whether `enum`/`const` type the node (a `Literal`, which compares values and never converts them)."""
    return "enum" in node or "const" in node


def _implied_type(node: Mapping[str, Any]) -> str | None:
    """The type the generator would give an untyped node (from its keywords), or None when the node has a type,
    a keyword that decides it, or nothing that implies one."""
    if "type" in node or any(key in node for key in _PINNED):
        return None
    if any(key in node for key in _OBJECT_HINTS):
        return "object"
    if any(key in node for key in _ARRAY_HINTS):
        return "array"
    return None


def _is_object(kind: Any) -> bool:
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def strict_name(name: str) -> str:
    return name + STRICT_SUFFIX


class SplitDirections:
    """Rewrites one source's bundled tool schemas: outputs lenient, inputs pointing at strict copies of the
    shared definitions outputs reach."""

    def __init__(self, definitions: Mapping[str, Any], outputs: Iterable[Any]) -> None:
        self.reached = _reached(definitions, outputs)
        """Shared definitions some output schema reaches: generated lenient under their own names."""
        self._lenient: dict[int, tuple[Any, Any]] = {}
        self._strict: dict[int, tuple[Any, Any]] = {}

    @property
    def strict_names(self) -> frozenset[str]:
        return frozenset(strict_name(name) for name in self.reached)

    def output(self, bundled: Mapping[str, Any]) -> dict[str, Any]:
        """A bundled output schema, body and definitions, rewritten by `lenient`."""
        body = {key: value for key, value in bundled.items() if key != "$defs"}
        out: dict[str, Any] = lenient(body)
        defs = bundled.get("$defs")
        if isinstance(defs, Mapping) and defs:
            out = {**out, "$defs": {name: self._memo(self._lenient, node, lenient) for name, node in defs.items()}}
        return out

    def input(self, bundled: Mapping[str, Any]) -> Mapping[str, Any]:
        """A bundled input schema whose definitions that outputs reach are renamed to their strict copies."""
        defs = bundled.get("$defs")
        if not isinstance(defs, Mapping) or not self.reached.intersection(defs):
            return bundled
        body: dict[str, Any] = _renamed_refs({k: v for k, v in bundled.items() if k != "$defs"}, self.reached)
        body["$defs"] = {
            (strict_name(name) if name in self.reached else name):
                self._memo(self._strict, node, lambda sub: _renamed_refs(sub, self.reached))
            for name, node in defs.items()}
        return body

    @staticmethod
    def _memo(table: dict[int, tuple[Any, Any]], node: Any, rewrite: Any) -> Any:
        kept = table.get(id(node))
        if kept is None:
            kept = table[id(node)] = (node, rewrite(node))  # the node is pinned: its id is never reused
        return kept[1]


def _reached(definitions: Mapping[str, Any], outputs: Iterable[Any]) -> frozenset[str]:
    seen: set[str] = set()
    stack = [name for schema in outputs for name in references(schema)]
    while stack:
        name = stack.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        stack.extend(references(definitions[name]))
    return frozenset(seen)


def _renamed_refs(node: Any, renamed: frozenset[str]) -> Any:
    if not isinstance(node, Mapping):
        return node
    out = map_subschemas(node, lambda sub, _step: _renamed_refs(sub, renamed))
    ref = out.get("$ref")
    target = ref_target(ref) if isinstance(ref, str) else None
    if target is not None and target[0] in renamed:
        out["$ref"] = "#/$defs/" + escape_token(strict_name(target[0])) + target[1]
    return out
