"""What a compile loads is what it uses (issue 27): these fixed costs are paid by every run, so a command that
does not need something must not load it. Checked in a fresh interpreter, by what it imported (never by time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import click
import pytest

from compiler.cli import SUMMARIES, main
from compiler.incremental.project import output_hashes
from compiler.infra.loading import file_digest
from compiler.infra.output import FileSet
from compiler.refs.external import file_url_path
from tests.support.paths import FIXTURES

SMALL_API = FIXTURES / "openapi" / "params.yaml"
JSON_API = FIXTURES / "openapi" / "k8s-configmap.json"


def _fresh(code: str, *args: str) -> object:
    """Run `code` in a new interpreter; it prints one JSON value as its last line."""
    done = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_counting_tokens_loads_only_the_rust_tokenizer() -> None:
    """bpe_openai's package decodes three vocabularies in Python on import (0.5 s); its Rust backend alone
    counts the same tokens."""
    code = ("import json, sys\nfrom compiler.providers import tokens\ncount = tokens.count_text('hello world')\n"
            "print(json.dumps(['bpe_openai.compat' in sys.modules, count]))")
    assert _fresh(code) == [False, 2]


def test_the_wrapper_imported_afterwards_counts_the_same() -> None:
    """The backend is registered under its own name: importing `bpe_openai` later reuses it (a PyO3 module is
    initialised once per process) and both count alike, lone surrogates included."""
    code = ("import json\nfrom compiler.providers import tokens\ntexts = ['{\\n  \"a\": 1\\n}\\n', 'x\\udc80y']\n"
            "ours = [tokens.count_text(text) for text in texts]\nimport bpe_openai\n"
            "encoding = bpe_openai.get_encoding('o200k_base')\n"
            "print(json.dumps([ours, [len(encoding.encode_ordinary(text)) for text in texts]]))")
    ours, theirs = _fresh(code)  # type: ignore[misc]
    assert ours == theirs


_UNUSED_WITHOUT_CODEGEN = ("bpe_openai", "jinja2", "jsonschema", "libcst", "datamodel_code_generator")


def _loaded_by_compile(spec: Path, out: Path, targets: str) -> object:
    """What a compile without codegen (`targets`: comma-separated, "" for the catalog only) has imported."""
    code = ("import json, sys\nfrom pathlib import Path\nfrom compiler.config import Config\n"
            "from compiler.pipeline import adhoc_inputs, compile_project\n"
            "config = Config(root=Path.cwd()).model_copy(update={'codegen': False})\n"
            "build = compile_project(config, adhoc_inputs([Path(sys.argv[1])], Path.cwd()),"
            " targets=tuple(t for t in sys.argv[3].split(',') if t), out_dir=Path(sys.argv[2]))\n"
            f"unused = {_UNUSED_WITHOUT_CODEGEN!r}\n"
            "print(json.dumps([len(build.catalog.tools) > 0,"
            " sorted(m for m in sys.modules if m.split('.')[0] in unused)]))")
    return _fresh(code, str(spec), str(out), targets)


def test_a_catalog_only_compile_loads_no_tokenizer_and_no_generator(tmp_path: Path) -> None:
    """`--target none --no-codegen`: no target is lowered, so no token is counted and nothing loads a tokenizer,
    a validator or a code generator."""
    assert _loaded_by_compile(SMALL_API, tmp_path / "out", "") == [True, []]


def test_a_compile_without_codegen_loads_no_template_engine(tmp_path: Path) -> None:
    """Lowering loads the tokenizer (and jsonschema only for input examples: this API has none), never what
    code generation alone uses."""
    assert _loaded_by_compile(SMALL_API, tmp_path / "out", "anthropic,gemini") == [True, ["bpe_openai._bindings"]]


STRIPE = FIXTURES / "corpus" / "openapi" / "stripe.json"  # big enough that the provider files are spooled


def test_a_compile_of_json_loads_no_network_client_and_no_yaml(tmp_path: Path) -> None:
    """`file:` refs are read without `urllib.request`, which pulls in ssl, http.client and email (0.01-0.02 s of
    every start) for one function; PyYAML (0.01 s) only where YAML is read. The whole compile, lowering and the
    caches written beside the output included."""
    code = ("import json, sys\nfrom pathlib import Path\nfrom compiler.commands import compile\n"
            "from compiler.config import Config\n"
            "from compiler.pipeline import adhoc_inputs, compile_project, write_build\n"
            "config = Config(root=Path.cwd()).model_copy(update={'codegen': False})\n"
            "build = compile_project(config, adhoc_inputs([Path(sys.argv[1])], Path.cwd()), out_dir=Path(sys.argv[2]))\n"
            "write_build(build, Path(sys.argv[2]))\n"
            "print(json.dumps([len(build.catalog.tools) > 0, len(build.providers),"
            " [m for m in ('urllib.request', 'http.client', 'ssl', 'yaml') if m in sys.modules]]))")
    assert _fresh(code, str(JSON_API), str(tmp_path / "out")) == [True, 4, []]
    assert list((tmp_path / ".toolc-cache").glob("out.lowered-*.json"))  # the caches were written


@pytest.mark.parametrize("url", ["file:///srv/api/pet%20store.json", "file://localhost/srv/a.json",
                                 "file:schemas/pet.yaml", "file:///C:/specs/a%23b.json", "file:///"])
def test_a_file_url_names_the_path_urllib_would(url: str) -> None:
    assert file_url_path(url) == Path(url2pathname(urlparse(url).path))


def test_reading_the_sources_sets_off_no_collection() -> None:
    """Decoding a document and reading it build millions of acyclic objects that the catalog keeps: the
    collector is paused meanwhile (it would only rescan them as they are made) and what reading left is frozen
    out of its generations as reading ends."""
    code = ("import gc, json, sys\nfrom pathlib import Path\nfrom compiler import pipeline\n"
            "from compiler.config import Config\n"
            "collections, seen = [], {}\n"
            "gc.callbacks.append(lambda phase, info: collections.append(1) if phase == 'start' else None)\n"
            "read = pipeline.read_catalog\n"
            "def counted(*args, **kwargs):\n"
            "    before = len(collections)\n"
            "    catalog = read(*args, **kwargs)\n"
            "    seen.update(collections=len(collections) - before)\n"
            "    return catalog\n"
            "warn = pipeline.warn_literal_secret_presets  # the first thing after reading\n"
            "def frozen(*args, **kwargs):\n"
            "    seen.update(frozen=gc.get_freeze_count())\n"
            "    return warn(*args, **kwargs)\n"
            "pipeline.read_catalog, pipeline.warn_literal_secret_presets = counted, frozen\n"
            "build = pipeline.compile_project(Config(root=Path.cwd()),"
            " pipeline.adhoc_inputs([Path(sys.argv[1])], Path.cwd()), targets=(), out_dir=Path(sys.argv[2]))\n"
            "print(json.dumps([len(build.catalog.tools), seen['collections'], seen['frozen'] > 10_000,"
            " gc.get_freeze_count()]))")
    assert _fresh(code, str(STRIPE), "unused-out") == [417, 0, True, 0]  # unfrozen again when the compile ends

_SCRIPT = """import atexit, sys
atexit.register(lambda: print("teardown ran", file=sys.stderr))
from compiler.cli import main
sys.argv = ["toolc", *sys.argv[1:]]
main()
"""


def _toolc(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The `toolc` script in a fresh process (as the console script calls it), with its own temporary folder."""
    tmp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", _SCRIPT, *args], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp)}, check=False)


def test_compile_ends_its_process_without_teardown_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """`toolc compile` ends at once (no exit handler runs), with its status, its output flushed and no spool
    folder left, whether it succeeded or failed after spooling (`--strict`: Stripe has warnings)."""
    out = tmp_path / "out"
    ok = _toolc("compile", str(STRIPE), "--out", str(out), "--no-codegen", tmp=tmp_path / "tmp")
    assert ok.returncode == 0, ok.stderr
    assert "teardown ran" not in ok.stderr
    assert "toolc: 417 tools from 1 sources" in ok.stderr  # written before the process ended
    assert (out / "schemas" / "anthropic.json").stat().st_size > 1 << 20  # it was spooled
    failed = _toolc("compile", str(STRIPE), "--out", str(tmp_path / "strict"), "--no-codegen", "--strict",
                    "--report", str(tmp_path / "report.json"), tmp=tmp_path / "tmp")
    assert failed.returncode == 1 and "compile failed" in failed.stderr
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["warning"] > 0
    assert list((tmp_path / "tmp").iterdir()) == []


def test_other_commands_end_as_usual(tmp_path: Path) -> None:
    """Only commands that leave nothing to clean up skip the teardown (`serve`'s sinks flush at exit)."""
    done = _toolc("explain", "--help", tmp=tmp_path / "tmp")
    assert done.returncode == 0 and "teardown ran" in done.stderr


def test_help_lists_every_command_as_its_own_help_says() -> None:
    """`SUMMARIES` (what `toolc --help` lists without importing the commands) against each command's help,
    shortened as click shortens it at several widths."""
    context = click.Context(main)
    assert sorted(SUMMARIES) == main.list_commands(context)
    for name, summary in SUMMARIES.items():
        command = main.get_command(context, name)
        assert command is not None
        for width in (30, 45, 70, 200):
            assert click.Command(name, help=summary).get_short_help_str(width) == command.get_short_help_str(width)


def test_importing_a_command_sets_off_no_collection() -> None:
    """What importing a command makes lives as long as the process: the collector is paused meanwhile and what
    the import made is frozen out of its generations (once: a command imported again is not)."""
    code = ("import gc, json\nimport click\nfrom compiler.cli import main\n"
            "collections = []\n"
            "gc.callbacks.append(lambda phase, info: collections.append(1) if phase == 'start' else None)\n"
            "main.get_command(click.Context(main), 'compile')\nfrozen = gc.get_freeze_count()\n"
            "gc.unfreeze()\nmain.get_command(click.Context(main), 'compile')\n"
            "print(json.dumps([len(collections), frozen > 10_000, gc.get_freeze_count()]))")
    assert _fresh(code) == [0, True, 0]


def test_help_imports_no_command() -> None:
    code = ("import json, sys\nfrom click.testing import CliRunner\nfrom compiler.cli import main\n"
            "shown = CliRunner().invoke(main, ['--help']).output\n"
            "print(json.dumps(['serve ' in shown, sorted(m for m in sys.modules if m.startswith('compiler.commands.')"
            " or m in ('numpy', 'jsonschema', 'jinja2', 'mcp'))]))")
    assert _fresh(code) == [True, []]


def test_a_file_written_in_pieces_is_hashed_as_it_is_written() -> None:
    """The project record takes every output file's sha256; a spooled file cut out of others (Microsoft Graph's
    toolsets: 600 MB) is hashed on its way out, never read back for it."""
    files = FileSet()
    pieces = [bytes([i]) * (FileSet.SPOOL_MIN // 3) for i in range(5)]
    try:
        files.write_chunks("schemas/big.json", iter(pieces))
        files.write_chunks("schemas/small.json", iter([b"{}", b"\n"]))
        whole = b"".join(pieces)
        assert files.known_digest("schemas/big.json") == file_digest(whole) == output_hashes(files)["schemas/big.json"]
        assert files["schemas/big.json"] == whole and files["schemas/small.json"] == b"{}\n"
    finally:
        files.release_spool()
