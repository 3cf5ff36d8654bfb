"""A syrupy extension that keeps one pretty-printed JSON file per value of a test parameter (for the provider
snapshots: one file per target), so a reviewer reads one diff per provider.

A file maps each snapshot's name to its data: keys sorted, two-space indent, non-ASCII kept, newline at the end.
Snapshots are compared in that same canonical text, so key order never matters. syrupy's own bookkeeping still
applies: a missing snapshot fails, an unused one is reported (and fails the run unless `--snapshot-warn-unused`),
and `--snapshot-update` writes, merges and prunes these files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.base import AbstractSyrupyExtension

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import SerializableData, SnapshotIndex


def canonical(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def _read(location: str) -> dict[str, Any]:
    path = Path(location)
    if not path.is_file():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{location}: a snapshot file holds one JSON object (snapshot name → data)")
    return loaded


def _write(location: str, entries: dict[str, Any]) -> None:
    path = Path(location)
    if not entries:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(canonical(entries) + "\n", encoding="utf-8")


class JSONPerParamExtension(AbstractSyrupyExtension):
    """Files live in `__snapshots__/<test module>/<value of group_by>.json`; subclass to set `group_by`."""

    file_extension = "json"
    group_by: ClassVar[str] = "target"

    def serialize(self, data: SerializableData, **_: Any) -> str:
        return canonical(data)

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(Path(super().dirname(test_location=test_location)) / test_location.basename)

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        params = getattr(test_location.item, "callspec", None)
        if params is None or cls.group_by not in params.params:
            raise LookupError(f"{test_location.nodeid}: a test with this snapshot extension is parametrized "
                              f"by {cls.group_by!r}")
        return str(params.params[cls.group_by])

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return Path(snapshot_location).parent == Path(cls.dirname(test_location=test_location))

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        return Path(filepath).parent == Path(self.dirname(test_location=test_location))

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        collection = SnapshotCollection(location=snapshot_location)
        for name, data in _read(snapshot_location).items():
            collection.add(Snapshot(name=name, data=canonical(data)))
        return collection

    def read_snapshot_data_from_location(self, *, snapshot_location: str, snapshot_name: str,
                                         session_id: str) -> str | None:
        entries = _read(snapshot_location)
        return canonical(entries[snapshot_name]) if snapshot_name in entries else None

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: SnapshotCollection,
                                  name_order: dict[str, int] | None = None) -> None:
        entries = _read(snapshot_collection.location)
        entries.update({snapshot.name: json.loads(str(snapshot.data)) for snapshot in snapshot_collection})
        _write(snapshot_collection.location, entries)

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        entries = _read(snapshot_location)
        _write(snapshot_location, {name: data for name, data in entries.items() if name not in snapshot_names})
