"""The functions of a source's `tools.py`, one `async def` per tool (`templates/stubs/tool_function.py.jinja`),
rendered and checked in pieces of `PIECE` functions.

Checking the module whole (`literals.check_module`: parse, compile, inspect the top level) held the syntax tree
of every function at once: Microsoft Graph's 11,422 stubs are 22 MB of code and 900 MB of tree, the compile's
peak. A piece is checked as a module of its own (`from __future__ import annotations` and its functions) and
its tree dropped; since every piece is whole top-level statements, the module they make passes when every
piece does. For a big source the pieces are spread over processes (forked: they read the models and stubs
from this process's memory; only the text comes back), and merged in order: the bytes never depend on it.

A function's text depends only on its tool and the models (names, fields); the imports it needs are merged in
tool order, as one pass over the tools would collect them.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from compiler.codegen.env import render
from compiler.codegen.stubs.literals import check_module, docstring_literal
from compiler.codegen.stubs.model_chunks import GeneratedModels
from compiler.codegen.stubs.models import ModelsModule
from compiler.codegen.stubs.signatures import Imports, Param, parameters
from compiler.infra import limits
from compiler.infra.parallel import can_fork, cores, start_context
from compiler.ir import Tool

PIECE = 64
"""Functions per checked piece: about 0.13 MB of code and 5 MB of syntax tree. A piece is also what a recompile
renders again when one of its tools changed (`package_reuse`): 256 made one changed description render and
check 255 unchanged functions (Microsoft Graph: 0.25 s); at 64 a compile from nothing checks four times as many
pieces, each a little module (the same code in all)."""
PARALLEL_MIN_STUBS = 2000
"""From this many stubs the pieces are rendered in worker processes (below, a fork costs more than it saves)."""
_EMPTY_MODELS = ModelsModule(code="", fields={}, local_names=frozenset(), imports={})

Piece = tuple[str, dict[str, tuple[str, str]], bool]
"""One piece's text, the imports its annotations need (alias → module, name) and whether it returns ToolResult."""


@dataclass(frozen=True)
class Stub:
    tool: Tool
    name: str
    input_key: str
    output_key: str | None


@dataclass(frozen=True)
class Functions:
    pieces: tuple[str, ...]
    """Every function, each preceded by the two blank lines that separate top-level definitions, `PIECE` at a
    time (`piece_format` formats them so)."""
    imports: Imports
    """What their annotations need (`from typing import Any as _Any`, …), for the module's TYPE_CHECKING block."""
    uses_tool_result: bool
    """Whether some stub returns the router's `ToolResult` (a tool without an output model)."""


@dataclass(frozen=True)
class _Job:
    stubs: Sequence[Stub]
    models: GeneratedModels
    filename: str
    allow_calls: frozenset[str]


class PieceCache(Protocol):
    """The pieces of the last compile (`package_reuse.PieceReuse`), each by what it is made from."""

    def get(self, stubs: Sequence[Stub]) -> Piece | None: ...

    def put(self, stubs: Sequence[Stub], piece: Piece) -> None: ...


_forked: _Job | None = None
"""What a forked worker reads (inherited from the parent's memory, never pickled)."""


def functions(stubs: Sequence[Stub], models: GeneratedModels, *, filename: str, allow_calls: frozenset[str],
              cache: PieceCache | None = None) -> Functions:
    """The rendered and checked functions of `stubs`, each piece from `cache` when it has it (checked when it
    was made). Raises `literals.UnsafeModule` for a piece that fails."""
    job = _Job(stubs, models, filename, allow_calls)
    starts = range(0, len(stubs), PIECE)
    found = {start: piece for start in starts
             if cache is not None and (piece := cache.get(stubs[start:start + PIECE])) is not None}
    missing = [start for start in starts if start not in found]
    for start, piece in zip(missing, _render(job, missing), strict=True):
        found[start] = piece
        if cache is not None:
            cache.put(stubs[start:start + PIECE], piece)
    pieces = [found[start] for start in starts]
    imports = Imports()
    for piece in pieces:
        imports.needed.update(piece[1])
    return Functions(tuple(piece[0] for piece in pieces), imports, any(piece[2] for piece in pieces))


def _render(job: _Job, starts: Sequence[int]) -> list[Piece]:
    """The pieces from `starts`, in order, in worker processes when there are many stubs to render."""
    global _forked
    workers = min(cores(), len(starts))
    count = sum(len(job.stubs[start:start + PIECE]) for start in starts)
    if workers <= 1 or count < PARALLEL_MIN_STUBS or not can_fork():
        return [_piece(job, start) for start in starts]
    _forked = job
    gc.freeze()  # what the workers read stays out of their collections, so its pages stay shared
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=start_context(),
                                 initializer=limits.cap_worker, initargs=(limits.worker_budget(),)) as pool:
            return list(pool.map(_forked_piece, starts))
    except BrokenProcessPool as exc:  # a worker was killed: the kernel's answer to memory running out
        raise MemoryError(f"a stub worker process died: {exc}") from exc
    finally:
        _forked = None


def _forked_piece(start: int) -> Piece:
    assert _forked is not None, "a piece worker runs forked from functions()"
    return _piece(_forked, start)


def _piece(job: _Job, start: int) -> Piece:
    """(text, imports needed, uses ToolResult) of the stubs from `start`, checked as a module of their own."""
    stubs = job.stubs[start:start + PIECE]
    imports = Imports()
    fns = [_function(stub, job.models, imports) for stub in stubs]
    text = "".join(f"\n\n{render('stubs/tool_function.py.jinja', fn=fn)}" for fn in fns)
    check_module(f"from __future__ import annotations\n{text}",
                 filename=f"{job.filename} (stubs {start + 1} to {start + len(stubs)})", allow_calls=job.allow_calls)
    return text, imports.needed, any(not fn["output_model"] for fn in fns)


def _function(stub: Stub, models: GeneratedModels, imports: Imports) -> dict[str, Any]:
    module = models.for_key(stub.input_key)
    fields = module.fields[stub.input_key] if module is not None else None
    params = parameters(stub.tool.input_schema, fields, module or _EMPTY_MODELS, imports)
    output = stub.output_key if models.for_key(stub.output_key) is not None else None
    return {
        "name": stub.name,
        "tool_id": stub.tool.id,
        "params": params,
        "docstring": docstring_literal(_function_doc(stub.tool, params), indent="    "),
        "input_model": f"_models.{stub.input_key}" if fields is not None else "None",
        "output_model": f"_models.{output}" if output else "",
        "returns": f"_models.{output}" if output else "ToolResult",
    }


def _function_doc(tool: Tool, params: list[Param]) -> str:
    text = tool.description.strip() or tool.title or f"Call the tool {tool.name!r}."
    lines = [text, "", f"Tool id: {tool.id}"]
    if params:
        lines += ["", "Args:"]
        for param in params:
            note = f" (sent as {param.wire!r})" if param.wire != param.name else ""
            body = param.description.strip().replace("\n", "\n        ")
            lines.append(f"    {param.name}{note}: {body}".rstrip())
    return "\n".join(lines)
