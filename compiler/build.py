"""What one compile hands from stage to stage: typed values, each set by the stage that makes it.

    Build.catalog      the IR (sources stage)
    Build.providers    {target: TargetOutput}: lowered definitions and name map per target (providers stage)
    Build.codegen      CodegenRecord: what code generation wrote, for the cache beside the output (codegen stage)
    Build.lock         LockData: the hashes `toolc.lock` holds (the last stage; `toolc check` compares them)
    Build.files        every output file, by path relative to the output folder
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from compiler.config import Config
from compiler.diagnostics import Diagnostics
from compiler.ir import Catalog, JsonObject
from compiler.output import FileSet
from compiler.progress import Progress

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class TargetOutput:
    """One target's result, as emitted: what codegen, the lock and the pytest plugin read."""

    target: str
    tools: Mapping[str, JsonObject]
    """Tool id → the definition exactly as in `schemas/<target>.json`."""
    names: JsonObject
    """The reverse name map (`schemas/<target>.names.json`, format in `providers.namemap`)."""
    summary: Mapping[str, Any]
    """Sizes for `--report`: tools, strict, bytes, losses; the fit stage adds tokens and toolsets."""
    digests: Mapping[str, str] = field(default_factory=dict)
    """Tool id → `drift.lock.digest` of its definition, computed where it was lowered so that the lock never
    needs the definitions back (`tools` is decoded only when something reads it)."""


@dataclass(frozen=True)
class CodegenRecord:
    """What code generation read and wrote, kept in the cache beside the output (never in the lock)."""

    inputs: str
    """The fingerprint of everything generation reads (`codegen.cache.fingerprint`)."""
    files: Mapping[str, str]
    """`python/...` path → sha256 of the file written."""
    diagnostics: tuple[JsonObject, ...]
    """The diagnostics generation reported, replayed when the output is reused."""


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
    """Tool id → `drift.lock.ToolHasher.ir_hash`, made by the providers stage for its cache and read by the lock."""
    project_key: str | None = None
    """`incremental.project.fingerprint` of this compile's settings, targets, inputs and `reads`."""

    def add_file(self, path: str, content: bytes) -> None:
        if path in self.files:
            raise ValueError(f"two stages write {path}")
        self.files[path] = content

    def report_extra(self) -> dict[str, Any]:
        """What `--report` adds to the diagnostics: per-target sizes and tokens, each
        toolset's per target, and every output file's size in bytes."""
        extra: dict[str, Any] = {"targets": {target: dict(output.summary) for target, output in self.providers.items()}}
        index = self.files.get("schemas/toolsets/index.json")
        if index is not None:
            import orjson

            sets = orjson.loads(index)["toolsets"]
            extra["toolsets"] = {name: {target: {"tools": row["tools"], "tokens": row["tokens"]}
                                        for target, row in entry["targets"].items()} for name, entry in sets.items()}
        extra["files"] = {path: self.files.size(path) for path in self.files}
        return extra
