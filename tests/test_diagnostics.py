"""A diagnostic's JSON form (what `--report` and the codegen cache hold) names every field, in field order."""

from __future__ import annotations

import pickle
from dataclasses import asdict, fields

import pytest

from compiler.infra.diagnostics import Diagnostic, Severity, reason


def test_to_json_is_every_field_in_order_with_the_severity_as_text() -> None:
    diagnostic = Diagnostic(code="TC205", severity=Severity.WARNING, message="recursive $ref pruned",
                            source="graph.json", tool="openapi:graph:op", pointer="/$defs/a", provider="gemini")
    data = diagnostic.to_json()
    assert list(data) == [field.name for field in fields(Diagnostic)]
    assert data == {**asdict(diagnostic), "severity": "warning"}
    assert Diagnostic(**{**data, "severity": Severity(data["severity"])}) == diagnostic
    # Pickling lists the fields by hand (`Diagnostic.__reduce__`): a field added without it would be lost.
    assert len(diagnostic.__reduce__()[1]) == len(fields(Diagnostic))
    assert pickle.loads(pickle.dumps(diagnostic)) == diagnostic


def test_notes_with_one_message_hold_one_string_and_pickle_it_once() -> None:
    """A big API's notes repeat a few thousand messages hundreds of thousands of times; workers pickle them back."""
    made = [Diagnostic.of("TC402", "".join(["dropped readOnly", " (annotations, not for the model)"]),
                          source="g.json", tool=f"openapi:g:op{i}", pointer="/properties/id", provider="gemini")
            for i in range(100)]
    assert all(diagnostic.message is made[0].message for diagnostic in made)
    back = pickle.loads(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == made and all(diagnostic.message is back[0].message for diagnostic in back)


def test_a_reason_is_the_message_without_its_names_and_numbers() -> None:
    assert reason("name 'a.b' written as 'a_b'") == reason('name "c" written as "d"') == "name … written as …"
    assert reason("11422 tools; at most 128: forms that fit (TC771), o200k tokens") == \
        "… tools; at most …: forms that fit (TC771), o200k tokens"
    assert reason("dropped readOnly") != reason("dropped discriminator")


def test_a_row_gives_back_the_diagnostic_and_refuses_what_is_not_one() -> None:
    """`from_row` skips `__post_init__` (a recompile replays hundreds of thousands): what it makes must be what the
    constructor makes, message interned, and a row the registry or the types refuse must still raise."""
    made = Diagnostic.of("TC402", "".join(["dropped ", "readOnly"]), source="g.json", tool="openapi:g:op",
                         pointer="/properties/id", provider="gemini")
    back = Diagnostic.from_row(made.to_row())
    assert back == made and hash(back) == hash(made) and back.message is made.message
    assert Diagnostic.from_row(back.to_row()) == made  # the second of a code and severity: no check again
    with pytest.raises(ValueError, match="TC402 is"):
        Diagnostic.from_row(["TC402", "error", *made.to_row()[2:]])  # a note the registry never makes an error
    with pytest.raises(KeyError):
        Diagnostic.from_row(["TC402", "fatal", *made.to_row()[2:]])
    with pytest.raises(TypeError):
        Diagnostic.from_row(["TC402", "info", 7, *made.to_row()[3:]])
    with pytest.raises(ValueError):
        Diagnostic.from_row(made.to_row()[:6])
