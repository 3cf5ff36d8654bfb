"""The names a source's stubs get (`stub_names`) are the same made afresh or read back."""

from __future__ import annotations

from pathlib import Path

from compiler.codegen.stubs.stub_names import StubNames, make_names
from compiler.infra.diagnostics import Diagnostics


def test_names_read_back_are_the_names_made(tmp_path: Path) -> None:
    names = ["listUsers", "list_users", "class", "1st", "get" + "x" * 120, "getHTTPResponse", "tools", "\uff23\uff2c\uff21\uff33\uff33"]
    out = tmp_path / "out"
    first = StubNames(out, Diagnostics())
    made = first.of(names)
    assert made == make_names(names) and made.renamed and made.cut
    first.save()
    diagnostics = Diagnostics()
    again = StubNames(out, diagnostics)
    assert again.of(reversed(names)) == made and not diagnostics.items
