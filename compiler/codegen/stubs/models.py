"""Pydantic v2 models for one source, from datamodel-code-generator over one combined schema.

    bundled tool schemas ──► combine() ──► {"$defs": {shared defs…, <Tool>Input, <Tool>Output, …}}
                                            │ datamodel-code-generator (library, builtin formatter),
                                            │ once per independent chunk (`codegen.stubs.model_chunks`)
                                            ▼
                              models source ──► analyse() ──► class → {wire key: annotation}

`combine` merges every bundled schema's local `$defs` into one table: a definition that is the same in two
tools (the source's shared OpenAPI components) is generated once; two different definitions that share a name
(two MCP tools each with a local `Item`) are told apart by prefixing the tool's model name. References are
re-rooted so any local pointer still names the same node, and everything that could leave the document or
confuse the generator is dropped on the way: `$id`, `$schema`, `$anchor`, `$dynamic*`, `$comment`, `x-*`
keys, `default` (the stubs never send an argument the caller left out, so the server applies its own
defaults; a default the schema itself contradicts would make the models ill-typed), and non-local `$ref`s (which become "any" with a TC605 warning; refs.py should never let one through).

`analyse` reads the generated module back with `ast` (libcst took most of the time on big sources and is only
needed to rewrite non-ASCII field names, see `ascii_fields`) so the stubs can reuse each field's exact annotation
(keyed by the *wire* property name: datamodel-code-generator renames `from` → `from_` with an alias).
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.codegen.stubs.identifiers import snake_name
from compiler.infra import limits
from compiler.refs import escape_token, unescape_token
from compiler.schema import map_subschemas

_DROPPED_KEYS = frozenset({"$id", "$schema", "$anchor", "$dynamicAnchor", "$dynamicRef", "$comment", "$vocabulary",
                           "default"})


@dataclass(frozen=True)
class ModelRequest:
    key: str
    """The class name wanted for this schema (already a unique, safe identifier)."""
    schema: Mapping[str, Any]
    """A bundled, self-contained schema (local `$defs`, refs `#/$defs/<name>`); read-only."""
    tool: str
    pointer: str
    introduces: tuple[str, ...] = ()
    """Shared definitions (`combine`'s `shared`) this request reached first (`codegen.stubs.bundling`)."""


@dataclass
class Combined:
    schema: dict[str, Any]
    foreign_refs: list[tuple[ModelRequest, str]] = field(default_factory=list)


def _walk(node: Any, on_ref: Callable[[str], str | None]) -> Any:
    """Copy a schema, rewriting `$ref`s with `on_ref` (None → the ref is replaced by `{}`), dropping unsafe keys."""
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS or (isinstance(key, str) and key.startswith("x-") and not _strict_boolean(node)):
            continue
        if key == "$ref":
            if isinstance(value, str) and (new := on_ref(value)) is not None:
                out[key] = new
            continue
        out[key] = value
    return map_subschemas(out, lambda sub, _step: _walk(sub, on_ref))


STRICT_BOOLEAN = {"x-python-type": "pydantic.StrictBool"}
"""The generator's annotation for a boolean output node (`lenient`): `StrictBool`, only `true` and `false` as in
JSON Schema. A lax `bool` beside `int` or `float` wins pydantic's tie for `0.0` or `1` and converts the answer.
The one `x-` key `_walk` keeps, and only on `type: boolean`: any other would let a document pick a model's types."""


def _strict_boolean(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "boolean" and all(node.get(key) == value for key, value in STRICT_BOOLEAN.items()) \
        and not any(isinstance(key, str) and key.startswith("x-") and key not in STRICT_BOOLEAN for key in node)


def ref_target(ref: str) -> tuple[str, str] | None:
    """`#/$defs/<name>/rest` → (name, '/rest'); None for other local pointers."""
    if not ref.startswith("#/$defs/"):
        return None
    head, _, rest = ref[len("#/$defs/"):].partition("/")
    return unescape_token(head), ("/" + rest if rest else "")


def references(node: Any) -> set[str]:
    """The `#/$defs/<name>` names a schema refers to."""
    found: set[str] = set()

    def collect(ref: str) -> str:
        target = ref_target(ref)
        if target:
            found.add(target[0])
        return ref

    _walk(node, collect)
    return found


def _same(name: str, sub: Any, table: Mapping[str, Any], origin: Mapping[str, int]) -> bool:
    return origin.get(name) == id(sub) or table[name] == _walk(sub, lambda ref: ref)


def _rename_plan(request: ModelRequest, local: Mapping[str, Any], table: Mapping[str, Any],
                 origin: Mapping[str, int], reserved: set[str]) -> dict[str, str]:
    """Which of the request's local definitions must be renamed to avoid a different one already in `table`."""
    renamed = {n for n, sub in local.items()
               if n in reserved or (n in table and not _same(n, sub, table, origin))}
    if not renamed:  # the usual case; the references below cost a copy of every local definition
        return {}
    deps = {n: references(sub) for n, sub in local.items()}
    changed = True
    while changed:  # a definition that refers to a renamed one differs from its namesake too
        changed = False
        for name, uses in deps.items():
            if name not in renamed and uses & renamed:
                renamed.add(name)
                changed = True
    plan: dict[str, str] = {}
    for name in sorted(renamed):
        candidate, counter = f"{request.key}_{name}", 2
        while candidate in table or candidate in reserved or candidate in plan.values():
            candidate, counter = f"{request.key}_{name}_{counter}", counter + 1
        plan[name] = candidate
    return plan


def combine(requests: Iterable[ModelRequest], shared: Mapping[str, Any] | None = None) -> Combined:
    """`shared`: the source's shared definitions, which requests refer to without carrying them (each enters the
    table when the request that `introduces` it does, as if that request had carried it)."""
    shared = shared or {}
    requests = list(requests)
    reserved = {r.key for r in requests}
    table: dict[str, Any] = {}
    origin: dict[str, int] = {}
    """The id of the raw definition each table entry came from (bundles share unchanged definitions)."""
    combined = Combined(schema={})
    for request in requests:
        local = request.schema.get("$defs")
        local = dict(local) if isinstance(local, Mapping) else {}
        plan = _rename_plan(request, local, table, origin, reserved)

        def rewrite(ref: str, request: ModelRequest = request, plan: dict[str, str] = plan,
                    local: dict[str, Any] = local) -> str | None:
            if not ref.startswith("#"):
                combined.foreign_refs.append((request, ref))
                return None
            target = ref_target(ref)
            if target is not None and target[0] in local:
                return "#/$defs/" + escape_token(plan.get(target[0], target[0])) + target[1]
            if target is not None and target[0] in shared:
                return ref
            return "#/$defs/" + escape_token(request.key) + ref[1:]  # a pointer into the tool schema itself

        for name in request.introduces:
            table[name] = _walk(shared[name], rewrite)
            origin[name] = id(shared[name])
        body = _walk({k: v for k, v in request.schema.items() if k != "$defs"}, rewrite)
        for name, sub in local.items():
            new_name = plan.get(name, name)
            if new_name not in table:
                table[new_name] = _walk(sub, rewrite)
                origin[new_name] = id(sub)
        table[request.key] = body
    combined.schema = {"$defs": dict(sorted(table.items()))}
    return combined


def _plain_formats() -> list[str]:
    """Every `format` keeps its JSON type (`uri` → str, not AnyUrl; `email` → str, not EmailStr).

    The wire is JSON either way; typed formats would make schema defaults ill-typed for mypy (`data: AnyUrl =
    Field('https://…')`) and some need optional packages at import time (EmailStr needs email-validator)."""
    from datamodel_code_generator.parser.jsonschema import json_schema_data_formats

    return [f"{kind}+{fmt}={kind}" for kind in ("string", "integer", "number")
            for fmt in sorted(json_schema_data_formats.get(kind, {})) if fmt != "default"]


class ModelGenerationError(RuntimeError):
    """datamodel-code-generator failed or returned something that is not one module."""


# Formatter settings of our own, so the output never depends on the current directory's pyproject.toml.
FORMATTER_SETTINGS = Path(__file__).resolve().parent / "formatter_settings"


def long_field_aliases(schema: Any) -> dict[str, str]:
    """Property name → field name, for every property name longer than `limits.max_identifier_length`: the
    generator gets a short field name (cut, with a hash) and keeps the name itself as the field's alias, so a
    name thousands of characters long is never an identifier (nor formatted as one)."""
    cap = limits.current().max_identifier_length
    aliases: dict[str, str] = {}
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            properties = node.get("properties")
            if isinstance(properties, Mapping):
                for raw in properties:
                    if isinstance(raw, str) and len(raw) > cap and raw not in aliases:
                        aliases[raw] = snake_name(raw, fallback="field", prefix="field")
            stack.extend(value for value in node.values() if isinstance(value, Mapping | list))
        elif isinstance(node, list):
            stack.extend(value for value in node if isinstance(value, Mapping | list))
    return aliases


def split_source_lines(source: str) -> list[str]:
    """Physical lines with their ends, as the generator's builtin formatter splits them, in linear time."""
    return _LINE.findall(source)


def _linear_line_splitting() -> None:
    """The pinned generator's formatter splits source into lines by appending one character at a time, which
    is quadratic in the length of a line: a 1.6 MB property name (kept as the field's alias) took a minute.
    Swap in the same split done by one regex (the result is equal, see tests/test_hostile_limits.py)."""
    from datamodel_code_generator import _builtin_formatter

    current = getattr(_builtin_formatter, "_splitlines_no_ff", None)
    if current is not split_source_lines:
        _REPLACED.append(current)  # kept for the test that compares the two
        _builtin_formatter._splitlines_no_ff = split_source_lines


_REPLACED: list[Any] = []


def run_datamodel_codegen(schema: Mapping[str, Any], *, header: str, aliases: Mapping[str, str] | None = None) -> str:
    from datamodel_code_generator import generate
    from datamodel_code_generator.enums import DataModelType, InputFileType
    from datamodel_code_generator.format import Formatter, PythonVersion
    from datamodel_code_generator.parser import LiteralType

    _linear_line_splitting()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = generate(
                dict(schema),
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_311,
                formatters=[Formatter.BUILTIN],
                disable_timestamp=True,
                custom_file_header=header,
                enum_field_as_literal=LiteralType.All,
                field_constraints=True,
                reuse_model=False,
                skip_root_model=True,
                allow_remote_refs=False,
                treat_dot_as_module=False,
                keep_model_order=True,
                type_mappings=_plain_formats(),
                settings_path=FORMATTER_SETTINGS,
                builtin_format_line_length=88,
                aliases=dict(aliases) if aliases else None,
            )
    except Exception as exc:  # the library raises many unrelated types; all mean "no models for this source"
        raise ModelGenerationError(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(result, str):
        raise ModelGenerationError("datamodel-code-generator produced several modules")
    return result


@dataclass(frozen=True)
class ModelsModule:
    code: str
    fields: Mapping[str, Mapping[str, str]]
    """Class name → wire property name → annotation source (a subclass also lists the fields it inherits)."""
    local_names: frozenset[str]
    """Names the module defines at top level (classes, aliases)."""
    imports: Mapping[str, tuple[str, str]]
    """Name used in the module → (module it comes from, name there)."""
    module: str = ""
    """The package-private module holding these names when a source's models are split (`_models_3`); empty
    when they live in `models.py` itself."""
    exported: frozenset[str] = frozenset()
    """Of `local_names`, those `models.py` re-exports from `module` (so `_models.<name>` reaches them)."""
    stand_ins: tuple[tuple[str, str], ...] = ()
    """For a leaf chunk of a big component: (name, shared definition) of each class it takes from its shared
    module instead of a stand-in (`model_chunks`)."""


class _Segments:
    """Exact source text of ast nodes. `ast.get_source_segment` splits the whole module on every call, which is
    quadratic on a 30,000-line models module; this splits once. Offsets are UTF-8 byte columns, as in `ast`."""

    def __init__(self, code: str) -> None:
        self._lines: list[str] = _LINE.findall(code)

    def _cut(self, line: int, start: int | None = None, end: int | None = None) -> str:
        text = self._lines[line]
        if text.isascii():
            return text[start:end]
        return text.encode("utf-8")[start:end].decode("utf-8")

    def __call__(self, node: ast.expr) -> str:
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        end = node.end_col_offset
        if first == last:
            return self._cut(first, node.col_offset, end)
        middle = self._lines[first + 1:last]
        return "".join([self._cut(first, node.col_offset), *middle, self._cut(last, 0, end)])


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
"""A physical line with its end, split as CPython's tokenizer does (form feeds and U+2028 are not line ends)."""


def _alias(value: ast.expr | None) -> str | None:
    if not isinstance(value, ast.Call):
        return None
    for keyword in value.keywords:
        if keyword.arg in ("alias", "validation_alias"):
            literal = keyword.value
            return literal.value if isinstance(literal, ast.Constant) and isinstance(literal.value, str) else None
    return None


def _class_fields(node: ast.ClassDef, segment: _Segments, known: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Own fields after those of local base classes (reuse_model writes `class B(A): pass` for a duplicate)."""
    fields: dict[str, str] = {}
    for base in reversed(node.bases):
        if isinstance(base, ast.Name) and base.id in known:
            fields.update(known[base.id])
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            if name == "model_config":
                continue
            alias = _alias(statement.value)
            fields[name if alias is None else alias] = segment(statement.annotation)
    return fields


def ascii_fields(code: str) -> str:
    """`code` with every non-ASCII field name made ASCII. libcst (slow on big modules, but it keeps the source
    exactly as written) only runs when a field name is not ASCII, which generated names from real APIs never are."""
    if all(name.isascii() for name in _CLASS_FIELD.findall(code)):
        return code
    # Deferred: libcst takes 0.3 s to import, and only a module with a non-ASCII field name needs it.
    from compiler.codegen.stubs.ascii_fields import ascii_field_names

    return ascii_field_names(code)


_CLASS_FIELD = re.compile(r"^    ([^\s:=(#'\"]+)\s*:", re.MULTILINE)


def analyse(code: str, tree: ast.Module, *, module: str = "") -> ModelsModule:
    """Read a (checked, ASCII-field) generated models module back: classes, their fields, top-level names, imports.

    `tree` is `ast.parse(code)` (from `literals.check_module`, or `literals.parse_module` for a leaf chunk read
    before it is rewritten and checked); only field annotations are cut from `code` as written, so the stubs
    spell them exactly as the models do."""
    segment = _Segments(code)
    fields: dict[str, dict[str, str]] = {}
    local: set[str] = set()
    imports: dict[str, tuple[str, str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            local.add(statement.name)
            fields[statement.name] = _class_fields(statement, segment, fields)
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                if alias.name != "*":
                    imports[alias.asname or alias.name] = (statement.module, alias.name)
        elif isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            local.update(t.id for t in targets if isinstance(t, ast.Name))
    imports.pop("annotations", None)
    return ModelsModule(code=code, fields=fields, local_names=frozenset(local), imports=imports, module=module)
