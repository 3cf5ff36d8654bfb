"""datamodel-code-generator over one source's combined schema: duplicate tool models folded, big sources split
into independent chunks that run in parallel processes.

The generator is single-threaded and its time grows faster than the number of definitions (GitHub: 2,747
definitions took ~21 s in one run; folded and split into chunks, the same work takes about 12 s serially, and
about half of that on two cores). So:

1. A tool model (`<Tool>Input`/`<Tool>Output`) whose schema is the same JSON as an earlier tool model's (by
   name), and that nothing refers to, is not generated again: its chunk gets a copy of the canonical model's
   class under the duplicate's name (a copy, not `class Dup(Canonical): pass` as the generator's
   `reuse_model` writes: one tool's model never inherits from another's) (GitHub: 972 of 2,747 definitions).
2. The other definitions are grouped into connected components of the `$ref` graph, and the components are
   packed into ceil(total / CHUNK_WEIGHT) chunks by bytes of schema JSON (largest first, into the lightest
   chunk, ties by name). No `$ref` crosses a chunk, so each chunk is a self-contained generator run. The split
   depends only on the schema, never on the machine: the output is the same bytes whatever the number of cores.
3. Chunks run in a process pool (one process per core, at most one per chunk; in this process when there is
   one chunk or one core), largest first; results are taken in chunk order. Each worker also checks and reads
   back its module (`check_module`, `analyse`), so that work is parallel too.

Layout: a source with one chunk has everything in `models.py`. A split source has one `_models_<i>.py` per
chunk (`i` zero-padded to the same width) and a `models.py` that re-exports every tool model and every other
name defined in exactly one chunk, plus the chunk modules themselves. Inline models get names per generator
run (`Body12`), so one name can mean different classes in two chunks; tools.py spells those through their
chunk (`_models._models_3.Body12`).

Where the time goes (Microsoft Graph: 57 chunks, 11.5 MB of schema JSON, 15,357 classes; CPU seconds, each
chunk's `_run` in one process, 2026-11-25): the generator 53.1 (4.5 µs per byte; its builtin formatter 4.6 of
that), checking and reading back 5.6, the 16 leaf chunks' rewrites 1.8 (each leaf was checked twice then; now
once, about 0.7 s less). The generator's own split (cProfile): parsing the schema into models ~45%, computing
each model's imports (twice: once to make class names unique, once to render) ~30%, rendering ~10%, formatting
~8%. The stand-ins are 4,712 of the classes (~2.8 s); a cheaper stand-in (an empty object: half the cost) has
no mark of its own to be found by, since the generator names its class from the definition's name
(`microsoft.graph.user`).
"""

from __future__ import annotations

import ast
import gc
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any

from compiler.codegen.stubs.chunk_reuse import ModelChunkCache
from compiler.codegen.stubs.identifiers import is_safe_identifier
from compiler.codegen.stubs.literals import check_module, parse_module
from compiler.codegen.stubs.models import (
    ModelGenerationError,
    ModelsModule,
    analyse,
    ascii_fields,
    long_field_aliases,
    ref_target,
    run_datamodel_codegen,
    split_source_lines,
)
from compiler.infra import limits
from compiler.infra.collector import collector_paused
from compiler.infra.parallel import cores, start_context
from compiler.infra.serialize import compact_json

SPLIT_WEIGHT = 1_000_000
"""A chunk heavier than this (one big strongly-linked component: Microsoft Graph's entity types, 5 MB) is run
as its shared definitions plus leaf chunks that import them (`_split_big`). Far above any chunk of the default
project, whose layout therefore does not change."""

CHUNK_WEIGHT = 250_000
"""Bytes of compact schema JSON per chunk. Part of the output's definition (it decides the module layout), so
changing it changes generated code; GitHub's 1.47 MB (after folding) gives 6 chunks."""

_REF = re.compile(r'"\$ref":"((?:[^"\\]|\\.)*)"')
"""A `$ref` in compact JSON text. Also matches `$ref`-shaped data inside `examples` or `const`, which can
only merge two components that could have been apart (never split ones that must stay together)."""


@dataclass(frozen=True)
class _Job:
    filename: str
    module: str
    """`_models_<i>` for a chunk of a split source, empty for `models.py`."""
    schema: dict[str, Any]
    header: str
    copies: tuple[tuple[str, str], ...]
    """(folded duplicate, its canonical model) pairs whose canonical model is in this chunk."""
    allow_calls: frozenset[str]
    weight: int
    aliases: tuple[tuple[str, str], ...] = ()
    """(property name, field name) for names too long to be fields as they are (`models.long_field_aliases`)."""
    base: str = ""
    """For a leaf chunk of a big component: the module of its shared definitions, whose stand-ins it holds."""
    stand_ins: tuple[str, ...] = ()
    """The shared definitions this leaf chunk refers to, in stand-in order (`_stand_in`)."""


@dataclass(frozen=True)
class GeneratedModels:
    files: Mapping[str, str]
    """Module file name in the package (`models.py`, `_models_0.py`, …) → code."""
    modules: tuple[ModelsModule, ...]
    owner: Mapping[str, int]
    """Tool model key → index in `modules` of the module that defines it."""

    def for_key(self, key: str | None) -> ModelsModule | None:
        """The module whose class `key` was generated, or None when there is none."""
        index = self.owner.get(key) if key is not None else None
        module = self.modules[index] if index is not None else None
        return module if module is not None and key in module.fields else None


def _ref_name(encoded: str) -> str | None:
    target = ref_target(json.loads(f'"{encoded}"'))
    return target[0] if target else None


def _fold(table: Mapping[str, Any], keys: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(compact JSON of each definition still to generate, folded duplicate → its canonical model)."""
    texts = {name: json.dumps(schema, separators=(",", ":"), ensure_ascii=False) for name, schema in table.items()}
    referenced = {name for text in texts.values() for raw in _REF.findall(text) if (name := _ref_name(raw))}
    canonical: dict[str, str] = {}
    folded: dict[str, str] = {}
    for key in sorted(set(keys)):
        if key in texts and key not in referenced:
            first = canonical.setdefault(texts[key], key)
            if first != key:
                folded[key] = first
    return {name: text for name, text in texts.items() if name not in folded}, folded


def _components(texts: Mapping[str, str]) -> list[list[str]]:
    """Connected components of the `$ref` graph (edges either way), each sorted, in no particular order."""
    parent = {name: name for name in texts}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for name, text in texts.items():
        for raw in _REF.findall(text):
            target = _ref_name(raw)
            if target in parent:
                parent[find(name)] = find(target)
    groups: dict[str, list[str]] = {}
    for name in sorted(texts):
        groups.setdefault(find(name), []).append(name)
    return list(groups.values())


def _chunks(texts: Mapping[str, str]) -> list[list[str]]:
    weight = {name: len(text) for name, text in texts.items()}
    components = sorted(_components(texts), key=lambda c: (-sum(weight[n] for n in c), c[0]))
    count = max(1, min(len(components), math.ceil(sum(weight.values()) / CHUNK_WEIGHT)))
    chunks: list[list[str]] = [[] for _ in range(count)]
    loads = [0] * count
    for component in components:
        lightest = loads.index(min(loads))
        chunks[lightest].extend(component)
        loads[lightest] += sum(weight[n] for n in component)
    return [sorted(chunk) for chunk in chunks if chunk]


def _run(job: _Job) -> ModelsModule:
    """One chunk, start to finish: generate, check, read back, then add the folded duplicates.

    Each folded duplicate is a copy of its canonical model's class under its own name (never a subclass: one
    tool's model does not inherit from another's), written here from two names that are safe identifiers
    (checked), with the canonical one a class of the checked module and the duplicate not yet defined in it;
    otherwise the duplicate gets no model (the stubs report TC602 and type it as Any)."""
    with collector_paused(collect_after=True):  # its cyclic garbage collected once, when it is done
        generated = run_datamodel_codegen(job.schema, header=job.header, aliases=dict(job.aliases))
    code = ascii_fields(generated)
    if job.base:  # a leaf chunk: only its rewrite is emitted, and `_swap_stand_ins` checks that
        read = parse_module(code, filename=job.filename)
        models, tree = _swap_stand_ins(analyse(code, read, module=job.module), read, job)
        code = models.code
    else:
        tree = check_module(code, filename=job.filename, allow_calls=job.allow_calls)
        models = analyse(code, tree, module=job.module)
    classes = {statement.name: statement for statement in tree.body if isinstance(statement, ast.ClassDef)}
    lines = split_source_lines(code)
    copies = {dup: copy for dup, canon in job.copies
              if canon in classes and dup not in models.local_names and is_safe_identifier(dup)
              and (copy := _renamed_class(lines, classes[canon], dup)) is not None}
    pairs = [(dup, canon) for dup, canon in job.copies if dup in copies]
    if not pairs:
        return models
    code = code.rstrip("\n") + "\n" + "".join(f"\n\n{copies[dup]}" for dup, _ in pairs)
    fields = {**models.fields, **{dup: models.fields[canon] for dup, canon in pairs}}
    return replace(models, code=code, fields=fields, local_names=models.local_names | {dup for dup, _ in pairs})


def _renamed_class(lines: Sequence[str], node: ast.ClassDef, name: str) -> str | None:
    """The source of class `node` with its name changed to `name` (the body never names the class itself: a model
    something refers to is never folded); None for a class not written as generated models are."""
    head = lines[node.lineno - 1]
    keyword = f"class {node.name}"
    if node.decorator_list or not head.startswith(keyword) or head[len(keyword)] not in "(:":
        return None
    body = lines[node.lineno:node.end_lineno or node.lineno]
    return "".join([f"class {name}{head[len(keyword):]}", *body]).rstrip("\n") + "\n"


_WARM_UP = {"$defs": {"Warm": {"type": "object", "properties": {"kind": {"enum": ["a"]}}, "required": ["kind"]}}}


def _warm_up() -> None:
    """Load the generator here, once, for the forked workers to share: importing it and the modules its first
    run loads lazily takes ~1 s, which each worker would otherwise pay. The same wall time on idle cores, one
    second of CPU less per worker on a loaded machine."""
    run_datamodel_codegen(_WARM_UP, header="# warm-up")


def _job_key(job: _Job) -> str:
    """Everything a chunk's generation reads but its header (`chunk_reuse`)."""
    data = {"filename": job.filename, "module": job.module, "schema": job.schema, "copies": job.copies,
            "allow_calls": sorted(job.allow_calls), "aliases": job.aliases, "base": job.base,
            "stand_ins": job.stand_ins}
    return hashlib.sha256(compact_json(data)).hexdigest()


def _run_all(jobs: Sequence[_Job], cache: ModelChunkCache | None = None) -> list[ModelsModule]:
    """Every chunk's module, in job order: from `cache` where it has the same job, generated otherwise."""
    if cache is None:
        return _generate_all(jobs)
    keys = [_job_key(job) for job in jobs]
    found = {i: module for i, job in enumerate(jobs) if (module := cache.get(keys[i], job.header)) is not None}
    missing = [i for i in range(len(jobs)) if i not in found]
    for i, module in zip(missing, _generate_all([jobs[i] for i in missing]), strict=True):
        cache.put(keys[i], jobs[i].header, module)
        found[i] = module
    return [found[i] for i in range(len(jobs))]


def _generate_all(jobs: Sequence[_Job]) -> list[ModelsModule]:
    if not jobs:
        return []
    workers = min(len(jobs), cores())
    if workers <= 1:
        return [_run(job) for job in jobs]
    context = start_context()
    if context.get_start_method() == "fork":
        _warm_up()
        # Everything built so far out of the cyclic GC's generations (the pipeline unfreezes at the end of the
        # compile): a forked worker's collections would otherwise write to each such object's header and so copy
        # the parent's pages (Microsoft Graph: the providers' and router's data, about 1 GB of copies).
        gc.freeze()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=limits.cap_worker,
                               initargs=(limits.worker_budget(),))
    try:
        futures = {i: pool.submit(_run, jobs[i]) for i in sorted(range(len(jobs)), key=lambda i: -jobs[i].weight)}
        return [futures[i].result() for i in range(len(jobs))]
    except BrokenProcessPool as exc:  # a worker died (out of memory, killed): no models rather than no build
        raise ModelGenerationError(f"a model generator process died: {exc}") from exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _facade(header: str, modules: Sequence[ModelsModule], exported: Sequence[Sequence[str]]) -> str:
    """`from . import <chunks>`, the chunks in `__all__` (so mypy --strict lets tools.py write
    `_models._models_3.Body12`), then `Name = _models_3.Name` per re-exported name. Assignments rather than
    `from ._models_3 import Name as Name`: ruff's defaults flag the redundant alias and want import lists in
    its own name order."""
    chunks = [module.module for module in modules]
    lines = [header, "", "from __future__ import annotations", "", "from . import (", *(f"    {c}," for c in chunks),
             ")", "", "__all__ = [", *(f"    {c!r}," for c in chunks), "]", ""]
    pairs = sorted((name, module.module) for module, names in zip(modules, exported, strict=True) for name in names)
    lines += [f"{name} = {chunk}.{name}" for name, chunk in pairs]
    return "\n".join(lines) + "\n"


class _StandInMismatch(Exception):
    """A leaf chunk's stand-in did not line up with a class of its shared module: generate the chunk whole."""


def _stand_in(index: int) -> dict[str, Any]:
    """A distinct, trivially cheap class standing for a shared definition in a leaf chunk: its one field names
    it (distinct, so that `reuse_model` does not fold stand-ins into each other)."""
    field = f"toolc_stand_in_{index}"
    return {"type": "object", "properties": {field: {"type": "integer"}}, "required": [field]}


def _split_big(chunk: list[str], texts: Mapping[str, str]) -> list[list[str]] | None:
    """[shared definitions, leaf chunk, …] for a chunk above SPLIT_WEIGHT, else None.

    Shared = every name something in the chunk refers to (closed under `$ref` by construction); the leaves
    (tool models nothing refers to) are packed by weight like `_chunks`, in name order."""
    if sum(len(texts[n]) for n in chunk) <= SPLIT_WEIGHT:
        return None
    members = set(chunk)
    shared = sorted({t for n in chunk for raw in _REF.findall(texts[n]) if (t := _ref_name(raw)) in members})
    leaves = [n for n in chunk if n not in set(shared)]
    if not shared or not leaves:
        return None
    count = math.ceil(sum(len(texts[n]) for n in leaves) / CHUNK_WEIGHT)
    groups: list[list[str]] = [[] for _ in range(count)]
    loads = [0] * count
    for name in sorted(leaves, key=lambda n: (-len(texts[n]), n)):
        lightest = loads.index(min(loads))
        groups[lightest].append(name)
        loads[lightest] += len(texts[name])
    return [shared, *(sorted(group) for group in groups if group)]


def generate_models(table: Mapping[str, Any], keys: Sequence[str], *, package: str, header: str,
                    allow_calls: frozenset[str], split_big: bool = True,
                    cache: ModelChunkCache | None = None) -> GeneratedModels:
    """Models for a combined `$defs` table (`models.combine`) whose tool models are named by `keys`; `cache`
    gives back the chunks whose job the last compile generated (`chunk_reuse`).

    Raises ModelGenerationError or UnsafeModule (from any chunk: a source gets all its models or none)."""
    texts, folded = _fold(table, keys)
    chunks: list[list[str]] = []
    bases: list[int | None] = []  # per chunk: index of the shared-definitions chunk a leaf chunk imports
    for chunk in _chunks(texts):
        parts = _split_big(chunk, texts) if split_big else None
        if parts is None:
            chunks.append(chunk)
            bases.append(None)
            continue
        base_index = len(chunks)
        chunks.extend(parts)
        bases.extend([None] + [base_index] * (len(parts) - 1))
    split = len(chunks) > 1
    width = len(str(len(chunks) - 1))  # `_models_03`: name order and ruff's natural order agree
    home = {name: index for index, chunk in enumerate(chunks) for name in chunk}
    jobs = []
    for index, chunk in enumerate(chunks):
        module = f"_models_{index:0{width}d}" if split else ""
        copies = tuple(sorted((dup, canon) for dup, canon in folded.items() if home.get(canon) == index))
        defs = {name: table[name] for name in chunk}
        base = bases[index]
        wanted: list[str] = []
        if base is not None:
            wanted = sorted({t for n in chunk for raw in _REF.findall(texts[n]) if (t := _ref_name(raw)) in home
                             and home[t] == base})
            defs.update({name: _stand_in(i) for i, name in enumerate(wanted)})
        schema = {"$defs": defs}
        jobs.append(_Job(
            filename=f"{package}/{module or 'models'}.py", module=module, schema=schema,
            aliases=tuple(sorted(long_field_aliases(schema).items())),
            header=header if not split else f"{header}\n# Chunk {index} of {len(chunks)}; models.py re-exports it.",
            copies=copies, allow_calls=allow_calls, weight=sum(len(texts[n]) for n in chunk),
            base=f"_models_{base:0{width}d}" if base is not None else "", stand_ins=tuple(wanted)))
    try:
        modules = _run_all(jobs, cache)
        for i, job in enumerate(jobs):
            if job.base:
                _check_stand_ins(modules[i], job, modules[bases[i] or 0], table)
    except _StandInMismatch:
        return generate_models(table, keys, package=package, header=header, allow_calls=allow_calls,
                               split_big=False, cache=cache)
    owner = {key: home[folded.get(key, key)] for key in keys if folded.get(key, key) in home}
    if not split:
        return GeneratedModels(files={"models.py": modules[0].code}, modules=tuple(modules), owner=owner)
    return _split_layout(modules, owner, header=header, package=package, allow_calls=allow_calls,
                         aliased={i: _aliased(modules[i]) for i, job in enumerate(jobs) if job.base})


_ALIAS_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) = (_models_[0-9]+)\.\1$", re.MULTILINE)


def _aliased(module: ModelsModule) -> frozenset[str]:
    """The names a leaf chunk takes from its shared module (`Name = _models_0.Name`)."""
    return frozenset(match.group(1) for match in _ALIAS_LINE.finditer(module.code))


def _swap_stand_ins(leaf: ModelsModule, tree: ast.Module, job: _Job) -> tuple[ModelsModule, ast.Module]:
    """The leaf chunk (and its tree) with its stand-in classes replaced by the shared module's classes
    (`Name = _models_0.Name`), in the worker that generated it. Each stand-in is found by its one field;
    `_check_stand_ins` then checks them against the shared module. A stand-in that does not line up:
    _StandInMismatch. `tree` is the generated leaf's, only parsed: the rewrite is what `check_module` gates."""
    by_field = {f"toolc_stand_in_{i}": name for i, name in enumerate(job.stand_ins)}
    stand_ins: dict[str, str] = {}  # class name → shared definition
    for cls, fields in leaf.fields.items():
        if len(fields) == 1 and (only := next(iter(fields))) in by_field:
            stand_ins[cls] = by_field[only]
    if len(stand_ins) != len(by_field) or len(set(stand_ins.values())) != len(by_field):
        raise _StandInMismatch(job.filename)
    lines = leaf.code.split("\n")
    drop: set[int] = set()
    last_import = 0
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            last_import = statement.end_lineno or statement.lineno
        if isinstance(statement, ast.ClassDef) and statement.name in stand_ins:
            first = min([statement.lineno, *(d.lineno for d in statement.decorator_list)]) - 1
            while first > 0 and not lines[first - 1].strip():  # the blank lines before it go too
                first -= 1
            drop.update(range(first, statement.end_lineno or statement.lineno))
    if not last_import:
        raise _StandInMismatch(job.filename)
    head = [*lines[:last_import], "", f"from . import {job.base}", "",
            *(f"{cls} = {job.base}.{cls}" for cls in sorted(stand_ins))]
    code = "\n".join(head + [line for i, line in enumerate(lines) if i >= last_import and i not in drop])
    checked = check_module(code, filename=job.filename, allow_calls=job.allow_calls)
    swapped = analyse(code, checked, module=job.module)
    return replace(swapped, stand_ins=tuple(sorted(stand_ins.items()))), checked


def _check_stand_ins(leaf: ModelsModule, job: _Job, base: ModelsModule, table: Mapping[str, Any]) -> None:
    """Each stand-in's shared class must exist in the shared module and, for an object definition, have at
    least the definition's properties. Otherwise _StandInMismatch."""
    for cls, name in leaf.stand_ins:
        properties = table[name].get("properties") if isinstance(table[name], dict) else None
        if cls not in base.local_names or (isinstance(properties, dict)
                                           and not set(properties) <= set(base.fields.get(cls, {}))):
            raise _StandInMismatch(job.filename)


def _split_layout(modules: Sequence[ModelsModule], owner: Mapping[str, int], *, header: str, package: str,
                  allow_calls: frozenset[str], aliased: Mapping[int, frozenset[str]]) -> GeneratedModels:
    """`aliased`: per leaf chunk, the shared names it only takes from its shared module (not counted as
    definitions, so that models.py re-exports them from there)."""
    defined: dict[str, int] = {}
    for index, module in enumerate(modules):
        for name in module.local_names - aliased.get(index, frozenset()):
            defined[name] = defined.get(name, 0) + 1
    exported: list[list[str]] = []
    homes: dict[int, set[str]] = {}
    for key, home in owner.items():
        homes.setdefault(home, set()).add(key)
    for index, module in enumerate(modules):
        tool_models = homes.get(index, set()) & module.local_names
        own = module.local_names - aliased.get(index, frozenset())
        unique = {name for name in own  # never `_…` (chunk modules, `__all__`) or `annotations`
                  if defined[name] == 1 and name not in owner and not name.startswith("_") and name != "annotations"}
        exported.append(sorted(tool_models | unique))
    modules = [replace(module, exported=frozenset(names)) for module, names in zip(modules, exported, strict=True)]
    facade = _facade(header, modules, exported)
    check_module(facade, filename=f"{package}/models.py", allow_calls=allow_calls)
    files = {"models.py": facade, **{f"{module.module}.py": module.code for module in modules}}
    return GeneratedModels(files=files, modules=tuple(modules), owner=owner)
