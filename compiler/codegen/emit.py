"""The codegen emitter: typed stubs per source (`codegen.stubs`) and the router package (`codegen.router`),
all under `python/` in the output folder. Layout:

    python/toolc_router/          the generated, policy-checked router (one per project); its `stubs.py` is
                                  the runtime support every source package's stubs share
    python/<source_package>/      one package per source: models.py (pydantic v2), tools.py (async stubs);
                                  needs `toolc_router` next to it
    python/ruff.toml              the settings every `.py` file above is formatted with (`codegen.formatting`)
"""

from __future__ import annotations

from compiler.build import Build, CodegenRecord
from compiler.codegen.cache import fingerprint, record, reuse
from compiler.codegen.formatting import FORMAT_FAILED, RUFF_TOML, FormatError, format_python


def emit_python(build: Build) -> CodegenRecord | None:
    """Add the `python/` files (reused from the output folder when provably current); None without codegen."""
    if not build.config.codegen:
        return None
    key = fingerprint(build)
    reused = reuse(build, key)
    if reused is not None:
        return reused
    # Imported here: libcst and datamodel-code-generator cost ~0.5 s to import, paid only when code is made.
    from compiler.codegen.router import generate_router
    from compiler.codegen.stubs import generate_stubs

    before = len(build.diagnostics)
    generated = {**generate_router(build), **generate_stubs(build)}
    if generated:
        generated["ruff.toml"] = RUFF_TOML
    try:
        formatted = format_python(generated)
    except FormatError as exc:
        build.diagnostics.error(FORMAT_FAILED, f"generated code not emitted: ruff format failed: {exc}", source="python/")
        return None
    files = {f"python/{path}": content for path, content in sorted(formatted.items())}
    for path, content in files.items():
        build.add_file(path, content)
    return record(key, files, build.diagnostics.items[before:])
