"""Node passes shared by several dialects. Each is small, reads one node, and reports what it loses."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from compiler.ir import JsonObject
from compiler.providers import codes
from compiler.providers.base import (
    ANNOTATIONS_TO_DROP,
    MARK_OPTIONAL,
    Lowering,
    NodePass,
    describe,
    on,
    type_set,
)

TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}),
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains",
                        "maxContains", "unevaluatedItems", "additionalItems"}),
    "object": frozenset({"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                         "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
                         "unevaluatedProperties", MARK_OPTIONAL}),
}
"""Keywords that only constrain values of one JSON type (moved into that branch when a type list is split)."""


def drop_annotations(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Vendor extensions (`x-*`) and documentation-only keywords are not for the model."""
    dropped = [k for k in node if k in ANNOTATIONS_TO_DROP or (k.startswith("x-") and k != MARK_OPTIONAL)]
    if dropped:
        for key in dropped:
            del node[key]
        ctx.loss(codes.DROPPED, pointer, f"dropped {', '.join(sorted(dropped))} (annotations, not for the model)")
    return node


@on('nullable')
def openapi_nullable(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """A stray OpenAPI 3.0 `nullable` (sources normalise it; a hand-made schema may not) becomes a null type."""
    if "nullable" not in node:
        return node
    flag = node.pop("nullable")
    kinds = type_set(node)
    if flag is True and kinds and "null" not in kinds:
        node["type"] = [*kinds, "null"]
    elif flag is True:
        ctx.loss(codes.DROPPED, pointer, "dropped `nullable: true` on a node without a type")
    return node


@on('oneOf')
def one_of_to_any_of(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if "oneOf" not in node:
        return node
    branches = node.pop("oneOf")
    if "anyOf" in node:
        node.setdefault("allOf", []).append({"anyOf": branches})
    else:
        node["anyOf"] = branches
    ctx.loss(codes.ONE_OF, pointer, "oneOf written as anyOf: a value matching several branches is now accepted")
    return node


_MERGE_UNION = frozenset({"required", MARK_OPTIONAL})


def merge_schemas(members: list[Any]) -> tuple[JsonObject, list[str]]:
    """Merge object-like `allOf` members into one node; conflicting keywords keep the first value."""
    merged: JsonObject = {}
    conflicts: list[str] = []
    for member in members:
        if not isinstance(member, Mapping):
            conflicts.append("a boolean member")
            continue
        for key, value in member.items():
            if key not in merged:
                merged[key] = dict(value) if key == "properties" else value
            elif key == "properties" and isinstance(value, Mapping):
                for name, sub in value.items():
                    if name in merged[key] and merged[key][name] != sub:
                        conflicts.append(f"properties/{name}")
                    merged[key].setdefault(name, sub)
            elif key in _MERGE_UNION and isinstance(value, list):
                merged[key] = [*merged[key], *(v for v in value if v not in merged[key])]
            elif key == "description":
                continue
            elif merged[key] != value:
                conflicts.append(key)
    return merged, conflicts


@on('allOf')
def merge_all_of(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Fold `allOf` into its node. A strict dialect cannot keep a conflict; a loose one keeps the first value."""
    members = node.get("allOf")
    if not isinstance(members, list):
        return node
    if "$ref" in node or any(isinstance(m, Mapping) and "$ref" in m for m in members):
        return _all_of_with_refs(node, members, pointer, ctx)
    own = {k: v for k, v in node.items() if k != "allOf"}
    merged, conflicts = merge_schemas([own, *members])
    if conflicts:
        if ctx.strict:
            ctx.incompatible(pointer, f"allOf members conflict on {', '.join(sorted(set(conflicts)))}")
            return node
        ctx.loss(codes.ALL_OF, pointer,
                 f"allOf merged; conflicting {', '.join(sorted(set(conflicts)))}: the first member wins")
    if "description" in own:
        merged["description"] = own["description"]
    return merged


def _all_of_with_refs(node: JsonObject, members: list[Any], pointer: str, ctx: Lowering) -> JsonObject:
    """`{"allOf": [{"$ref": X}], description}` (what pydantic and Zod emit) is `{"$ref": X, description}`; more
    than one member with a `$ref` cannot be merged without inlining."""
    own = {k: v for k, v in node.items() if k != "allOf"}
    if len(members) == 1 and isinstance(members[0], Mapping) and "$ref" not in own \
            and not set(own) - {"description", "title", "default"}:
        return {**members[0], **own}
    if ctx.strict:
        ctx.incompatible(pointer, "allOf with $ref members cannot be merged without inlining")
        return node
    first, rest = members[0], members[1:]
    merged = {**own, **first} if isinstance(first, Mapping) else own
    describe(merged, {"allOf": rest})
    ctx.loss(codes.ALL_OF, pointer, "allOf with $ref members: the first is kept, the others only described")
    return merged


def keyword_policy(allowed: Collection[str], formats: Mapping[str, Collection[str]] | None = None) -> NodePass:
    """A pass that moves every keyword outside `allowed` (and every `format` outside `formats[type]`) into the
    description. Structural keywords a dialect handles itself must be dealt with by an earlier pass."""

    def apply(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
        moved = {key: node[key] for key in node if key not in allowed}
        if formats is not None and "format" in node:
            kinds = type_set(node)
            permitted = set().union(*(formats.get(kind, ()) for kind in kinds)) if kinds else set()
            if node["format"] not in permitted:
                moved["format"] = node["format"]
        if moved:
            for key in moved:
                del node[key]
            describe(node, moved)
            ctx.loss(codes.DESCRIBED, pointer, f"moved into the description: {', '.join(sorted(moved))}")
        return node

    return apply


@on('type')
def split_type_list(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """`type: [a, b]` → `anyOf: [{type: a, ...a's keywords}, {type: b, ...}]` (lossless; null stays a branch)."""
    kinds = node.get("type")
    if not isinstance(kinds, list):
        return node
    if len(kinds) == 1:
        node["type"] = kinds[0]
        return node
    if "anyOf" in node:
        del node["type"]
        ctx.loss(codes.TYPE_REWRITTEN, pointer, f"type {kinds} next to anyOf dropped: the anyOf branches decide")
        return node
    branches: list[JsonObject] = []
    moved: set[str] = set()
    for kind in kinds:
        branch: JsonObject = {"type": kind}
        for key in TYPE_KEYWORDS.get(kind, ()):
            if key in node:
                branch[key] = node[key]
                moved.add(key)
        branches.append(branch)
    out = {k: v for k, v in node.items() if k != "type" and k not in moved}
    out["anyOf"] = branches
    return out
