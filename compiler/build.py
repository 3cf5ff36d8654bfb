"""What one compile hands from stage to stage: typed values, each set by the stage that makes it.

    Build.catalog      the IR (sources stage)
    Build.providers    {target: TargetOutput}: lowered definitions and name map per target (providers stage)
    Build.fit          {target: FitOutput}: token counts, toolsets and forms per target (fit stage)
    Build.codegen      CodegenRecord: what code generation wrote, for the cache beside the output (codegen stage)
    Build.lock         LockData: the hashes `toolc.lock` holds (the last stage; `toolc check` compares them)
    Build.files        every output file, by path relative to the output folder
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict

from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.output import FileSet
from compiler.infra.progress import Progress
from compiler.ir import Catalog, JsonObject, Tool
from compiler.refs import RefResolver


class LockEntry(TypedDict):
    ir: str
    """sha256 of the tool and the shared definitions it reaches."""
    providers: NotRequired[dict[str, str]]
    """Target → sha256 of the definition emitted for it."""


class LockData(TypedDict):
    """What `toolc.lock` holds (see `drift.lock`): only what users' drift means, never a cache."""

    format: int
    tools: dict[str, LockEntry]


class Span(NamedTuple):
    """Where one definition sits in a target's tools array, and its tokens (`providers.spans`)."""

    offset: int
    length: int
    tokens: int
    """The definition on its own, as toolc writes JSON (`canonical_json`): the per-tool figure."""
    inner: int
    """Its lines but the first and the last, as indented inside the array."""


@dataclass(frozen=True)
class Layout:
    """Where each definition of one target's tools array sits (by tool id, in file order), and its tokens: a few
    numbers per tool, sent back from the worker instead of the definitions."""

    target: str
    spans: dict[str, Span]
    sha256: str = ""
    """`sha256:<hex>` of the whole tools file, hashed as it was written (the cache and the project record reuse it);
    empty when the file is not in the output (its tools do not fit one request: nothing reads its hash)."""


@dataclass(frozen=True)
class TargetOutput:
    """One target's result, as the providers stage made it: what the fit stage, codegen, the lock and the pytest
    plugin read. No later stage changes it."""

    target: str
    tools: Mapping[str, JsonObject]
    """Tool id → the definition exactly as lowered, in the tools array (decoded from `array` on first read)."""
    names: JsonObject
    """The reverse name map (`schemas/<target>.names.json`, format in `providers.namemap`)."""
    summary: Mapping[str, Any]
    """Sizes for `--report`: tools, strict, bytes, losses (the fit stage's figures are in `FitOutput`)."""
    array: Path
    """The tools array (the SDK's `tools` argument) as written, in the build's spool folder; for a target whose
    tools do not fit one request (no `schemas/<target>.json` of them), a file that holds every definition at its
    span, an array only when written from nothing (`providers.reuse.PriorLowerings.grown_file`): read it by
    `layout`."""
    layout: Layout
    """Where each definition sits in `array`, and its tokens (the fit stage cuts toolset files from it)."""
    fits_one_request: bool
    """Every tool fits one request (the provider's tool limit): `schemas/<target>.json` holds the tools array;
    when they do not, the fit stage writes the discovery form there instead (TC771). Decided here, once."""
    digests: Mapping[str, str] = field(default_factory=dict)
    """Tool id → `drift.lock.digest` of its definition, computed where it was lowered so that the lock never
    needs the definitions back (`tools` is decoded only when something reads it)."""


@dataclass(frozen=True)
class FitOutput:
    """One target's figures from the fit stage (`fit.forms`)."""

    target: str
    summary: Mapping[str, Any]
    """For `--report`: tokens, tokens_method, toolsets, fits_one_request and the forms (`forms`)."""


@dataclass(frozen=True)
class CodegenRecord:
    """What code generation read and wrote, kept in the cache beside the output (never in the lock)."""

    inputs: str
    """The fingerprint of everything generation reads (`codegen.cache.fingerprint`)."""
    files: Mapping[str, str]
    """`python/...` path → sha256 of the file written."""
    diagnostics: tuple[JsonObject, ...]
    """The diagnostics generation reported, replayed when the output is reused."""


@dataclass(frozen=True)
class KnownTool:
    """What is known of one tool without walking it again: its catalog entry (`serialize.tool_to_json`) and its
    IR hash (None: not known). It stands only for `tool`, that very object: a catalog tool that is another object
    of the same id (replaced after it was read) is made and hashed as usual."""

    tool: Tool
    entry: JsonObject
    ir: str | None


@dataclass
class Build:
    config: Config
    catalog: Catalog
    resolver: RefResolver
    diagnostics: Diagnostics
    targets: tuple[str, ...]
    files: FileSet = field(default_factory=FileSet)
    """Output files, by path relative to the output folder (POSIX separators); big ones spooled to disk."""
    previous_output: MutableMapping[str, bytes] = field(default_factory=dict)
    """The output folder as it was before this compile (codegen carries `# toolc: keep` edits over from it)."""
    previous_codegen: CodegenRecord | None = None
    """The codegen cache entry found beside the output folder, if any."""
    providers: dict[str, TargetOutput] = field(default_factory=dict)
    fit: dict[str, FitOutput] = field(default_factory=dict)
    codegen: CodegenRecord | None = None
    lock: LockData | None = None
    progress: Progress = field(default_factory=Progress)
    """Where stages report steps (a terminal's progress bar, or nothing)."""
    reads: Mapping[str, str] | None = None
    """Every file the compile read (resolved path → sha256; `loading.recording_reads`), None for a live compile:
    what the incremental cache's project record is keyed by."""
    out_dir: Path | None = None
    """The output folder this compile is for (its caches sit beside it); None: no cache is read or written."""
    ir_hashes: dict[str, str] | None = None
    """Tool id → `incremental.ir_hash.ToolHasher.ir_hash`, made before the providers stage (its lowering reuse's key)
    and read by the lock."""
    project_key: str | None = None
    """`incremental.project.fingerprint` of this compile's settings, targets, inputs and `reads`."""
    known_tools: dict[str, KnownTool] = field(default_factory=dict)
    """Tool id → what the reading stage knew of a tool it took from the last compile (`sources.reuse`); the
    catalog.json stage adds the entry of every other tool, for the tools cache this compile leaves."""
    saved_with_output: list[Callable[[], None]] = field(default_factory=list)
    """Caches that describe the output folder as this compile writes it (ruff's formatting of each module): saved by
    `pipeline.write_build` once the folder is in place, never by a compile whose output is not written."""

    def known(self, tool: Tool) -> KnownTool | None:
        """What `known_tools` holds for this very tool object, if anything."""
        hit = self.known_tools.get(tool.id)
        return hit if hit is not None and hit.tool is tool else None

    def known_ir(self, tool: Tool) -> str | None:
        hit = self.known(tool)
        return hit.ir if hit is not None else None

    def add_file(self, path: str, content: bytes) -> None:
        if path in self.files:
            raise ValueError(f"two stages write {path}")
        self.files[path] = content

    def adopt_file(self, path: str, spooled: Path, digest: str) -> None:
        """`add_file` for a file already written to the spool folder (`FileSet.adopt`)."""
        if path in self.files:
            raise ValueError(f"two stages write {path}")
        self.files.adopt(path, spooled, digest)

    def summary(self, target: str) -> dict[str, Any]:
        """One target's figures: the providers stage's sizes, then the fit stage's tokens and forms."""
        fit = self.fit.get(target)
        return {**self.providers[target].summary, **(fit.summary if fit is not None else {})}

    def report_extra(self) -> dict[str, Any]:
        """What `--report` adds to the diagnostics: per-target sizes and tokens, each
        toolset's per target, and every output file's size in bytes."""
        extra: dict[str, Any] = {"targets": {target: self.summary(target) for target in self.providers}}
        index = self.files.get("schemas/toolsets/index.json")
        if index is not None:
            import orjson

            sets = orjson.loads(index)["toolsets"]
            extra["toolsets"] = {name: {target: {"tools": row["tools"], "tokens": row["tokens"]}
                                        for target, row in entry["targets"].items()} for name, entry in sets.items()}
        extra["files"] = {path: self.files.size(path) for path in self.files}
        return extra
