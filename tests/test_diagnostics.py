"""A diagnostic's JSON form (what `--report` and the codegen cache hold) names every field, in field order."""

from __future__ import annotations

import pickle
from dataclasses import asdict, fields

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
