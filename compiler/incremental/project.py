"""The whole project, proved unchanged: `toolc check` on a project whose inputs and output are as the last
compile left them does no compile at all.

After writing, the compile records (`.toolc-cache/<output>.project.json`) a key over what it read and was asked
for (the project's settings, its targets, its inputs, the sha256 of every file it read, `$ref`ed files
included), and the sha256 of every file it wrote. `prove_unchanged` re-reads those files and the output folder:
when the key and every output hash match, a compile now would read the same bytes with the same toolc
(`identity`, in the envelope) and so write the same output; the folder already holds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from compiler.config import Config
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import file_digest
from compiler.infra.output import FileSet, OutputFolder
from compiler.infra.serialize import compact_json

KIND = "project"


class InputLike(Protocol):
    """What the key reads of a `pipeline.Input` (the pipeline imports this module, not the other way round)."""

    @property
    def display(self) -> str: ...

    @property
    def source_id(self) -> str | None: ...


@dataclass(frozen=True)
class ProjectRecord:
    reads: Mapping[str, str]
    """Resolved path → sha256 of every file the compile read."""
    outputs: Mapping[str, str]
    """Output-relative path → sha256 of every file written."""
    tools: int


def fingerprint(config: Config, inputs: Iterable[InputLike] | None, targets: Iterable[str],
                reads: Mapping[str, str]) -> str:
    """Everything a compile's output depends on besides toolc itself (which the store's envelope carries)."""
    data = {"config": config.model_dump(mode="json", exclude={"root"}), "targets": list(targets),
            "inputs": None if inputs is None else [[item.display, item.source_id] for item in inputs],
            "reads": dict(sorted(reads.items()))}
    return "sha256:" + hashlib.sha256(compact_json(data)).hexdigest()


def save(out_dir: Path, key: str, record: ProjectRecord) -> None:
    payload = {"reads": dict(record.reads), "outputs": dict(record.outputs), "tools": record.tools}
    store.save(out_dir, KIND, store.Entry(key, payload))


def output_hashes(files: FileSet) -> dict[str, str]:
    """sha256 of each output file (a spooled one as its writer hashed it, else streamed from its spool file,
    never read in whole)."""
    hashes: dict[str, str] = {}
    for path in files:
        spooled = files.spooled_path(path)
        if spooled is None:
            hashes[path] = file_digest(files[path])
        else:  # an unreadable spool file records no digest: the record then never proves the folder current
            hashes[path] = files.known_digest(path) or stream_digest(spooled) or ""
    return hashes


def prove_unchanged(config: Config, inputs: Iterable[InputLike] | None, targets: Iterable[str], out_dir: Path,
                    diagnostics: Diagnostics) -> ProjectRecord | None:
    """The last compile's record when it proves the output folder current, else None (then compile)."""
    entry = store.load(out_dir, KIND, diagnostics, _well_formed)
    if entry is None:
        return None
    record = ProjectRecord(reads=entry.payload["reads"], outputs=entry.payload["outputs"],
                           tools=entry.payload["tools"])
    reads_now: dict[str, str] = {}
    for path in record.reads:
        digest = stream_digest(Path(path))
        if digest is None:
            return None
        reads_now[path] = digest
    if fingerprint(config, inputs, targets, reads_now) != entry.key:
        return None
    folder = out_dir.resolve()
    if set(OutputFolder(folder)) != set(record.outputs):
        return None
    for path, digest in record.outputs.items():
        if stream_digest(folder / path) != digest:
            return None
    return record


def stream_digest(path: Path) -> str | None:
    """`sha256:<hex>` of a file, read a piece at a time into one buffer (`hashlib.file_digest`, unbuffered: no
    bytes made per piece; a fifth less CPU than reading pieces, over the hundreds of MB of toolset files a
    recompile of Microsoft Graph checks); None when it cannot be read."""
    try:
        with path.open("rb", buffering=0) as handle:
            return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _well_formed(payload: Any) -> bool:
    return (isinstance(payload, dict) and isinstance(payload.get("tools"), int)
            and all(isinstance(payload.get(name), dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in payload[name].items())
                for name in ("reads", "outputs")))
