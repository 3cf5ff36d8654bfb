"""YAML → JSON-shaped Python data, built from the parser's event stream with a loop instead of recursion.

PyYAML's composer recurses once per level (in C with the C loader, so a document nested 50,000 levels deep
overflows the C stack), shares aliased nodes so that a "billion laughs" document expands without bound later,
and constructs whatever its tags say. This builder reads libyaml's events (C, iterative) and checks each one
before anything grows, so every refusal carries the line and column where it happened:

- nesting deeper than `max_depth` (TC131), counting what an alias brings in;
- aliases that stand for more than `max_alias_nodes` nodes in all, or that name their own open anchor (TC132);
- a tag that is not a JSON type (TC133): only `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!seq`,
  `!!map` and the non-specific `!` are accepted (no `!!binary`, `!!set`, `!!omap`, `!!timestamp`,
  `!!python/...` or application tags);
- numbers written with more than `max_number_length` characters (TC134) and `.inf` / `.nan` (TC136).

Decisions (documented in the README): an untagged date or time (`2024-01-01`) stays the string it is written
as, because JSON has no date type and OpenAPI `format: date` values are strings; a mapping key is the text of
its scalar as written (`200: ...` is the key "200", `on:` is "on", `null:` is "null"), as it would be in JSON;
a key that is a sequence or a mapping is refused (TC135); an integer outside the 64-bit range becomes a float,
as orjson reads it in JSON; merge keys (`<<: *base`) are honoured. A stream with more than one document is
malformed (TC102), as with `yaml.safe_load`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from compiler.infra import limits as limit_codes
from compiler.infra.limits import Limits

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP, _MERGE, _TIMESTAMP = f"{_TAG}seq", f"{_TAG}map", f"{_TAG}merge", f"{_TAG}timestamp"
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, "!"})
_SEQ_TAGS = frozenset({_SEQ, "!"})
_MAP_TAGS = frozenset({_MAP, "!"})
_INT64_MIN, _UINT64_END = -(2**63), 2**64

_Parser: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = Resolver()


def _implicit_tag(value: str, implicit: tuple[bool, bool]) -> str:
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
    return tag

_CONSTRUCTOR = SafeConstructor()
# libyaml's own refusal past 1,000 levels; limits.max_depth is at most 120, so it always means TC131.
_PARSER_DEPTH_PROBLEM = "exceeded maximum nesting depth"


def _too_deep(max_depth: int) -> str:
    return f"nesting is deeper than max_depth={max_depth} levels (limits.max_depth)"


class YamlRefused(Exception):
    """A limit or a rule of this loader said no at `mark`."""

    def __init__(self, code: str, message: str, mark: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.mark = mark


@dataclass
class _Open:
    """A sequence or mapping being built."""

    container: list[Any] | dict[str, Any]
    anchor: str | None
    size: int = 1
    height: int = 1
    key: str | None = None
    has_key: bool = False
    merges: list[tuple[Any, Any]] = field(default_factory=list)
    """(value, mark) of each `<<` entry, applied when the mapping ends."""


@dataclass
class _Anchored:
    value: Any
    size: int
    height: int


class _Builder:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stack: list[_Open] = []
        self.anchors: dict[str, _Anchored] = {}
        self.open_anchors: set[str] = set()
        self.alias_nodes = 0
        self.documents = 0
        self.root: Any = None

    # -- events -----------------------------------------------------------------------------------------

    def feed(self, event: Any) -> None:
        if isinstance(event, yaml.ScalarEvent):
            self._scalar(event)
        elif isinstance(event, yaml.AliasEvent):
            self._alias(event)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            self._start(event)
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            self._end(event)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise YamlRefused("TC102", "malformed YAML: expected a single document in the stream",
                                  event.start_mark)
            self.anchors.clear()

    def _scalar(self, event: Any) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame.container, dict) and not frame.has_key:
            self._key(frame, event)
            return
        value = self._construct(event)
        self._add(value, 1, 0, event)

    def _alias(self, event: Any) -> None:
        anchor = event.anchor
        if anchor in self.open_anchors:
            raise YamlRefused(limit_codes.ALIAS_BUDGET, f"alias *{anchor} refers to a node that contains it "
                              "(a cycle JSON cannot hold)", event.start_mark)
        found = self.anchors.get(anchor)
        if found is None:
            raise YamlRefused("TC102", f"malformed YAML: found undefined alias {anchor!r}", event.start_mark)
        self.alias_nodes += found.size
        if self.alias_nodes > self.limits.max_alias_nodes:
            raise YamlRefused(limit_codes.ALIAS_BUDGET, f"aliases stand for more than max_alias_nodes="
                              f"{self.limits.max_alias_nodes} nodes (limits.max_alias_nodes)", event.start_mark)
        self._check_depth(len(self.stack) + found.height, event)
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame.container, dict) and not frame.has_key:
            if not isinstance(found.value, str):
                raise YamlRefused(limit_codes.NON_STRING_KEY, f"mapping key *{anchor} is not a string",
                                  event.start_mark)
            frame.key, frame.has_key = found.value, True
            return
        self._add(found.value, found.size, found.height, event)

    def _start(self, event: Any) -> None:
        is_map = isinstance(event, yaml.MappingStartEvent)
        tag = event.tag
        if tag is not None and tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
            raise YamlRefused(limit_codes.NON_JSON_TAG, f"tag {tag!r} is not a JSON type", event.start_mark)
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame.container, dict) and not frame.has_key:
            raise YamlRefused(limit_codes.NON_STRING_KEY, "a mapping key is a " +
                              ("mapping" if is_map else "sequence") + ", not a string", event.start_mark)
        self._check_depth(len(self.stack) + 1, event)
        container: list[Any] | dict[str, Any] = {} if is_map else []
        self.stack.append(_Open(container, event.anchor))
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)

    def _end(self, event: Any) -> None:
        frame = self.stack.pop()
        if isinstance(frame.container, dict):
            for merged, mark in frame.merges:
                self._merge(frame.container, merged, mark)
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = _Anchored(frame.container, frame.size, frame.height)
        self._add(frame.container, frame.size, frame.height, event, anchored=True)

    # -- pieces -----------------------------------------------------------------------------------------

    def _add(self, value: Any, size: int, height: int, event: Any, *, anchored: bool = False) -> None:
        if not anchored and isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
            self.anchors[event.anchor] = _Anchored(value, 1, 0)
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        parent.size += size
        parent.height = max(parent.height, height + 1)
        container = parent.container
        if isinstance(container, list):
            container.append(value)
            return
        if parent.key is None:  # the `<<` merge key
            parent.merges.append((value, event.start_mark))
        else:
            container[parent.key] = value
        parent.key, parent.has_key = None, False

    def _key(self, frame: _Open, event: Any) -> None:
        if event.tag is not None and event.tag not in _SCALAR_TAGS:
            raise YamlRefused(limit_codes.NON_JSON_TAG, f"tag {event.tag!r} is not a JSON type", event.start_mark)
        text = event.value
        is_merge = event.implicit[0] and event.tag is None and _implicit_tag(text, event.implicit) == _MERGE
        frame.key = None if is_merge else text
        frame.has_key = True
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchored(text, 1, 0)

    def _merge(self, target: dict[str, Any], merged: Any, mark: Any) -> None:
        """`<<: *base` or `<<: [*a, *b]`: keys not already present are copied in (earlier sources win)."""
        sources = merged if isinstance(merged, list) else [merged]
        for source in sources:
            if not isinstance(source, dict):
                raise YamlRefused("TC102", "malformed YAML: a merge key (<<) needs a mapping or a list of mappings",
                                  mark)
            for key, value in source.items():
                target.setdefault(key, value)

    def _check_depth(self, depth: int, event: Any) -> None:
        if depth > self.limits.max_depth:
            raise YamlRefused(limit_codes.NESTING_TOO_DEEP, _too_deep(self.limits.max_depth), event.start_mark)

    def _construct(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None and event.implicit[0]:
            tag = _implicit_tag(value, event.implicit)
        if tag in (None, "!", _STR, _TIMESTAMP, _MERGE, f"{_TAG}value") and event.tag in (None, "!", _STR):
            return value
        if tag not in _SCALAR_TAGS:
            raise YamlRefused(limit_codes.NON_JSON_TAG, f"tag {tag!r} is not a JSON type", event.start_mark)
        node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark)
        if tag == _NULL:
            return None
        if tag == _BOOL:
            if value.lower() not in _CONSTRUCTOR.bool_values:
                raise YamlRefused("TC102", f"malformed YAML: {value[:40]!r} is not a boolean", event.start_mark)
            return _CONSTRUCTOR.construct_yaml_bool(node)
        if len(value) > self.limits.max_number_length:
            raise YamlRefused(limit_codes.NUMBER_TOO_LONG, f"a number of {len(value)} characters is longer than "
                              f"max_number_length={self.limits.max_number_length} (limits.max_number_length)",
                              event.start_mark)
        try:
            number = _CONSTRUCTOR.construct_yaml_int(node) if tag == _INT else \
                _CONSTRUCTOR.construct_yaml_float(node)
        except (ValueError, KeyError, IndexError):
            raise YamlRefused("TC102", f"malformed YAML: {value[:40]!r} is not a number", event.start_mark) from None
        if isinstance(number, int) and not _INT64_MIN <= number < _UINT64_END:
            number = float(number)  # as orjson reads such an integer in JSON
        if isinstance(number, float) and not math.isfinite(number):
            raise YamlRefused(limit_codes.NOT_FINITE, f"{value!r} is not a finite number (JSON has no "
                              "infinities or NaN)", event.start_mark)
        return number


def load_yaml(data: bytes | str, limits: Limits) -> Any:
    """One YAML document as JSON-shaped data. Raises `YamlRefused`, or `yaml.YAMLError` for malformed text."""
    builder = _Builder(limits)
    try:
        for event in yaml.parse(data, Loader=_Parser):
            builder.feed(event)
    except yaml.MarkedYAMLError as exc:
        # The libyaml in newer PyYAML wheels (6.0.4 here) scans ahead and stops at 1,000 levels with its own error
        # before this builder sees the event that passes max_depth: the same refusal, in the same words.
        if _PARSER_DEPTH_PROBLEM not in (exc.problem or ""):
            raise
        raise YamlRefused(limit_codes.NESTING_TOO_DEEP, _too_deep(limits.max_depth),
                          exc.problem_mark) from None
    return builder.root
