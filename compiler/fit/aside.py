"""A big catalog's toolset files, the later targets' written by a forked child while this process writes the
earlier ones: each file is a byte range of its target's tools file, copied and hashed (Microsoft Graph: 676 MB,
one target after another with the other core idle). The child hands back each file's spool path and sha256 (or,
under `FileSet.SPOOL_MIN`, its bytes), and this process takes them in as it reaches the target, in the order
it would have written them. A file the last compile made from the same definitions is not made again, here or in
the child: the output folder's copy is kept (`incremental.kept_files`).

The child also writes the deferred forms no byte limit applies to (`DeferredJob`: OpenAI Responses', 194 MB on
Graph, each definition re-indented): their rows need no size before the index is written, so this process takes
them after its last target (`finish`) instead of writing them itself while the child waits for nothing. A
recompile that changes one description keeps nearly every toolset file, and this form was then its fit stage's
biggest serial cost."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import BinaryIO, NamedTuple

from compiler.build import Build, TargetOutput
from compiler.fit import deferred
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


class DeferredJob(NamedTuple):
    """A deferred form the child writes: its path, target, plan and recipe (`kept_files.recipe`)."""

    path: str
    target: str
    form: deferred.DeferredForm
    recipe: str


def write_toolset(files: FileSet, kept: KeptFiles, path: str, ids: list[str], output: TargetOutput, source: BinaryIO,
                  written: Mapping[str, Written]) -> None:
    """`path` set in `files`: taken from what the child wrote, kept from the last compile, or copied here from the
    tools file; recorded in `kept` for the next compile."""
    file_recipe = toolset_recipe(output, ids)
    done = written.get(path) or _last_compiles(kept, path, file_recipe)
    if done is None:
        files.write_chunks(path, spans.array_chunks(output.layout, source, ids))
    else:
        _take(files, path, done)
    kept.record(path, file_recipe, files.digest(path))


def _take(files: FileSet, path: str, done: Written) -> None:
    if done.kept:
        assert isinstance(done.content, Path)
        files.keep(path, done.content, done.digest)
    elif isinstance(done.content, Path):
        files.adopt(path, done.content, done.digest)
    else:
        files[path] = done.content


class AsideWriter:
    """Starts the child (for a big catalog on several cores); `take(target)` gives what it wrote of a target
    (waiting for it the first time), empty for a target left to this process. `close()` stops a child whose work
    is no longer wanted."""

    def __init__(self, build: Build, kept: KeptFiles, toolsets: Sequence[Toolset],
                 outputs: Mapping[str, TargetOutput], jobs: Callable[[], list[DeferredJob]]) -> None:
        """`jobs`: the deferred forms the child may write, planned only when there is a child."""
        self._aside = _aside(outputs) if cores() > 1 and can_fork() else []
        self._jobs = {job.path: job for job in jobs()} if self._aside else {}
        if self._aside:
            build.files.spool_dir()  # made here, before the fork: a child's own would go when the child ends
        self._child = Background(partial(_write, build, kept, toolsets, outputs, self._aside, list(self._jobs.values())),
                                 budget_mb=limits.worker_budget()) if self._aside else None
        self._written: dict[str, Written] | None = None
        self._taken: dict[str, DeferredJob] = {}
        """The jobs whose rows wait for the child's file (`finish`)."""

    def take(self, target: str) -> Mapping[str, Written]:
        return self._result() if target in self._aside else {}

    def _result(self) -> dict[str, Written]:
        if self._written is None:
            assert self._child is not None
            self._written = self._child.result()
            self._child = None
        return self._written

    def deferred_job(self, path: str) -> DeferredJob | None:
        """The child's job for the deferred form at `path`, or None (this process writes it)."""
        return self._jobs.get(path)

    def later(self, job: DeferredJob) -> None:
        """The form of `job` is to be taken in by `finish`."""
        self._taken[job.path] = job

    def finish(self, files: FileSet, kept: KeptFiles) -> dict[str, int]:
        """Take in the deferred forms the child wrote (waiting for it if need be); path → size."""
        sizes = {}
        for path, job in self._taken.items():
            _take(files, path, self._result()[path])
            kept.record(path, job.recipe, files.digest(path))
            sizes[path] = files.size(path)
        return sizes

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


def _write(build: Build, kept: KeptFiles, toolsets: Sequence[Toolset], outputs: Mapping[str, TargetOutput],
           aside: Sequence[str], jobs: Sequence[DeferredJob]) -> dict[str, Written]:
    """In the child: the deferred forms of `jobs`, then each toolset file of the `aside` targets, each kept from the
    last compile or written to the spool folder (its `FileSet` copy forgets it)."""
    written: dict[str, Written] = {}
    for job in jobs:
        output = outputs[job.target]
        with output.array.open("rb") as source:
            written[job.path] = _last_compiles(kept, job.path, job.recipe) or _spooled(
                build.files, job.path, deferred.chunks(job.form, output.layout, source))
    for target in aside:
        output = outputs[target]
        with output.array.open("rb") as source:
            for path, ids in toolset_files(toolsets, output):
                written[path] = _last_compiles(kept, path, toolset_recipe(output, ids)) or _spooled(
                    build.files, path, spans.array_chunks(output.layout, source, ids))
    return written


def _spooled(files: FileSet, path: str, chunks: Iterable[bytes]) -> Written:
    files.write_chunks(path, chunks)
    digest = files.known_digest(path)
    return Written(files.detach(path), digest)
