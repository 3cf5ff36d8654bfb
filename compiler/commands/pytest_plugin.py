"""The pytest plugin (entry point `pytest11: toolc = compiler.commands.pytest_plugin`): snapshot the compiled
tools from your own tests.

    def test_tools_unchanged(toolc_tools, toolc_snapshot):
        assert toolc_tools("openai-chat") == toolc_snapshot

`toolc_tools(target=None, config=None)` compiles the project in memory (recordings, never live servers) and
returns `{tool_id: definition}` as lowered for `target` (any of `compiler.providers.registry.TARGETS`; default the
first, `openai-chat`), or the IR when `target="ir"`. `config` defaults to the `toolc_config` ini option (default
`toolc.yaml`), relative to the pytest root. A project is compiled once per session. A compile with errors fails
the test with the diagnostics. `toolc_snapshot` is syrupy's `snapshot` with `ToolSchemaExtension`; accept changes with `pytest --snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ToolsFactory = Callable[..., dict[str, Any]]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("toolc_config", "toolc project file used by the toolc_tools fixture", default="toolc.yaml")


def _compiled_tools(config_path: Path, target: str) -> dict[str, Any]:
    from compiler.config import load_config
    from compiler.infra.diagnostics import CompilerError
    from compiler.infra.serialize import tool_to_json
    from compiler.pipeline import compile_project

    try:
        config = load_config(config_path)
        targets = () if target == "ir" else (target,)
        build = compile_project(config, targets=targets)
    except CompilerError as exc:
        pytest.fail(f"toolc: {exc.diagnostic.render()}", pytrace=False)
    if build.diagnostics.has_errors:
        errors = "\n".join(d.render() for d in build.diagnostics.sorted() if d.severity.value == "error")
        pytest.fail(f"toolc: the project does not compile:\n{errors}", pytrace=False)
    if target == "ir":
        return {tool.id: tool_to_json(tool) for tool in build.catalog.tools}
    lowered = build.providers.get(target)
    if lowered is None:
        pytest.fail(f"toolc: no tools lowered for target {target!r}", pytrace=False)
    return dict(lowered.tools)


@pytest.fixture(scope="session")
def _toolc_cache() -> dict[tuple[Path, str], dict[str, Any]]:
    return {}


@pytest.fixture
def toolc_tools(pytestconfig: pytest.Config, _toolc_cache: dict[tuple[Path, str], dict[str, Any]]) -> ToolsFactory:
    def tools(target: str | None = None, config: str | Path | None = None) -> dict[str, Any]:
        if target is None:  # the registry's first target (OpenAI Chat Completions)
            from compiler.providers.registry import TARGETS

            target = TARGETS[0]
        path = Path(config or str(pytestconfig.getini("toolc_config")))
        if not path.is_absolute():
            path = pytestconfig.rootpath / path
        key = (path.resolve(), target)
        if key not in _toolc_cache:
            _toolc_cache[key] = _compiled_tools(path, target)
        return _toolc_cache[key]

    return tools


SYRUPY_MISSING = ("toolc_snapshot needs syrupy's pytest plugin, which is not active here: install it with "
                  "`pip install 'toolc[pytest]'` (or `pip install syrupy`), then write the first snapshots with "
                  "`pytest --snapshot-update`")


@pytest.fixture
def toolc_snapshot(request: pytest.FixtureRequest) -> Any:
    # syrupy is asked for only here, so the plugin loads (and `toolc_tools` works) without it.
    if not request.config.pluginmanager.has_plugin("syrupy"):
        pytest.fail(SYRUPY_MISSING, pytrace=False)
    from compiler.drift.snapshot import ToolSchemaExtension

    return request.getfixturevalue("snapshot").use_extension(ToolSchemaExtension)
