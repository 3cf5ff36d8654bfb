"""The provider snapshots' storage (`tests.support.snapshots`), in a scratch project: one sorted, pretty-printed
JSON file per target; a changed value fails; an entry no test asserts is reported as unused and fails the run;
`--snapshot-update` rewrites, and prunes what is unused. Also: the committed files are in that canonical form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.snapshots import canonical

SCRATCH_TEST = '''
import pytest

from tests.support.snapshots import JSONPerParamExtension


@pytest.mark.parametrize("case", ["b", "a"])
@pytest.mark.parametrize("target", ["one", "two"])
def test_report(target, case, snapshot):
    assert {"z": [target, case], "a": "ünïcode"} == snapshot.use_extension(JSONPerParamExtension)
'''
COMMITTED = ROOT / "tests" / "providers" / "__snapshots__" / "test_snapshots"


def _files(root: Path) -> dict[str, dict[str, object]]:
    folder = root / "__snapshots__" / "test_report"
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.iterdir())}


def test_one_file_per_target_and_unused_entries_fail(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_report=SCRATCH_TEST)
    pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(passed=4)
    files = _files(pytester.path)
    assert list(files) == ["one.json", "two.json"]
    assert list(files["one.json"]) == ["test_report[one-a]", "test_report[one-b]"]
    assert files["two.json"]["test_report[two-b]"] == {"a": "ünïcode", "z": ["two", "b"]}
    one = pytester.path / "__snapshots__" / "test_report" / "one.json"
    assert one.read_text(encoding="utf-8") == canonical(files["one.json"]) + "\n"
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)

    stale = {**files["one.json"], "test_report[one-gone]": {"z": 1}}
    one.write_text(canonical(stale) + "\n", encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(passed=4)
    assert "test_report[one-gone]" not in _files(pytester.path)["one.json"]

    changed = {**files["two.json"], "test_report[two-a]": {"a": "ünïcode", "z": ["two", "changed"]}}
    (pytester.path / "__snapshots__" / "test_report" / "two.json").write_text(canonical(changed) + "\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3, failed=1)


def test_committed_provider_snapshots_are_canonical_one_file_per_target() -> None:
    from tests.support.providers import TARGETS

    assert sorted(path.stem for path in COMMITTED.glob("*.json")) == sorted(TARGETS)
    for path in COMMITTED.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert text == canonical(json.loads(text)) + "\n", path.name
