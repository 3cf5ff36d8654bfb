"""The catalog (`catalog.json`, the normalised IR) and the machine-readable compile report."""

from __future__ import annotations

from typing import Any

from compiler.build import Build, KnownTool
from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.infra.serialize import ToolWriter, canonical_json, catalog_to_json
from compiler.ir import Catalog, Tool


def emit_catalog(build: Build) -> None:
    """A tool the reading stage took from the last compile comes with its entry (`Build.known_tools`); the entries
    made here are added there, for the tools cache the compile leaves (`sources.reuse`)."""
    writer = ToolWriter()

    def entry(tool: Tool) -> dict[str, Any]:
        hit = build.known(tool)
        if hit is not None:
            return hit.entry
        made = writer.tool(tool)
        build.known_tools[tool.id] = KnownTool(tool, made, None)
        return made

    build.add_file("catalog.json", canonical_json(catalog_to_json(build.catalog, entry)))


def report(catalog: Catalog | None, diagnostics: Diagnostics, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """`--report`: `{"tools", "sources": {id: {"tools", ...}}, "diagnostics": [...]}`; written even on failure."""
    sources: dict[str, Any] = {}
    if catalog is not None:
        for source in catalog.sources:
            sources[source.id] = {"kind": source.kind, "location": source.location, "tools": 0,
                                  "errors": 0, "warnings": 0}
        for tool in catalog.tools:
            sources[tool.source]["tools"] += 1
        by_location = {s.location: s.id for s in catalog.sources}
        for diagnostic in diagnostics:
            source_id = by_location.get(diagnostic.source.split(":")[0]) or by_location.get(diagnostic.source)
            if source_id and diagnostic.severity is not Severity.INFO:
                sources[source_id]["errors" if diagnostic.severity is Severity.ERROR else "warnings"] += 1
    data: dict[str, Any] = {
        "tools": len(catalog.tools) if catalog else 0,
        "sources": sources,
        "diagnostics": [d.to_json() for d in diagnostics.sorted()],
        "summary": {s.value: diagnostics.count(s) for s in Severity},
    }
    if extra:
        data.update(extra)
    return data
