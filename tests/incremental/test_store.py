"""The cache store writes each file whole: a compile interrupted mid-write (Ctrl-C) leaves no half-written file
beside the output, and the interrupt still reaches the command (which answers exit 130)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics


def interrupt(*_args: Any, **_kwargs: Any) -> Any:
    raise KeyboardInterrupt


def leftovers(out_dir: Path) -> list[str]:
    return sorted(path.name for path in store.cache_path(out_dir, "probe").parent.glob("*.partial"))


def test_an_interrupted_save_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "out"
    monkeypatch.setattr(Path, "replace", interrupt)  # the partial file written, not yet in place
    with pytest.raises(KeyboardInterrupt):
        store.save(out_dir, "probe", store.Entry("key", {"a": 1}))
    assert leftovers(out_dir) == []
    assert not store.cache_path(out_dir, "probe").exists()


def test_an_interrupted_blob_save_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir, blob = tmp_path / "out", tmp_path / "tools.json"
    blob.write_bytes(b"[]" * 1000)
    monkeypatch.setattr(Path, "replace", interrupt)  # the blob linked in as a partial file, not yet in place
    with pytest.raises(KeyboardInterrupt):
        store.save_with_blob(out_dir, "probe", store.Entry("key", {}), blob)
    assert leftovers(out_dir) == []
    assert not store.cache_path(out_dir, "probe", suffix=".blob").exists()


def test_a_cache_file_is_decoded_with_the_collector_paused_then_frozen(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "out"
    store.save(out_dir, "probe", store.Entry("key", {"a": [1, 2]}))
    seen: list[bool] = []
    real = store.orjson.loads
    monkeypatch.setattr(store.orjson, "loads", lambda raw: seen.append(gc.isenabled()) or real(raw))
    gc.unfreeze()
    try:
        entry = store.load(out_dir, "probe", Diagnostics())
        assert gc.get_freeze_count() > 0, "what was decoded is out of the collector's generations"
    finally:
        gc.unfreeze()
    assert entry is not None and entry.payload == {"a": [1, 2]}
    assert seen == [False], "decoded while the cyclic collector is paused"
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that had paused it finds it paused still
        store.load(out_dir, "probe", Diagnostics())
        assert not gc.isenabled()
    finally:
        gc.enable()
    store.cache_path(out_dir, "probe").write_bytes(b"{")
    assert store.load(out_dir, "probe", Diagnostics()) is None and gc.isenabled(), "a corrupted file too"
