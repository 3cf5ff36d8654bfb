"""Per chunk of generated models: datamodel-code-generator's work of the last compile, reused when the chunk's
job is the same (its schema, layout and settings; `codegen.model_chunks._Job`).

Generating models is most of code generation's time (GitHub: 52 of 61 s in one process), and a chunk's output
depends only on its job and toolc (whose identity the store's envelope carries). The job's header is the one
part that names the whole source (`# from input sha256:…`, which any change to any tool changes): it is left out
of the key, and a hit gets this compile's header in place of the one it was generated with. A module whose code
does not begin with its header is not kept (nothing to swap safely).

One file per output folder (`.toolc-cache/<output>.models.json`), holding only this compile's chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from compiler.codegen.stubs.models import ModelsModule
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics

KIND = "models"
_VERSION = "1"


class ModelChunkCache:
    """Read only when a chunk is looked up: a compile that reuses every source's models whole (`package_reuse`)
    only carries their chunks, which the file already holds, so it neither decodes nor writes it again (Microsoft
    Graph's is 25 MB)."""

    def __init__(self, out_dir: Path, diagnostics: Diagnostics) -> None:
        self._out_dir, self._diagnostics = out_dir, diagnostics
        self._loaded: dict[str, Any] | None = None
        self._now: dict[str, Any] = {}
        self._carried: set[str] = set()
        """Keys carried before the file was read: taken from it when it is."""

    def _previous(self) -> dict[str, Any]:
        if self._loaded is None:
            entry = store.load(self._out_dir, KIND, self._diagnostics, _well_formed)
            self._loaded = entry.payload if entry is not None and entry.key == _VERSION else {}
            self._carry(self._carried)
        return self._loaded

    def get(self, key: str, header: str) -> ModelsModule | None:
        item = self._previous().get(key)
        if item is None:
            return None
        try:
            module = _decode(item, header)
        except (KeyError, TypeError, ValueError):
            return None  # a damaged entry is generated again
        self._now[key] = item
        return module

    def put(self, key: str, header: str, module: ModelsModule) -> None:
        self._previous()  # what was carried so far is saved with it
        if module.code.startswith(header):
            self._now[key] = _encode(module, header)

    def taken(self) -> frozenset[str]:
        """The keys of the chunks this compile has used so far."""
        return frozenset(self._now) | frozenset(self._carried)

    def carry(self, keys: Iterable[str]) -> None:
        """Keep the last compile's chunks of `keys` for the next one (their models were reused whole)."""
        self._carried.update(keys)
        if self._loaded is not None:
            self._carry(keys)

    def _carry(self, keys: Iterable[str]) -> None:
        assert self._loaded is not None
        for key in keys:
            if key in self._loaded:
                self._now[key] = self._loaded[key]

    def save(self) -> None:
        if self._loaded is None:  # nothing looked up nor made: the file holds every chunk carried already
            return
        store.save(self._out_dir, KIND, store.Entry(_VERSION, self._now))


def _encode(module: ModelsModule, header: str) -> dict[str, Any]:
    return {"header": header, "code": module.code, "fields": module.fields, "local_names": sorted(module.local_names),
            "imports": {name: list(origin) for name, origin in module.imports.items()}, "module": module.module,
            "exported": sorted(module.exported), "stand_ins": [list(pair) for pair in module.stand_ins]}


def _decode(item: Any, header: str) -> ModelsModule:
    old, code = item["header"], item["code"]
    if not (isinstance(old, str) and isinstance(code, str) and code.startswith(old)):
        raise ValueError("a cached module without its header")
    return ModelsModule(code=header + code[len(old):], fields=item["fields"], local_names=frozenset(item["local_names"]),
                        imports={str(name): (str(origin[0]), str(origin[1])) for name, origin in item["imports"].items()},
                        module=str(item["module"]), exported=frozenset(item["exported"]),
                        stand_ins=tuple((str(a), str(b)) for a, b in item["stand_ins"]))


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict) and all(isinstance(item, dict) for item in payload.values())
