"""The reverse map (`schemas/<target>.names.json`): a provider's tool call → the tool id and its wire arguments.

Format (version 1), canonical JSON::

    {
      "format": 1,
      "target": "openai-chat",                      # one of the four targets
      "tools": {
        "<provider tool name>": {
          "tool": "<tool id>",                      # mcp:{server}:{tool} | openapi:{spec}:{operation}
          "strict": true,                           # was the definition sent with strict: true
          "arguments": <shape>,                     # only present when arguments need rewriting
          "defs": {"<def name>": <shape>}           # only present when a shape uses "ref"
        }
      }
    }

A `<shape>` says how to rewrite one JSON value the model produced into the value the tool expects. Every key is
optional; an absent key means "nothing to do":

    {
      "rename":   {"<provider key>": "<wire key>"},  # object keys the provider could not carry (Anthropic)
      "optional": ["<key>", ...],                    # keys strict lowering made required + nullable:
                                                     #   a null value here means "omitted" → drop the key
      "properties": {"<key>": <shape>},              # apply to the value under that key (key as the model sent it)
      "items": <shape>,                              # apply to every element of an array
      "anyOf": [<shape>, ...],                       # alternatives, see below
      "keys": ["<key>", ...],                        # anyOf branches and defs only: the object keys declared
      "ref": "<def name>",                           # the shape is tool["defs"][name] (recursive schemas)
      "entries": <shape>,                            # the value is a list of {"key", "value"} entries (a map OpenAI
                                                     #   strict could not carry): build the object, values
                                                     #   rewritten by this shape (transforms.py, TC422)
      "json": true                                   # the value is a JSON-encoded string: decode it (TC423)
    }

Applying a shape S to a value V (`shapes.rewrite`: `arguments_to_wire` here, and generated routers, run it):
1. if S has "ref", continue with defs[S.ref] (after this, S has no "ref");
2. if V is an object: for each key K with value X, in order: if X is null and K in S.optional, drop K;
   else output key S.rename.get(K, K) with X rewritten by S.properties[K] when present;
3. if V is an array and S has "items": rewrite every element with S.items;
4. if S has "entries" and V is an array of objects: V becomes {e.key: e.value rewritten by S.entries};
   if S has "json" and V is a string: V becomes the value the string encodes (left as it is when it is not JSON:
   validation then refuses it; a text nested deeper than `shapes.MAX_JSON_DEPTH` raises `shapes.TooDeep`, never
   decoded);
5. then, if S has "anyOf", pick the first branch B that fits V (resolve B's "ref" first; B has "keys" and V is
   an object whose keys are all in B.keys, or B has "items", "entries" and V is an array, or B has "json" and V
   is a string, or B has none of these) and apply B.
Steps 2-5 apply to the value produced so far; a shape that is `{}` leaves the value unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from compiler.ir import JsonObject
from compiler.providers.base import MARK_OPTIONAL
from compiler.providers.dialect import Lowered
from compiler.providers.shapes import rewrite
from compiler.providers.transforms import MARK_ENTRIES, MARK_JSON, MARKERS
from compiler.schema import IdentityMemo, map_subschemas

NAME_MAP_FORMAT = 1


class UnknownToolName(LookupError):
    """The provider called a tool name that is not in the name map."""


def _defs_name(ref: str) -> str | None:
    if ref.startswith("#/$defs/"):
        from compiler.refs import unescape_token

        return unescape_token(ref[len("#/$defs/"):])
    return None


def extract_shape(node: Any, *, in_any_of: bool = False, cache: dict[tuple[int, bool], Any] | None = None) -> JsonObject:
    """The shape of a lowered schema, read from the strict lowering's private markers.

    Lowered subtrees may be shared between tools (`Lowering.memo`): shapes are cached by node identity (`cache`,
    which also pins the nodes so ids stay theirs) and reused."""
    if not isinstance(node, dict):
        return {}
    if cache is not None:
        hit = cache.get((id(node), in_any_of))
        if hit is not None and hit[0] is node:
            return dict(hit[1])
    shape: JsonObject = {}
    if node.get(MARK_JSON):
        shape["json"] = True
    if node.get(MARK_ENTRIES):
        entry = node.get("items") or {}
        shape["entries"] = extract_shape((entry.get("properties") or {}).get("value"), cache=cache)
        if cache is not None:
            cache[(id(node), in_any_of)] = (node, shape)
        return dict(shape)
    optional = node.get(MARK_OPTIONAL)
    if optional:
        shape["optional"] = list(optional)
    properties = node.get("properties")
    if isinstance(properties, (dict, Mapping)):
        subs = {key: extract_shape(sub, cache=cache) for key, sub in properties.items()}
        subs = {key: sub for key, sub in subs.items() if sub}
        if subs:
            shape["properties"] = subs
        if in_any_of:
            shape["keys"] = list(properties)
    items = extract_shape(node.get("items"), cache=cache)
    if items:
        shape["items"] = items
    elif in_any_of and "items" in node:
        shape["items"] = {}
    branches = node.get("anyOf")
    if isinstance(branches, list):
        subs_list = [extract_shape(branch, in_any_of=True, cache=cache) for branch in branches]
        if any(_acts(sub) for sub in subs_list):
            shape["anyOf"] = subs_list
    ref = node.get("$ref")
    if isinstance(ref, str) and _defs_name(ref) is not None:
        shape["ref"] = _defs_name(ref)
    if cache is not None:
        cache[(id(node), in_any_of)] = (node, shape)
    return dict(shape)


def without_markers(node: Any, cache: IdentityMemo[Any]) -> Any:
    """A copy of a lowered schema without the private markers; shared subtrees are copied once (`cache`)."""
    if not isinstance(node, dict):
        return node
    hit = cache.get(node)
    if hit is not None:
        return hit
    own = {key: value for key, value in node.items() if key != MARK_OPTIONAL and key not in MARKERS}
    return cache.put(node, map_subschemas(own, lambda sub, _step: without_markers(sub, cache)))


def _acts(shape: Mapping[str, Any]) -> bool:
    return any(key in shape for key in ("rename", "optional", "properties", "items", "anyOf", "ref", "entries", "json"))


def strict_shapes(schema: JsonObject, cache: dict[tuple[int, bool], Any] | None = None) -> tuple[JsonObject, JsonObject]:
    """(shape, defs) of a strict-lowered schema (markers are left in place: see `without_markers`)."""
    defs = {name: extract_shape(sub, in_any_of=True, cache=cache) for name, sub in (schema.get("$defs") or {}).items()}
    return extract_shape(schema, cache=cache), defs


def tool_entry(lowered: Lowered) -> JsonObject:
    entry: JsonObject = {"tool": lowered.tool.id, "strict": lowered.strict}
    shape = copy.deepcopy(lowered.arg_shape) if lowered.arg_shape else {}
    defs = copy.deepcopy(lowered.arg_defs)
    if lowered.renamed_keys:
        shape["rename"] = dict(sorted(lowered.renamed_keys.items()))
    defs = _live_defs(shape, defs)
    if _acts(shape):
        entry["arguments"] = shape
        if defs:
            entry["defs"] = defs
    return entry


def _live_defs(shape: JsonObject, defs: JsonObject) -> JsonObject:
    """Keep the defs that a used shape can reach and that do something; drop `ref`s to the others."""
    acting: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, sub in defs.items():
            if name not in acting and _does_something(sub, acting):
                acting.add(name)
                changed = True
    _prune_refs(shape, acting)
    for name in acting:
        _prune_refs(defs[name], acting)
    return {name: defs[name] for name in sorted(acting)}


def _does_something(shape: Any, acting: set[str]) -> bool:
    if not isinstance(shape, Mapping):
        return False
    if shape.get("rename") or shape.get("optional") or shape.get("ref") in acting or "entries" in shape \
            or shape.get("json"):
        return True
    children = [*(shape.get("properties") or {}).values(), shape.get("items"), *(shape.get("anyOf") or [])]
    return any(_does_something(sub, acting) for sub in children)


def _prune_refs(shape: Any, acting: set[str]) -> None:
    if not isinstance(shape, dict):
        return
    if "ref" in shape and shape["ref"] not in acting:
        del shape["ref"]
    for sub in [*(shape.get("properties") or {}).values(), shape.get("items"), *(shape.get("anyOf") or []),
                shape.get("entries")]:
        _prune_refs(sub, acting)
    for key in ("properties",):
        if key in shape:
            shape[key] = {k: v for k, v in shape[key].items() if _acts(v) or "keys" in v}
            if not shape[key]:
                del shape[key]


def arguments_to_wire(target: str, provider_tool_name: str, arguments: Mapping[str, Any],
                      name_map: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Route a provider's tool call back: (tool id, the arguments as the tool's own schema names them).

    Undoes OpenAI strict lowering (a null for an optional property means omitted) and argument renames. A JSON
    string argument nested too deeply raises `shapes.TooDeep` (a ValueError)."""
    if name_map.get("target") != target:
        raise ValueError(f"name map is for {name_map.get('target')!r}, not {target!r}")
    entry = name_map.get("tools", {}).get(provider_tool_name)
    if entry is None:
        raise UnknownToolName(provider_tool_name)
    shape = entry.get("arguments")
    wire = rewrite(dict(arguments), shape, entry.get("defs", {})) if shape else dict(arguments)
    return entry["tool"], wire
