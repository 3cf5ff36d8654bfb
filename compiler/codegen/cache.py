"""Skip code generation when nothing it reads has changed (typed stubs for GitHub take ~10 s; `toolc check`
and a no-op `toolc compile` should not pay that).

The cache is a file beside the output folder, never inside it and never in `toolc.lock`:
`<output's parent>/.toolc-cache/<output name>.codegen.json` (the folder holds a `.gitignore` of `*`, so it is never
committed). It records a fingerprint of every input of this stage: the catalog, the project file, the targets and
their name maps, and the generator itself (its modules, its templates, the versions of the libraries whose output
it embeds), plus the sha256 of each file it wrote and the diagnostics it reported. When the fingerprint matches
and every `python/` file in the output folder still has its recorded hash, the folder's files *are* what
generation would produce (generation is deterministic, and `# toolc: keep` functions are copied from that same
folder), so they are reused and the diagnostics replayed. Anything else (no cache, a new toolc) regenerates, and
regenerating gives the same bytes: upgrading toolc costs one slower compile, never a failed `toolc check`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path

import orjson

from compiler import codes
from compiler.build import Build, CodegenRecord
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.serialize import canonical_json, catalog_to_json, compact_json

CACHE_DIR = ".toolc-cache"
CACHE_FORMAT = 1
PREFIX = "python/"
# Only the libraries whose output is embedded verbatim (the models, ruff's formatting); pinned exactly in pyproject.toml.
_LIBRARIES = ("datamodel-code-generator", "ruff")


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@cache
def generator_identity() -> str:
    """The generator's own code and templates: a change to either must regenerate, version bump or not."""
    from compiler.codegen.env import templates_dir  # see `static_files`

    digest = hashlib.sha256()
    code = Path(__file__).resolve().parent
    templates = templates_dir()
    for root, pattern in ((code, "**/*.py"), (templates, "**/*.jinja")):
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name, path in static_files().items():  # copied verbatim into the router, some from outside codegen/
        digest.update(f"router/{name}".encode() + b"\0" + path.read_bytes() + b"\0")
    # Diagnostics are replayed with the severity they were recorded with, which the registry must still allow.
    digest.update(b"codes.py\0" + Path(codes.__file__).read_bytes() + b"\0")
    for library in _LIBRARIES:
        digest.update(f"{library}=={metadata.version(library)}\0".encode())
    return digest.hexdigest()


def static_files() -> dict[str, Path]:
    """The router's verbatim files (`codegen.router.router_package.static_files`). Imported on first call, as `python.py` imports the
    generators: jinja2 and the router's modules are loaded by compiles that generate code, not by the pipeline
    (`--no-codegen`, `codegen: false`, catalog only)."""
    from compiler.codegen.router.router_package import static_files as router_static_files

    return router_static_files()


def fingerprint(build: Build) -> str:
    inputs = {
        "generator": generator_identity(),
        "config": build.config.model_dump(mode="json", exclude={"root"}),
        "targets": list(build.targets),
        "names": {target: output.names for target, output in sorted(build.providers.items())},
        # The catalog stage's encoding of the IR when it ran (hashed, never encoded again: 2 s on Graph).
        "catalog": _sha256(build.files["catalog.json"]) if "catalog.json" in build.files
        else catalog_to_json(build.catalog),
    }
    return _sha256(compact_json(inputs))


def record(key: str, files: Mapping[str, bytes], diagnostics: Iterable[Diagnostic],
           hashed: Mapping[str, str] | None = None) -> CodegenRecord:
    """What the cache keeps for the next compile. `hashed`: files not held, by path, with their sha256."""
    digests = {**{path: _sha256(content) for path, content in files.items()}, **(hashed or {})}
    return CodegenRecord(inputs=key, files=dict(sorted(digests.items())),
                         diagnostics=tuple(d.to_json() for d in diagnostics))


def reuse(build: Build, key: str) -> CodegenRecord | None:
    """Copy the previous output's files and replay its diagnostics when they are provably current."""
    entry = build.previous_codegen
    if entry is None or entry.inputs != key:
        return None
    previous = build.previous_output
    on_disk = {path: previous[path] for path in previous if path.startswith(PREFIX)}
    if set(on_disk) != set(entry.files) or any(_sha256(on_disk[p]) != h for p, h in entry.files.items()):
        return None
    try:
        replayed = [Diagnostic.from_json(item) for item in entry.diagnostics]
    except (KeyError, TypeError, ValueError):
        return None
    for path, content in sorted(on_disk.items()):
        build.add_file(path, content)
    build.diagnostics.extend(replayed)
    return entry


# -- the cache file ---------------------------------------------------------------------------------------------


def cache_file(out_dir: Path) -> Path:
    """Beside the output folder, so the atomic swap of the folder and `toolc check`'s byte comparison never see it."""
    out_dir = out_dir.resolve()
    return out_dir.parent / CACHE_DIR / f"{out_dir.name}.codegen.json"


def load_record(out_dir: Path) -> CodegenRecord | None:
    """The cache entry for `out_dir`; None when there is none or it is unreadable (then generation runs)."""
    try:
        data = orjson.loads(cache_file(out_dir).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return None
    inputs, files, diagnostics = data.get("inputs"), data.get("files"), data.get("diagnostics")
    if not (isinstance(inputs, str) and isinstance(files, dict) and isinstance(diagnostics, list)):
        return None
    return CodegenRecord(inputs=inputs, files=files, diagnostics=tuple(diagnostics))


def save_record(out_dir: Path, entry: CodegenRecord) -> None:
    """Best effort: a cache that cannot be written only costs the next compile its speed-up."""
    path = cache_file(out_dir)
    data = {"format": CACHE_FORMAT, "inputs": entry.inputs, "files": dict(entry.files),
            "diagnostics": list(entry.diagnostics)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# toolc's build cache: never committed\n*\n")
        path.write_bytes(canonical_json(data))
    except OSError:
        return

