"""A big catalog's toolset files, the later targets' written by a forked child while this process writes the
earlier ones: each file is a byte range of its target's tools file, copied and hashed (Microsoft Graph: 676 MB,
one target after another with the other core idle). The child hands back each file's spool path and sha256 (or,
under `FileSet.SPOOL_MIN`, its bytes), and this process takes them in as it reaches the target, in the order
it would have written them. A file the last compile made from the same definitions is not made again, here or in
the child: the output folder's copy is kept (`incremental.kept_files`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import BinaryIO, NamedTuple

from compiler.build import Build, TargetOutput
from compiler.fit.toolsets import Toolset
from compiler.incremental.kept_files import KeptFiles, recipe
from compiler.infra import limits
from compiler.infra.output import FileSet
from compiler.infra.parallel import WRITE_ASIDE_MIN_BYTES, Background, can_fork, cores
from compiler.providers import spans


class Written(NamedTuple):
    """A file the child wrote: its spooled path (or its bytes, when small) and its sha256 (empty for bytes); or the
    last compile's file, kept (`kept`: `content` is its path in the output folder)."""

    content: Path | bytes
    digest: str
    kept: bool = False


def toolset_files(toolsets: Sequence[Toolset], output: TargetOutput) -> list[tuple[str, list[str]]]:
    """(path, tool ids in the target's array) of each toolset file of a target, in toolset order."""
    return [(f"schemas/toolsets/{toolset.name}.{output.target}.json",
             [tool_id for tool_id in toolset.tool_ids if tool_id in output.layout.spans]) for toolset in toolsets]


def toolset_recipe(output: TargetOutput, ids: Sequence[str]) -> str:
    """What a toolset file is made of (`kept_files.recipe`): the target's frame and the definitions, in order."""
    return recipe(["toolset", output.target, *(output.digests[tool_id] for tool_id in ids)])


def _last_compiles(kept: KeptFiles, path: str, file_recipe: str) -> Written | None:
    found = kept.find(path, file_recipe)
    return None if found is None else Written(found.path, found.digest, kept=True)


def write_toolset(files: FileSet, kept: KeptFiles, path: str, ids: list[str], output: TargetOutput, source: BinaryIO,
                  written: Mapping[str, Written]) -> None:
    """`path` set in `files`: taken from what the child wrote, kept from the last compile, or copied here from the
    tools file; recorded in `kept` for the next compile."""
    file_recipe = toolset_recipe(output, ids)
    done = written.get(path) or _last_compiles(kept, path, file_recipe)
    if done is None:
        files.write_chunks(path, spans.array_chunks(output.layout, source, ids))
    elif done.kept:
        assert isinstance(done.content, Path)
        files.keep(path, done.content, done.digest)
    elif isinstance(done.content, Path):
        files.adopt(path, done.content, done.digest)
    else:
        files[path] = done.content
    kept.record(path, file_recipe, files.digest(path))


class AsideWriter:
    """Starts the child (for a big catalog on several cores); `take(target)` gives what it wrote of a target
    (waiting for it the first time), empty for a target left to this process. `close()` stops a child whose work
    is no longer wanted."""

    def __init__(self, build: Build, kept: KeptFiles, toolsets: Sequence[Toolset],
                 outputs: Mapping[str, TargetOutput]) -> None:
        self._aside = _aside(outputs) if cores() > 1 and can_fork() else []
        if self._aside:
            build.files.spool_dir()  # made here, before the fork: a child's own would go when the child ends
        self._child = Background(partial(_write, build, kept, toolsets, [outputs[t] for t in self._aside]),
                                 budget_mb=limits.worker_budget()) if self._aside else None
        self._written: dict[str, Written] | None = None

    def take(self, target: str) -> Mapping[str, Written]:
        if target not in self._aside:
            return {}
        if self._written is None:
            assert self._child is not None
            self._written = self._child.result()
            self._child = None
        return self._written

    def close(self) -> None:
        if self._child is not None:
            self._child.cancel()
            self._child = None


def _aside(outputs: Mapping[str, TargetOutput]) -> list[str]:
    """The last targets (in the order this process reaches them) holding at most half the bytes."""
    sizes = {target: sum(span.length for span in output.layout.spans.values()) for target, output in outputs.items()}
    total = sum(sizes.values())
    if total < WRITE_ASIDE_MIN_BYTES:
        return []
    aside: list[str] = []
    for target in reversed(list(outputs)):
        if 2 * (sum(sizes[name] for name in aside) + sizes[target]) > total:
            break
        aside.append(target)
    return aside[::-1]


def _write(build: Build, kept: KeptFiles, toolsets: Sequence[Toolset],
           outputs: Sequence[TargetOutput]) -> dict[str, Written]:
    """In the child: each toolset file of `outputs`, kept from the last compile or written to the spool folder (its
    `FileSet` copy forgets it)."""
    written: dict[str, Written] = {}
    for output in outputs:
        with output.array.open("rb") as source:
            for path, ids in toolset_files(toolsets, output):
                found = _last_compiles(kept, path, toolset_recipe(output, ids))
                if found is not None:
                    written[path] = found
                    continue
                build.files.write_chunks(path, spans.array_chunks(output.layout, source, ids))
                digest = build.files.known_digest(path)
                written[path] = Written(build.files.detach(path), digest)
    return written
