"""The registry of diagnostic codes (`compiler/codes.py`) is the one place a code's severity is decided, and
it agrees with the codes toolc raises (`tests/test_readme.py` checks the README's table against it)."""

from __future__ import annotations

import re

import pytest

from compiler import codes
from compiler.codes import CODES, Code, Severity, UnknownCode
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from tests.support import code_table
from tests.support.imports import import_edges
from tests.support.paths import ROOT

ADD = 'add `Code("{code}", <severity>, "<summary>"),` to _CODES in compiler/codes.py'


def _unregistered(found: dict[str, list[str]], fix: str = ADD) -> list[str]:
    return [f"{code} ({', '.join(places[:3])}): {fix.format(code=code)}" for code, places in sorted(found.items())
            if code not in CODES]


def test_every_code_toolc_raises_is_registered() -> None:
    """Every string literal "TCnnn" in `compiler/` and the router's static modules."""
    found = code_table.literals()
    assert len(found) > 100, "no codes found: the pattern is stale"
    assert _unregistered(found) == []


def test_every_code_a_docstring_or_comment_names_is_registered() -> None:
    """A code named in prose is one a reader will look up (fit/forms.py said TC774 for TC772)."""
    stale = "no such code: correct the text, or " + ADD
    assert _unregistered(code_table.mentions(), stale) == []


def test_every_registered_code_is_declared_by_one_module() -> None:
    """The README's "where": the module whose constant (`NETWORK_REF = "TC201"`) stands for the code."""
    declared = code_table.declarations()
    problems = [f"{code}: no module declares it (a constant where it is raised), or remove it from the registry"
                for code in CODES if code not in declared]
    problems += [f"{code}: declared in {', '.join(modules)}; declare it once and import it"
                 for code, modules in sorted(declared.items()) if len(modules) > 1]
    assert problems == []


def test_the_registry_is_in_code_order() -> None:
    assert list(CODES) == sorted(CODES)


def test_a_code_declared_twice_in_the_registry_is_refused() -> None:
    with pytest.raises(ValueError, match="TC101 is registered twice"):
        codes._by_code((Code("TC101", Severity.ERROR, "a"), Code("TC101", Severity.ERROR, "b")))


def test_a_second_severity_needs_its_context() -> None:
    with pytest.raises(ValueError, match=re.escape("TC101: `also` and `when` go together")):
        codes._by_code((Code("TC101", Severity.ERROR, "a", also=Severity.WARNING),))


def test_the_registry_imports_nothing_of_toolc() -> None:
    """Every floor raises diagnostics, so the registry sits below them all."""
    edges = import_edges(ROOT / "compiler", "compiler")
    assert [edge.target for edge in edges if edge.source == "compiler.codes"] == []


def test_the_severity_is_the_registrys() -> None:
    sink = Diagnostics()
    sink.report("TC306", "a parameter needs a `name`", source="api.yaml")
    sink.report("TC416", "two tools are named `get`")
    sink.report("TC401", "`format` moved into the description")
    assert [(found.code, found.severity) for found in sink] == [
        ("TC306", Severity.WARNING), ("TC416", Severity.ERROR), ("TC401", Severity.INFO)]
    assert Diagnostic.of("TC999", "internal error: boom").severity is Severity.ERROR


def test_a_severity_the_registry_does_not_allow_is_a_bug() -> None:
    with pytest.raises(ValueError, match=re.escape("TC306 is warning in compiler/codes.py, not error")):
        Diagnostic("TC306", Severity.ERROR, "a parameter needs a `name`")
    with pytest.raises(ValueError, match=re.escape("TC206 is error in compiler/codes.py, not warning")):
        Diagnostics().report("TC206", "a $ref loop with no content", severity=Severity.WARNING)


def test_a_code_that_changes_severity_with_context_takes_only_the_listed_ones() -> None:
    sink = Diagnostics()
    sink.report("TC201", "network $ref refused")
    sink.report("TC201", "network $ref refused while pulling files in", severity=Severity.WARNING)
    assert [found.severity for found in sink] == [Severity.ERROR, Severity.WARNING]
    with pytest.raises(ValueError, match=re.escape("TC201 is error or warning in compiler/codes.py, not info")):
        sink.report("TC201", "network $ref refused", severity=Severity.INFO)
    assert CODES["TC201"].meaning().startswith("network ref (a warning when pulling files in")


def test_an_unregistered_code_names_the_registry() -> None:
    unknown = "'TC000' is not registered: add it to _CODES in compiler/codes.py"
    with pytest.raises(UnknownCode, match=re.escape(unknown)):
        Diagnostics().report("TC000", "no such code")


def test_the_readme_table_renders_a_second_severity_and_the_declaring_module() -> None:
    rows = code_table.render_rows({"TC201": CODES["TC201"], "TC306": CODES["TC306"]},
                                  {"TC201": ["refs/codes.py"], "TC306": ["sources/openapi/codes.py"]})
    assert rows == [
        "| TC201 | error, warning | network ref (a warning when pulling files in: the tools that need it pay, "
        "TC302 / TC318) | `refs/codes.py` |",
        "| TC306 | warning | bad object | `sources/openapi/codes.py` |"]
