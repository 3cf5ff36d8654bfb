"""The codegen emitter: typed stubs per source (`codegen.stubs.stub_packages`) and the router package (`codegen.router.router_package`),
all under `python/` in the output folder. Layout:

    python/toolc_router/          the generated, policy-checked router (one per project); its `stubs.py` is
                                  the runtime support every source package's stubs share
    python/<source_package>/      one package per source: models.py (pydantic v2), tools.py (async stubs);
                                  needs `toolc_router` next to it
    python/ruff.toml              the settings every `.py` file above is formatted with (`codegen.formatting`)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from compiler.build import Build, CodegenRecord
from compiler.codegen.cache import fingerprint, record, reuse
from compiler.codegen.format_reuse import FormatReuse
from compiler.codegen.formatting import FORMAT_FAILED, RUFF_TOML, FormatError, format_python
from compiler.codegen.piece_format import PiecedFiles, PieceFormats
from compiler.codegen.router import reuse as router_reuse
from compiler.codegen.router.reuse import RouterFiles
from compiler.infra import limits
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.parallel import Background, Once, can_fork, cores

BACKGROUND_MIN_TOOLS = 1000
"""From this many tools the router is generated in a forked child while this process makes the stubs: both are
one core's work (Microsoft Graph: 3 s and 13 s), so on two cores the router's time is saved. Below it, the fork
costs more than it saves. The output is the same either way (the tests compare both). The child makes the
router's `_catalog.json` last, and this process makes it instead when it is done with the stubs first (after a
small change the stubs are mostly reused and the router is the longer of the two)."""


def emit_python(build: Build) -> CodegenRecord | None:
    """Add the `python/` files (reused from the output folder when provably current); None without codegen."""
    if not build.config.codegen:
        return None
    key = fingerprint(build)
    reused = reuse(build, key)
    if reused is not None:
        return reused
    before = len(build.diagnostics)
    formats = FormatReuse(build.out_dir, build.previous_output, build.diagnostics) if build.out_dir else None
    pieces = PieceFormats(build.out_dir, build.previous_output, build.diagnostics)
    try:
        # Each module is formatted on its own (ruff's bytes for one file never depend on the others), so the
        # stubs are formatted while the router is still being made.
        router, stubs = _generate(build, partial(_format_stubs, formats, pieces))
        formatted = {**format_python(router.files, formats), **stubs}
        if formatted:
            formatted["ruff.toml"] = RUFF_TOML
    except FormatError as exc:
        build.diagnostics.report(FORMAT_FAILED, f"generated code not emitted: ruff format failed: {exc}", source="python/")
        return None
    if formats is not None:
        build.saved_with_output.extend([formats.save, pieces.save])
    if build.out_dir is not None and router.cache is not None:
        build.saved_with_output.append(partial(router_reuse.save, build.out_dir, router.cache,
                                               build.out_dir / "python" / router_reuse.PACKAGE))
    files = {f"python/{path}": content for path, content in sorted(formatted.items())}
    for path, content in files.items():
        build.add_file(path, content)
    for path, file in sorted(router.spooled.items()):
        build.adopt_file(f"python/{path}", file.path, file.sha256)
    return record(key, files, build.diagnostics.items[before:],
                  {f"python/{path}": file.sha256 for path, file in router.spooled.items()})


def _format_stubs(formats: FormatReuse | None, pieces: PieceFormats, stubs: PiecedFiles) -> dict[str, bytes]:
    """The stubs' files formatted: modules of pieces of functions piece by piece (`piece_format`), the rest whole."""
    whole = {path: content for path, content in stubs.files.items() if path not in stubs.pieced}
    return {**format_python(whole, formats), **pieces.format(stubs.pieced)}


def _generate(build: Build, format_stubs: Callable[[PiecedFiles], dict[str, bytes]]) \
        -> tuple[RouterFiles, dict[str, bytes]]:
    """The router's files and the stubs' (formatted by `format_stubs`, in this process while the router's
    child runs), with the router's diagnostics before the stubs' wherever it ran; the router's data files are
    left in the spool folder (`generate_router_spooled`)."""
    # Imported here: libcst and datamodel-code-generator cost ~0.5 s to import, paid only when code is made.
    from compiler.codegen.router.router_package import generate_router_spooled, spooled_catalog, with_catalog
    from compiler.codegen.stubs.stub_names import StubNames
    from compiler.codegen.stubs.stub_packages import source_tools, stub_files

    spool = build.files.spool_dir()  # made here, before any fork: a child's own would go when the child ends
    # Named here, before any fork: the stubs and code mode (in the router's child) name functions alike.
    names = StubNames(build.out_dir, build.diagnostics)
    for tools in source_tools(build).values():
        names.of(tool.name for tool in tools)
    if build.out_dir is not None:
        build.saved_with_output.append(names.save)
    if cores() < 2 or len(build.catalog.tools) < BACKGROUND_MIN_TOOLS or not can_fork():
        router_files = generate_router_spooled(build, spool, names)
        return router_files, format_stubs(stub_files(build, names))

    catalog = Once()  # `_catalog.json`, made last by the child unless this process is done first and takes it

    def router_with_diagnostics() -> tuple[RouterFiles, list[Diagnostic]]:
        mark = len(build.diagnostics)  # in the child: what it adds is handed back with its files
        return generate_router_spooled(build, spool, names, catalog), build.diagnostics.items[mark:]

    router = Background(router_with_diagnostics, budget_mb=limits.worker_budget())
    mark = len(build.diagnostics)
    try:
        stubs = format_stubs(stub_files(build, names))
        catalog_here = spooled_catalog(build, spool) if catalog.take() else None
    except BaseException:
        router.cancel()
        raise
    router_files, router_diagnostics = router.result()
    if catalog_here is not None:
        router_files = with_catalog(router_files, catalog_here)
    stubs_diagnostics = build.diagnostics.items[mark:]
    del build.diagnostics.items[mark:]
    build.diagnostics.extend([*router_diagnostics, *stubs_diagnostics])
    return router_files, stubs
