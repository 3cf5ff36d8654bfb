"""Skip code generation when nothing it reads has changed (typed stubs for GitHub take ~10 s; `toolc check`
and a no-op `toolc compile` should not pay that).

The lock records, under `codegen`, a fingerprint of every input of this stage: the catalog, the project file,
the targets and their name maps, and the generator itself (its modules, its templates, the versions of the
libraries whose output it embeds), plus the sha256 of each file it wrote and the diagnostics it reported. When
the fingerprint matches and every `python/` file in the output folder still has its recorded hash, the folder's
files *are* what generation would produce (generation is deterministic, and `# toolc: keep` functions are
copied from that same folder), so they are reused and the diagnostics replayed. Anything else regenerates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from compiler.build import Build
from compiler.codegen.env import templates_dir
from compiler.diagnostics import Diagnostic, Severity
from compiler.serialize import catalog_to_json, compact_json

LOCK_FILE = "toolc.lock"
PREFIX = "python/"
# Only the library whose output is embedded verbatim; it is pinned exactly in pyproject.toml.
_LIBRARIES = ("datamodel-code-generator",)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@cache
def generator_identity() -> str:
    """The generator's own code and templates: a change to either must regenerate, version bump or not."""
    digest = hashlib.sha256()
    code = Path(__file__).resolve().parent
    templates = templates_dir()
    for root, pattern in ((code, "*.py"), (templates, "**/*.jinja")):
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for library in _LIBRARIES:
        digest.update(f"{library}=={metadata.version(library)}\0".encode())
    return digest.hexdigest()


def fingerprint(build: Build) -> str:
    providers: Mapping[str, Any] = build.artifacts.get("providers") or {}
    inputs = {
        "generator": generator_identity(),
        "config": build.config.model_dump(mode="json", exclude={"root"}),
        "targets": list(build.targets),
        "names": {target: data.get("names") for target, data in sorted(providers.items())},
        "catalog": catalog_to_json(build.catalog),
    }
    return _sha256(compact_json(inputs))


def record(build: Build, key: str, files: Mapping[str, bytes], diagnostics: Iterable[Diagnostic]) -> None:
    """What the lock keeps for the next compile (`drift.lock` writes `build.artifacts["codegen"]`)."""
    build.artifacts["codegen"] = {
        "inputs": key,
        "files": {path: _sha256(content) for path, content in sorted(files.items())},
        "diagnostics": [d.to_json() for d in diagnostics],
    }


def reuse(build: Build, key: str) -> bool:
    """Copy the previous output's files and replay its diagnostics when they are provably current."""
    entry = _previous_entry(build.previous_output.get(LOCK_FILE))
    if entry is None or entry.get("inputs") != key:
        return False
    recorded: Mapping[str, str] = entry.get("files") or {}
    previous = build.previous_output
    on_disk = {path: previous[path] for path in previous if path.startswith(PREFIX)}
    if set(on_disk) != set(recorded) or any(_sha256(on_disk[p]) != h for p, h in recorded.items()):
        return False
    try:
        replayed = [_diagnostic(item) for item in entry.get("diagnostics") or []]
    except (KeyError, TypeError, ValueError):
        return False
    for path, content in sorted(on_disk.items()):
        build.add_file(path, content)
    build.diagnostics.extend(replayed)
    build.artifacts["codegen"] = dict(entry)
    return True


def _previous_entry(lock: bytes | None) -> Mapping[str, Any] | None:
    if lock is None:
        return None
    try:
        data = orjson.loads(lock)
    except orjson.JSONDecodeError:
        return None
    entry = data.get("codegen") if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else None


def _diagnostic(item: Mapping[str, Any]) -> Diagnostic:
    return Diagnostic(code=item["code"], severity=Severity(item["severity"]), message=item["message"],
                      source=item.get("source", ""), tool=item.get("tool", ""), pointer=item.get("pointer", ""),
                      provider=item.get("provider", ""))
