"""Typed Python stubs: one package per source, every tool an `async` function that calls the router.

Layout (under `python/` in the output folder, next to the router's `toolc_router/`):

    <package>/__init__.py   re-exports every stub, `ToolCallError` and `ToolOutputError`
    <package>/tools.py      one `async def` per tool: keyword-only arguments mirroring the input schema
                            (required first, optional ones default to None), the description as docstring,
                            `context: InvocationContext | None = None` last; it builds the JSON-ready
                            `arguments` (keyed by the schema's property names) and awaits
                            `toolc_router.call_tool(tool_id, arguments, context=context)`. Returns the output
                            model when the tool declares an output schema (raising `ToolCallError` when the
                            call fails or has no structured content, and `ToolOutputError`, which carries
                            the raw answer, when the answer does not fit the model), else the router's
                            `ToolResult`.
    <package>/models.py     pydantic v2 models from datamodel-code-generator: `<Tool>Input`, `<Tool>Output`
                            and the source's shared definitions, generated once (`codegen.stubs.models`); output
                            models never stricter than their JSON Schema, inputs strict (`codegen.stubs.lenient`)
    <package>/_models_<i>.py  only for a big source (more than `model_chunks.CHUNK_WEIGHT` bytes of schema):
                            its models in independent chunks, generated in parallel processes; models.py then
                            re-exports every tool model and every name defined in only one chunk, and tools.py
                            spells the others through their chunk (`codegen.stubs.model_chunks`)
    <package>/py.typed

The argument building and result checking the stubs share is one module of the router package,
`toolc_router/stubs.py` (copied by `codegen.router.router_package`), not a copy per source package. tools.py imports it as
`_support` (the name `# toolc: keep` functions from older versions already use) and imports
`InvocationContext`/`ToolResult` from it at run time, not under `if TYPE_CHECKING:`: that block can hold
third-party imports from the models (pydantic), and ruff's isort would then order it differently depending on
whether it classifies `toolc_router` as first- or third-party (it does, by the folder ruff runs in). At the
top level `toolc_router` is the only import between the standard library and the package's own, so its
section is the same either way.

`<package>` is the source id in snake_case (`mcp-server-time` → `mcp_server_time`), with a trailing `_` when
that would shadow a standard-library module or a runtime dependency (a TC610 warning). A `pattern` pydantic
would refuse at import is dropped from the models first (TC611, `codegen.stubs.patterns`). Names, literals and docstrings follow
`codegen.stubs.identifiers` and `codegen.stubs.literals`; every module passes `literals.check_module` (compiles, nothing
runs on import; tools.py piece by piece, `codegen.stubs.stub_functions`) or the package is not emitted (TC603). Functions marked `# toolc: keep` in the previous
`tools.py` are carried over (`codegen.stubs.keep`). Output is deterministic: the provenance line carries a digest of
the input, never a time.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from compiler.build import Build
from compiler.codegen.env import render
from compiler.codegen.piece_format import Pieced, PiecedFiles
from compiler.codegen.stubs.bundling import SharedDefinitions
from compiler.codegen.stubs.chunk_reuse import ModelChunkCache
from compiler.codegen.stubs.identifiers import snake_name, unique_names
from compiler.codegen.stubs.keep_marker import has_keep_line
from compiler.codegen.stubs.lenient import SplitDirections
from compiler.codegen.stubs.literals import UnsafeModule, check_module, docstring_literal
from compiler.codegen.stubs.model_chunks import GeneratedModels, generate_models
from compiler.codegen.stubs.models import Combined, ModelGenerationError, ModelRequest, combine
from compiler.codegen.stubs.package_reuse import (
    StubReuse,
    checked_key,
    models_digest,
    models_key,
)
from compiler.codegen.stubs.stub_functions import Stub, functions
from compiler.codegen.stubs.stub_names import StubNames, make_names
from compiler.incremental.ir_hash import tool_hashes
from compiler.infra.diagnostics import CompilerError
from compiler.infra.serialize import compact_json
from compiler.ir import Source, Tool

MODELS_FAILED = "TC601"
MODEL_MISSING = "TC602"
UNSAFE_MODULE = "TC603"
NAME_COLLISION = "TC604"
FOREIGN_REF = "TC605"
KEPT_ORPHAN = "TC606"
KEEP_UNPARSABLE = "TC607"
BUNDLE_FAILED = "TC608"
SHADOWING_PACKAGE = "TC610"
BAD_PATTERN = "TC611"
NAME_CUT = "TC612"

RUNTIME_PACKAGES = frozenset({
    "toolc_router", "compiler", "pydantic", "pydantic_core", "pydantic_settings", "typing_extensions",
    "typing_inspection", "annotated_types", "mcp", "mcp_types", "httpx", "httpx2", "httpcore", "httpcore2", "h11",
    "anyio", "sniffio", "idna", "certifi", "jsonschema", "jsonschema_specifications", "referencing", "rpds",
    "attrs", "attr", "starlette", "sse_starlette", "uvicorn", "multipart", "python_multipart", "jwt", "dotenv",
    "opentelemetry", "yaml", "click", "truststore", "cryptography",
})
"""Import names the generated router runs on (its dependencies and theirs): a source package of the same name
next to `toolc_router/` would shadow it for every import."""
PACKAGE_RESERVED = frozenset({*sys.stdlib_module_names, *RUNTIME_PACKAGES})
_ALLOWED_CALLS = frozenset({"model_rebuild"})
"""Module-level calls allowed in generated code: pydantic's `Model.model_rebuild()` for recursive models."""
_NO_MODELS = GeneratedModels(files={}, modules=(), owner={})

GENERATOR = "compiler.codegen.stubs"
"""What the generated files name as their generator (the package, wherever its modules sit)."""


def package_names(sources: tuple[Source, ...]) -> dict[str, str]:
    names = unique_names([s.id for s in sources],
                         lambda raw: snake_name(raw, fallback="source", prefix="s", reserved=PACKAGE_RESERVED))
    return {source.id: names[source.id] for source in sources}


def function_names(tools: list[Tool], names: StubNames | None = None) -> Mapping[str, str]:
    """Tool name → its stub's function name within one source package (code mode names its functions alike);
    `names`: this compile's, made once (`stub_names`)."""
    tool_names = [t.name for t in tools]
    return (names.of(tool_names) if names is not None else make_names(tool_names)).functions


def source_tools(build: Build) -> dict[str, list[Tool]]:
    """Source id → its tools, in catalog order."""
    found: dict[str, list[Tool]] = {source.id: [] for source in build.catalog.sources}
    for tool in build.catalog.tools:
        if tool.source in found:
            found[tool.source].append(tool)
    return found


def generate_stubs(build: Build) -> dict[str, bytes]:
    """Every source package's files (the compile itself goes through `stub_files`, with its stub names)."""
    return stub_files(build).files


def stub_files(build: Build, names: StubNames | None = None) -> PiecedFiles:
    """Every source package's files, and which modules are pieces of functions. `names`: this compile's stub
    names (`stub_names`; made here when not given)."""
    packages = package_names(build.catalog.sources)
    for source in build.catalog.sources:
        plain = snake_name(source.id, fallback="source", prefix="s")
        if plain in PACKAGE_RESERVED and packages[source.id] != plain:
            what = "a module of the standard library" if plain in sys.stdlib_module_names else \
                "a package the generated router imports"
            build.diagnostics.report(SHADOWING_PACKAGE, f"package name {plain!r} would shadow {what}; the stubs "
                                     f"of this source are the package {packages[source.id]!r}",
                                     source=source.location or source.id)
    files: dict[str, bytes] = {}
    cache = ModelChunkCache(build.out_dir, build.diagnostics) if build.out_dir is not None else None
    reuse = StubReuse(build.out_dir, build.diagnostics) if build.out_dir is not None else None
    names = names if names is not None else StubNames(None, build.diagnostics)
    tools = source_tools(build)
    pieced: dict[str, Pieced] = {}
    for source in build.catalog.sources:
        package = SourcePackage(build, source, tools[source.id], packages[source.id], cache, reuse, names)
        files.update(package.generate())
        pieced.update(package.pieced)
    if cache is not None:
        cache.save()
    if reuse is not None:
        reuse.save()
    return PiecedFiles(files, pieced)


def input_digest(source: Source, tools: list[Tool]) -> str:
    """sha256 of the source's definitions and its tools' names, descriptions and schemas, encoded in one piece
    (one large buffer, given back whole when freed: per-schema pieces held ~90 MB of a cold Graph compile's peak
    in fragments the forked model workers then shared)."""
    data = {"source": source.id, "definitions": dict(source.definitions),
            "tools": [[t.id, t.name, t.title, t.description, t.input_schema, t.output_schema] for t in tools]}
    return hashlib.sha256(compact_json(data)).hexdigest()


def _settings(build: Build) -> str:
    """A digest of the project's settings (limits, resolver and codegen ones among them): part of every key."""
    return hashlib.sha256(compact_json(build.config.model_dump(mode="json", exclude={"root"}))).hexdigest()


def _tool_hash(build: Build) -> Callable[[Tool], str]:
    """Each tool's IR hash (every field and the definitions it reaches): the providers stage's when it ran."""
    hashes = build.ir_hashes if build.ir_hashes is not None else tool_hashes(build.catalog)
    return lambda tool: hashes[tool.id]


class SourcePackage:
    def __init__(self, build: Build, source: Source, tools: list[Tool], package: str,
                 cache: ModelChunkCache | None = None, reuse: StubReuse | None = None,
                 names: StubNames | None = None) -> None:
        self.build = build
        self.names = names if names is not None else StubNames(None, build.diagnostics)
        self.pieced: dict[str, Pieced] = {}
        """Path → the module as its head and pieces of functions, for `piece_format` (set by `generate`)."""
        self.cache = cache
        self.reuse = reuse
        self.source = source
        self.tools = tools
        self.package = package
        self.digest = input_digest(source, tools)
        self.location = source.location or source.id

    def generate(self) -> dict[str, bytes]:
        """The package's files; `pieced` is then its tools.py as head and pieces, unless it holds kept edits."""
        stubs = self.stubs()
        models, digest = self._models(stubs)
        try:
            pieces = self._tools_module(stubs, models, digest)  # checked as it is made, piece by piece
            generated = "".join(pieces)
            files = {"tools.py": generated}
            orphans = self._carry_over(files)
            if orphans is None:
                return {}
            files["__init__.py"] = self._init_module(stubs, orphans)
            for name, code in files.items():
                if name != "tools.py" or code != generated:  # tools.py again only with edits carried over
                    self._check(name, code)
        except UnsafeModule as exc:
            self.build.diagnostics.report(UNSAFE_MODULE, f"package {self.package} not emitted: {exc}",
                                          source=self.location)
            return {}
        if files["tools.py"] is generated:  # no `# toolc: keep` edit carried over
            self.pieced[f"{self.package}/tools.py"] = pieces
        files.update(models.files or {"models.py": self._empty_models()})  # checked in _models()
        # Every file ends with exactly one newline, whatever the generator or a carried-over edit left.
        out = {f"{self.package}/{name}": code.rstrip("\n").encode() + b"\n" for name, code in sorted(files.items())}
        out[f"{self.package}/py.typed"] = b""
        return out

    def _check(self, name: str, code: str) -> None:
        """`check_module`, unless the last compile checked the same module but for the source's digest."""
        key = checked_key(code, self.digest) if self.reuse is not None else ""
        if self.reuse is not None and self.reuse.checked(key):
            return
        check_module(code, filename=f"{self.package}/{name}", allow_calls=_ALLOWED_CALLS)
        if self.reuse is not None:
            self.reuse.put_checked(key)

    # -- names and schemas ------------------------------------------------------------------------------

    def stubs(self) -> list[Stub]:
        made = self.names.of(tool.name for tool in self.tools)
        stubs: list[Stub] = []
        for tool in self.tools:
            name = made.functions[tool.name]
            if tool.name in made.cut:
                self.build.diagnostics.report(NAME_CUT, f"stub name cut to {name} (the tool name is longer than "
                                              "limits.max_identifier_length)", tool=tool.id, source=self.location)
            elif tool.name in made.renamed:
                self.build.diagnostics.report(NAME_COLLISION, f"stub renamed to {name} (another tool's name sanitises alike)",
                                              tool=tool.id, source=self.location)
            key = made.classes[name]
            stubs.append(Stub(tool, name, f"{key}Input", f"{key}Output" if tool.output_schema is not None else None))
        return stubs

    def _request(self, key: str, tool: Tool, schema: Mapping[str, Any], pointer: str,
                 shared: SharedDefinitions, direction: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> ModelRequest:
        """The tool schema bundled, rewritten for its direction (`lenient.SplitDirections`), without the source's
        shared definitions (held once in `shared`)."""
        try:
            bundled = self.build.resolver.bundle(dict(schema), self.build.catalog.definitions_for(tool),
                                                 source=self.source.id, tool=tool.id)
        except CompilerError as exc:
            self.build.diagnostics.report(BUNDLE_FAILED, f"schema left untyped: {exc.diagnostic.message}",
                                          tool=tool.id, pointer=pointer, source=self.location)
            return ModelRequest(key, {"type": "object"}, tool.id, pointer)
        split = shared.split(direction(bundled), pointer)
        for bad in split.dropped:
            self.build.diagnostics.report(BAD_PATTERN, f"pattern {bad.pattern[:80]!r} would not compile when the "
                                          f"models are imported ({bad.reason}); dropped from the typed model",
                                          tool=tool.id, pointer=bad.pointer, source=self.location)
        return ModelRequest(key, split.schema, tool.id, pointer, introduces=split.introduces)

    def combined(self, stubs: list[Stub]) -> tuple[list[ModelRequest], Combined]:
        """Every tool model's request and the source's combined `$defs` table (`models.combine`)."""
        keys = {key for stub in stubs for key in (stub.input_key, stub.output_key) if key}
        directions = SplitDirections(self.source.definitions,
                                     (stub.tool.output_schema for stub in stubs if stub.output_key))
        shared = SharedDefinitions((frozenset(self.source.definitions) | directions.strict_names) - keys)
        requests: list[ModelRequest] = []
        for stub in stubs:
            requests.append(self._request(stub.input_key, stub.tool, stub.tool.input_schema, "/inputSchema", shared,
                                          directions.input))
            if stub.output_key and stub.tool.output_schema is not None:
                requests.append(self._request(stub.output_key, stub.tool, stub.tool.output_schema, "/outputSchema",
                                              shared, directions.output))
        return requests, combine(requests, shared.cleaned)

    def _models(self, stubs: list[Stub]) -> tuple[GeneratedModels, str]:
        """The models, from the last compile when it made them from the same schemas (`package_reuse`), and
        their `models_digest` (empty without a cache: nothing reads it)."""
        # Provenance kept under 88 columns (the formatter's width): the digest gets a line of its own.
        header = (f"# Pydantic models for package {self.package}: generated by {GENERATOR}\n"
                  f"# from input sha256:{self.digest}.")
        if self.reuse is None:
            return self._generate_models(stubs, header), ""
        key = models_key(self.source, self.package, self.location, stubs, _settings(self.build))
        found = self.reuse.models(key, header)
        if found is not None:
            self.build.diagnostics.extend(found.diagnostics)
            if self.cache is not None:
                self.cache.carry(found.chunks)
            return found.models, found.digest
        mark = len(self.build.diagnostics)
        chunks = self.cache.taken() if self.cache is not None else frozenset()
        models = self._generate_models(stubs, header)
        digest = models_digest(models)
        if models is not _NO_MODELS:  # a failure (a worker killed, say) is tried again next time
            made = self.cache.taken() - chunks if self.cache is not None else frozenset()
            self.reuse.put_models(key, header, models, digest, self.build.diagnostics.items[mark:], made)
        return models, digest

    def _generate_models(self, stubs: list[Stub], header: str) -> GeneratedModels:
        requests, combined = self.combined(stubs)
        if not requests:
            return _NO_MODELS
        for request, ref in combined.foreign_refs:
            self.build.diagnostics.report(FOREIGN_REF, f"non-local $ref {ref!r} typed as Any", tool=request.tool,
                                          pointer=request.pointer, source=self.location)
        try:
            models = generate_models(combined.schema["$defs"], [r.key for r in requests], package=self.package,
                                     header=header, allow_calls=_ALLOWED_CALLS, cache=self.cache)
        except (ModelGenerationError, UnsafeModule) as exc:
            self.build.diagnostics.report(MODELS_FAILED, f"no pydantic models for this source, stubs are untyped: {exc}",
                                          source=self.location)
            return _NO_MODELS
        for request in requests:
            if models.for_key(request.key) is None:
                self.build.diagnostics.report(MODEL_MISSING, f"no model {request.key} was generated; typed as Any",
                                              tool=request.tool, pointer=request.pointer, source=self.location)
        return models

    # -- modules ----------------------------------------------------------------------------------------

    def _docstring(self, what: str) -> str:
        text = (f"{what} the tools of source {self.source.id!r} (package {self.package}).\n\n"
                f"Generated by {GENERATOR} from input\nsha256:{self.digest}.\n"
                "Do not edit, except functions marked `# toolc: keep` in tools.py,\n"
                "which regeneration carries over.")
        return docstring_literal(text)

    def _empty_models(self) -> str:
        return f"{self._docstring('Pydantic models for')}\n\nfrom __future__ import annotations\n"

    def _tools_module(self, stubs: list[Stub], models: GeneratedModels, digest: str) -> list[str]:
        """tools.py as its head (docstring, imports) and its pieces of functions (`stub_functions`), checked as
        they are made. The template ends with the functions, so the module is the head followed by them.
        `digest`: the models' `models_digest`."""
        filename = f"{self.package}/tools.py"
        pieces = None
        if self.reuse is not None:
            context = compact_json([digest, filename, sorted(_ALLOWED_CALLS), _settings(self.build)])
            pieces = self.reuse.pieces(hashlib.sha256(context).hexdigest(), _tool_hash(self.build))
        made = functions(stubs, models, filename=filename, allow_calls=_ALLOWED_CALLS, cache=pieces)
        head = render("stubs/tools.py.jinja", docstring=self._docstring("Typed async stubs for"),
                      typing_imports=made.imports.lines(), uses_tool_result=made.uses_tool_result, functions="")
        check_module(head, filename=f"{self.package}/tools.py (docstring and imports)", allow_calls=_ALLOWED_CALLS)
        return [head, *made.pieces]

    def _carry_over(self, files: dict[str, str]) -> tuple[str, ...] | None:
        """Swap `# toolc: keep` functions from the previous tools.py into the new one (see `codegen.stubs.keep`).

        Returns the kept functions that have no tool any more, or None when the previous module cannot be read
        (an error: the compile fails and the user's file stays as it is)."""
        previous = self.build.previous_output.get(f"python/{self.package}/tools.py")
        if previous is None:
            return ()
        try:
            text = previous.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._report_unparsable(exc)
            return None
        if not has_keep_line(text):
            return ()
        # Deferred: libcst takes 0.3 s to import, and only a tools.py with a marker line needs it.
        import libcst

        from compiler.codegen.stubs.keep import kept_functions, merge_kept

        try:
            kept = kept_functions(text)
        except libcst.ParserSyntaxError as exc:
            self._report_unparsable(exc)
            return None
        merged = merge_kept(files["tools.py"], kept)
        files["tools.py"] = merged.code
        for name in merged.orphaned:
            self.build.diagnostics.report(KEPT_ORPHAN, f"kept function {name}() has no tool any more; it stays in "
                                          "tools.py until you delete it or its `# toolc: keep` marker",
                                          source=self.location)
        return merged.orphaned

    def _report_unparsable(self, exc: Exception) -> None:
        self.build.diagnostics.report(
            KEEP_UNPARSABLE, f"previous python/{self.package}/tools.py may hold `# toolc: keep` edits but does not "
            f"parse ({type(exc).__name__}); fix it or delete it", source=self.location)

    def _init_module(self, stubs: list[Stub], orphans: tuple[str, ...]) -> str:
        names = sorted([stub.name for stub in stubs] + list(orphans))
        return render("stubs/__init__.py.jinja", docstring=self._docstring("Typed stubs for"), names=names,
                      all_names=sorted([*names, "ToolCallError", "ToolOutputError"]))

