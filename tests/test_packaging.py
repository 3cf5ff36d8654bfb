"""The wheel must carry every subpackage, the templates and the formatter settings: setuptools is told the
package list explicitly (templates/ lives outside compiler/), so a new subpackage must be added there."""

from __future__ import annotations

import tomllib

from tests.support.paths import ROOT


def test_every_subpackage_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "compiler").rglob("__init__.py")
    }
    assert sorted(found - listed) == []
    assert config["package-dir"]["compiler.templates"] == "templates"
    assert "codegen/stubs/formatter_settings/pyproject.toml" in config["package-data"]["compiler"]
