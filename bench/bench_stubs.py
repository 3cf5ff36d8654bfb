"""Benchmark (not a test): typed stubs for a whole OpenAPI document, next to peers on the same file.

    .venv/bin/python bench/bench_stubs.py [fixtures/corpus/openapi/github.json] [--peers]

toolc: read the document (OpenAPI source + shared RefResolver), `generate_stubs`, write the package with the
router, then import it in a fresh `python -I` that has only the output folder on sys.path. `stubs_s` is the
stub generator alone (its target: 15 s for GitHub); `total_s` adds reading the document; `router_s` and
`import_s` (the fresh interpreter importing every stub package) are reported, not part of either.
--peers also installs openapi-python-client 0.29.1 and datamodel-code-generator 0.86.0 into bench/.peers-*
venvs (pip, once) and times them on the same file, as in reference/performance.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, measure, peer_venv, precompile

sys.path.insert(0, str(ROOT))

PEERS = {
    "openapi-python-client": ("openapi-python-client==0.29.1", "openapi-python-client",
                              ["generate", "--path", "{doc}", "--output-path", "{out}/opc", "--overwrite", "--meta", "none"]),
    "datamodel-codegen": ("datamodel-code-generator[http]==0.86.0", "datamodel-codegen",
                          ["--input", "{doc}", "--input-file-type", "openapi", "--output", "{out}/dcg.py"]),
}


def toolc(document: Path, out: Path) -> dict[str, object]:
    from compiler.build import Build
    from compiler.codegen.router.router_package import generate_router
    from compiler.codegen.stubs.stub_packages import generate_stubs
    from compiler.config import Config
    from compiler.infra.diagnostics import Diagnostics
    from compiler.pipeline import adhoc_inputs, read_catalog
    from compiler.refs import RefResolver

    started = time.perf_counter()
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    config = Config(root=ROOT)
    catalog = read_catalog(config, adhoc_inputs([document], ROOT), resolver, diagnostics)
    read = time.perf_counter()
    build = Build(config=config, catalog=catalog, resolver=resolver, diagnostics=diagnostics, targets=())
    files = generate_stubs(build)
    stubs = time.perf_counter()
    files.update(generate_router(build))
    routed = time.perf_counter()
    for relative, content in files.items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_bytes(content)
    packages = sorted({p.split("/")[0] for p in files if not p.startswith("toolc_router/")})
    code = f"import sys; sys.path.insert(0, {str(out)!r}); import " + ", ".join(f"{p}.tools" for p in packages)
    importing = time.perf_counter()
    imported = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    import_s = time.perf_counter() - importing
    lines = sum(content.count(b"\n") for path, content in files.items() if not path.startswith("toolc_router/"))
    return {"tools": len(catalog.tools), "read_s": round(read - started, 2), "stubs_s": round(stubs - read, 2),
            "total_s": round(stubs - started, 2), "router_s": round(routed - stubs, 2), "import_s": round(import_s, 2),
            "modules": sorted(p for p in files if p.endswith(".py") and not p.startswith("toolc_router/")),
            "lines": lines, "imports": imported.returncode == 0,
            "import_error": imported.stderr.strip().splitlines()[-1:] if imported.returncode else [],
            "errors": [d.render() for d in diagnostics if d.severity.value == "error"][:5]}


def peer(name: str, document: Path, out: Path) -> dict[str, object]:
    requirement, command, args = PEERS[name]
    bin_dir = peer_venv(command, [requirement, "ruff"]).parent
    argv = [str(bin_dir / command), *(a.format(doc=document, out=out) for a in args)]
    run = measure(name, argv, runs=1, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    return {"rc": run.returncode, "wall_s": round(run.wall_s, 2), "tail": [run.note] if run.note else []}


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("document", nargs="?", default=str(ROOT / "fixtures/corpus/openapi/github.json"))
    parser.add_argument("--peers", action="store_true")
    options = parser.parse_args()
    document = Path(options.document).resolve()
    out = Path(tempfile.mkdtemp(prefix="bench-stubs-"))
    try:
        report: dict[str, object] = {"document": document.name, "toolc": toolc(document, out / "toolc")}
        if options.peers:
            for name in PEERS:
                report[name] = peer(name, document, out)
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
