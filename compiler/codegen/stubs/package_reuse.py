"""Per source package: its models and the pieces of its tools.py from the last compile, reused when what they
are made from is the same (issue 27: one changed description must not regenerate Microsoft Graph's stubs).

- **Models** (`SourcePackage._models`): bundling every tool schema and folding them into one table, then the
  generator, read only the tools' schemas, their model names and the source's definitions, never a description.
  An entry is keyed by exactly those (`models_key`) and keeps the models, the diagnostics their making reported
  (replayed on a hit) and the model chunks they used (`chunk_reuse` keeps those too, for the next change that
  does touch a schema).
- **Functions** (`stub_functions.functions`): a piece of `PIECE` functions depends on its stubs (each tool's IR
  hash: every field of it and the definitions it reaches) and on the models' names and fields, not their code
  (`models_digest`). An entry is the piece's text, the imports it needs and whether it returns `ToolResult`.

- **Checks** (`literals.check_module`) of a module made whole, such as `__init__.py` (Microsoft Graph's: 1.3 MB,
  0.1 s to parse and compile): keyed by its text with the source's digest zeroed (`checked_key`). The digest
  stands only in the module's docstring, as `sha256:<hex>`, and 64 hex digits in a string literal never change
  whether the module passes.

Every module's first lines name the whole source (`# from input sha256:…`, which any change to any tool
changes): a models entry keeps the header it was made with and a hit gets this compile's in its place, as
`chunk_reuse` does. One file per output folder (`.toolc-cache/<output>.stubs.json`), holding only this
compile's entries; toolc's identity is in the store's envelope, so another toolc's entries are never read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.codegen.stubs.model_chunks import GeneratedModels
from compiler.codegen.stubs.models import ModelsModule
from compiler.codegen.stubs.stub_functions import Piece, Stub
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import Source, Tool

KIND = "stubs"
_VERSION = "3"
_PARTS = ("models", "pieces", "checked")


def _sha256(data: Any) -> str:
    return hashlib.sha256(compact_json(data)).hexdigest()


def models_key(source: Source, package: str, location: str, stubs: Sequence[Stub], settings: str) -> str:
    """Everything a source's models (and the diagnostics made with them) are made from, but its header.
    `settings`: a digest of the project's settings (limits and resolver ones among them)."""
    return hashlib.sha256(compact_json({
        "source": source.id, "package": package, "location": location, "settings": settings,
        "definitions": source.definitions,
        "stubs": [[stub.tool.id, stub.input_key, stub.output_key, stub.tool.input_schema, stub.tool.output_schema]
                  for stub in stubs]})).hexdigest()


def checked_key(code: str, digest: str) -> str:
    """The key of a module's check: its text, its source's digest (`sha256:<digest>`, in its docstring) zeroed."""
    return hashlib.sha256(code.replace(f"sha256:{digest}", "sha256:" + "0" * len(digest)).encode()).hexdigest()


def models_digest(models: GeneratedModels) -> str:
    """What a stub function reads of the models (each module's names and fields, which module holds each tool
    model), never their code."""
    return _sha256({"owner": dict(models.owner), "modules": [_names(module) for module in models.modules]})


@dataclass(frozen=True)
class ReusedModels:
    models: GeneratedModels
    digest: str
    """`models_digest(models)`, kept with them (hashing Microsoft Graph's models' names and fields: 0.1 s)."""
    diagnostics: list[Diagnostic]
    chunks: list[str]
    """The `chunk_reuse` keys these models were made from."""


class StubReuse:
    """One compile's reuse of models and function pieces: `get`/`put` each, then `save`."""

    def __init__(self, out_dir: Path, diagnostics: Diagnostics) -> None:
        self._out_dir = out_dir
        entry = store.load(out_dir, KIND, diagnostics, _well_formed)
        previous = entry.payload if entry is not None and entry.key == _VERSION else {}
        self._previous: dict[str, dict[str, Any]] = {part: previous.get(part, {}) for part in _PARTS}
        self._now: dict[str, dict[str, Any]] = {part: {} for part in _PARTS}

    def checked(self, key: str) -> bool:
        """Whether the last compile checked (`literals.check_module`) a module keyed `key` and it passed; kept."""
        if self._previous["checked"].get(key) is not True:
            return False
        self._now["checked"][key] = True
        return True

    def put_checked(self, key: str) -> None:
        self._now["checked"][key] = True

    def models(self, key: str, header: str) -> ReusedModels | None:
        item = self._previous["models"].get(key)
        if item is None:
            return None
        try:
            found = _decode_models(item, header)
        except (KeyError, TypeError, ValueError, IndexError):
            return None  # a damaged entry is generated again
        self._now["models"][key] = item
        return found

    def put_models(self, key: str, header: str, models: GeneratedModels, digest: str,
                   diagnostics: Iterable[Diagnostic], chunks: Iterable[str]) -> None:
        codes = [*models.files.values(), *(module.code for module in models.modules)]
        if all(code.startswith(header) for code in codes):  # else nothing to swap safely: not kept
            self._now["models"][key] = _encode_models(models, header, digest, diagnostics, chunks)

    def pieces(self, context: str, tool_hash: Callable[[Tool], str]) -> PieceReuse:
        """The pieces of one tools.py; `context`: a digest of what every piece of it reads besides its stubs."""
        return PieceReuse(self._previous["pieces"], self._now["pieces"], context, tool_hash)

    def save(self) -> None:
        store.save(self._out_dir, KIND, store.Entry(_VERSION, self._now))


class PieceReuse:
    """`stub_functions.PieceCache` for one tools.py."""

    def __init__(self, previous: Mapping[str, Any], now: dict[str, Any], context: str,
                 tool_hash: Callable[[Tool], str]) -> None:
        self._previous, self._now, self._context, self._tool_hash = previous, now, context, tool_hash

    def _key(self, stubs: Sequence[Stub]) -> str:
        return _sha256([self._context, [[stub.name, stub.input_key, stub.output_key, self._tool_hash(stub.tool)]
                                        for stub in stubs]])

    def get(self, stubs: Sequence[Stub]) -> Piece | None:
        key = self._key(stubs)
        item = self._previous.get(key)
        if item is None:
            return None
        try:
            text, imports, uses_tool_result = item
            piece: Piece = (str(text), {str(alias): (str(origin[0]), str(origin[1]))
                                        for alias, origin in imports.items()}, bool(uses_tool_result))
        except (TypeError, ValueError, AttributeError, IndexError):
            return None
        self._now[key] = item
        return piece

    def put(self, stubs: Sequence[Stub], piece: Piece) -> None:
        text, imports, uses_tool_result = piece
        self._now[self._key(stubs)] = [text, {alias: list(origin) for alias, origin in imports.items()},
                                       uses_tool_result]


def _names(module: ModelsModule) -> dict[str, Any]:
    return {"fields": module.fields, "local_names": sorted(module.local_names), "module": module.module,
            "imports": {name: list(origin) for name, origin in module.imports.items()},
            "exported": sorted(module.exported), "stand_ins": [list(pair) for pair in module.stand_ins]}


def _encode_models(models: GeneratedModels, header: str, digest: str, diagnostics: Iterable[Diagnostic],
                   chunks: Iterable[str]) -> dict[str, Any]:
    # A file is mostly one module's code (`model_chunks._split_layout`): kept once, under the module, and named
    # by its index here (Microsoft Graph's models, 25 MB, were stored twice).
    index_of = {module.code: index for index, module in enumerate(models.modules)}
    return {"header": header, "digest": digest,
            "files": [[name, index_of.get(code, code)] for name, code in models.files.items()],
            "owner": dict(models.owner), "modules": [{**_names(module), "code": module.code} for module in models.modules],
            "diagnostics": [d.to_row() for d in diagnostics], "chunks": sorted(chunks)}


def _swap(code: Any, old: str, header: str) -> str:
    if not (isinstance(code, str) and code.startswith(old)):
        raise ValueError("a cached module without its header")
    return header + code[len(old):]


def _decode_models(item: Mapping[str, Any], header: str) -> ReusedModels:
    old, digest = item["header"], item["digest"]
    if not (isinstance(old, str) and isinstance(digest, str)):
        raise TypeError("a header and a digest are strings")
    modules = tuple(ModelsModule(
        code=_swap(module["code"], old, header), fields=module["fields"],
        local_names=frozenset(module["local_names"]), module=str(module["module"]),
        imports={str(name): (str(origin[0]), str(origin[1])) for name, origin in module["imports"].items()},
        exported=frozenset(module["exported"]), stand_ins=tuple((str(a), str(b)) for a, b in module["stand_ins"]))
        for module in item["modules"])
    owner = {str(key): int(index) for key, index in item["owner"].items()}
    if any(not 0 <= index < len(modules) for index in owner.values()):
        raise ValueError("a tool model owned by no module")
    files = {str(name): modules[code].code if type(code) is int and 0 <= code < len(modules) else _swap(code, old, header)
             for name, code in item["files"]}
    return ReusedModels(GeneratedModels(files=files, modules=modules, owner=owner), digest,
                        [Diagnostic.from_row(row) for row in item["diagnostics"]], [str(k) for k in item["chunks"]])


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict) and all(isinstance(payload.get(part, {}), dict) for part in _PARTS)
