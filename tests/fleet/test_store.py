"""The parameter store: atomic rows, an interrupted run resumed without duplicates, a dead worker retried."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import cloudpickle
import pyarrow.parquet as pq
import pytest

from motor_ident.fleet.cluster import identify_fleet
from motor_ident.fleet.recordings import Recording, find_recordings
from motor_ident.fleet.store import ParameterStore
from motor_ident.fleet.worker import IdentifySettings, identify_recording, row_key
from tests.fleet.conftest import DAYS, ROBOTS

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import the tests
RESULT_TIMEOUT_S = 300


def _recordings(fleet: tuple[Path, dict[str, Any]]) -> list[Recording]:
    return find_recordings([fleet[0]], robot_config="valkyrie_arm", robot_map=None)


def test_a_crash_while_writing_leaves_no_row(
    fleet: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that dies halfway leaves neither a row nor a temporary file; the next write stores it."""
    recording = _recordings(fleet)[0]
    row = identify_recording(recording, IdentifySettings())
    store = ParameterStore(tmp_path / "store")
    write_table = pq.write_table

    def crash(table: Any, where: Any) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", crash)
    with pytest.raises(OSError, match="disk full"):
        store.write(row)
    assert store.keys() == set() and list(store.root.rglob("*")) == [store.rows_dir, store.rows_dir / recording.robot]
    monkeypatch.setattr(pq, "write_table", write_table)
    store.write(row)
    assert store.keys() == {row["key"]} and len(store.frame()) == 1


def test_an_interrupted_run_resumes_without_duplicates(
    fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path: Path
) -> None:
    """A run stopped (Ctrl-C) after 5 rows keeps them; the next run identifies only the other 10."""
    recordings = _recordings(fleet)
    store = ParameterStore(tmp_path / "store")

    def stop_after_five(done: int, total: int) -> None:
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        identify_fleet(
            recordings, IdentifySettings(), store, client, progress=stop_after_five, timeout=RESULT_TIMEOUT_S
        )
    assert len(store) == 5
    summary = identify_fleet(recordings, IdentifySettings(), store, client, timeout=RESULT_TIMEOUT_S)
    assert (summary.skipped, summary.identified, summary.failed) == (5, ROBOTS * DAYS - 5, [])
    frame = store.frame()
    assert len(frame) == ROBOTS * DAYS and frame["key"].is_unique
    assert set(frame["key"]) == {row_key(r, IdentifySettings()) for r in recordings}


def crash_worker_once(marker: Path, recording: Recording, settings: IdentifySettings) -> dict[str, Any]:
    """Kill this worker process the first time (no marker file yet), identify afterwards."""
    if not marker.exists():
        marker.touch()
        os._exit(1)
    return identify_recording(recording, settings)


def test_a_dead_worker_is_replaced_and_its_recording_identified(
    fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path: Path
) -> None:
    """A worker dying in a task: Dask reruns the task on a live worker and the row is stored once."""
    recordings = _recordings(fleet)[:2]
    store = ParameterStore(tmp_path / "store")
    marker = tmp_path / "crashed"

    def task(recording: Recording, settings: IdentifySettings) -> dict[str, Any]:
        return crash_worker_once(marker, recording, settings)

    summary = identify_fleet(recordings, IdentifySettings(), store, client, task=task, timeout=RESULT_TIMEOUT_S)
    assert marker.exists()
    assert (summary.identified, summary.failed) == (2, []) and len(store.frame()) == 2
