"""fleet identify under faults: bad files, one file under two robots, relative paths, a full disk, an
unwritable store, an unreachable or lost scheduler. No row is lost, none is stored twice, and each
fault is said once, in one line, without a traceback.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from motor_ident.cli import main
from motor_ident.fleet.cluster import identify_fleet
from motor_ident.fleet.recordings import find_recordings
from motor_ident.fleet.store import ParameterStore
from motor_ident.fleet.worker import IdentifySettings, row_key
from tests.fleet.conftest import COMMAND_TIMEOUT_S, DAYS, ROBOTS, motor_ident

RESULT_TIMEOUT_S = 300


@pytest.fixture
def damaged_fleet(fleet: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    """robot_00 and robot_01 of the fleet (10 recordings): day 0 of robot_00 truncated, day 1 with a flipped
    byte (its CRC fails), and robot_01's day 0 copied under a third robot."""
    root = tmp_path / "fleet"
    for robot in ("robot_00", "robot_01"):
        shutil.copytree(fleet[0] / robot, root / robot)
    cut = root / "robot_00" / "day_000.npz"
    cut.write_bytes(cut.read_bytes()[:3000])
    flipped = root / "robot_00" / "day_001.npz"
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    (root / "robot_09").mkdir()
    shutil.copy(root / "robot_01" / "day_000.npz", root / "robot_09" / "day_000.npz")
    return root


def test_bad_files_fail_alone_and_a_copy_under_two_robots_is_two_rows(
    damaged_fleet: Path, client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunked run from a relative path: the 2 damaged files fail by name, the 9 others are rows (the copy too)."""
    monkeypatch.chdir(damaged_fleet.parent)
    recordings = find_recordings(["fleet"], robot_config="valkyrie_arm", robot_map=None)
    assert len(recordings) == 2 * DAYS + 1 and all(r.path.is_absolute() for r in recordings)
    store = ParameterStore(tmp_path / "store")
    summary = identify_fleet(
        recordings, IdentifySettings(), store, client, chunk_samples=600, timeout=RESULT_TIMEOUT_S
    )  # chunks: the planner reads each file's length first
    failed = {Path(path).name: error for path, error in summary.failed}
    assert set(failed) == {"day_000.npz", "day_001.npz"} and summary.identified == 2 * DAYS - 1
    assert "BadZipFile" in failed["day_000.npz"] and "BadZipFile" in failed["day_001.npz"]
    frame = store.frame()
    assert len(frame) == len(store) == 2 * DAYS - 1 and not frame.duplicated(["robot", "key"]).any()
    copies = frame[frame["key"] == row_key(recordings[-1], IdentifySettings())]
    assert sorted(copies["robot"]) == ["robot_01", "robot_09"]


def test_a_full_disk_stops_the_run_once_and_the_rerun_completes(
    fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC on the 4th row: the run stops, 3 rows kept, 12 not done; the rerun stores exactly those 12."""
    recordings = find_recordings([fleet[0]], robot_config="valkyrie_arm", robot_map=None)
    store = ParameterStore(tmp_path / "store")
    write = ParameterStore.write

    def full_after_three(self: ParameterStore, row: Any) -> Path:
        if len(self) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, row)

    monkeypatch.setattr(ParameterStore, "write", full_after_three)
    summary = identify_fleet(recordings, IdentifySettings(), store, client, timeout=RESULT_TIMEOUT_S)
    assert "No space left on device" in summary.stopped and len(store) == 3
    assert (summary.identified, summary.not_done, summary.failed) == (3, ROBOTS * DAYS - 3, [])
    monkeypatch.setattr(ParameterStore, "write", write)
    again = identify_fleet(recordings, IdentifySettings(), store, client, timeout=RESULT_TIMEOUT_S)
    assert (again.skipped, again.identified, again.not_done) == (3, ROBOTS * DAYS - 3, 0)
    assert len(store.frame()) == ROBOTS * DAYS and store.frame()["key"].is_unique


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--store", "{file}/store"], "cannot be written"),
        (["--store", "{tmp}/store", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1"], "cannot reach"),
        (["--store", "{tmp}/store", "--workers", "0"], "--workers"),
    ],
)
def test_an_unusable_store_or_cluster_is_one_line_before_any_work(
    fleet: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    says: str,
) -> None:
    """A store under a file, no scheduler at the address, --workers 0: exit 2 and one line, nothing stored."""
    (tmp_path / "file").write_text("")
    argv = ["fleet", "identify", str(fleet[0]), "--robot", "valkyrie_arm"]
    argv += [o.format(file=tmp_path / "file", tmp=tmp_path) for o in options]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert not (tmp_path / "store" / "rows").exists() or not list((tmp_path / "store" / "rows").rglob("*.parquet"))


@pytest.fixture
def external_scheduler(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A ``dask scheduler`` process on 127.0.0.1 with one ``dask worker`` process; both stopped after."""
    bin_dir = Path(sys.executable).parent
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--scheduler-file", file],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline and scheduler.poll() is None:
            time.sleep(0.1)  # polling for the scheduler's address file, bounded
        import json

        address = json.loads(file.read_text())["address"]
        worker = subprocess.Popen(
            [bin_dir / "dask", "worker", address, "--nthreads", "1", "--no-dashboard", "--death-timeout", "30"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        yield scheduler, address
    finally:
        for process in (worker, scheduler):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=60)


@pytest.mark.slow
def test_a_lost_scheduler_is_said_once_and_the_rerun_resumes(
    fleet: tuple[Path, dict[str, Any]],
    external_scheduler: tuple[subprocess.Popen[bytes], str],
    client: Any,
    tmp_path: Path,
) -> None:
    """The external scheduler killed after the first row: one 'stopped' line, exit 1; the rerun loses and
    repeats no row."""
    scheduler, address = external_scheduler
    store = tmp_path / "store"
    command = [str(Path(sys.executable).parent / "motor-ident"), "fleet", "identify", str(fleet[0])]
    command += ["--robot", "valkyrie_arm", "--store", str(store), "--scheduler", address]
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    while not list(store.glob("rows/*/*.parquet")) and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.1)  # polling for the first row, bounded
    scheduler.terminate()
    _, err = run.communicate(timeout=COMMAND_TIMEOUT_S)
    stored = len(ParameterStore(store))
    assert run.returncode == 1 and "Traceback" not in err, err
    stopped = [line for line in err.splitlines() if line.startswith("stopped:")]
    assert stopped == [
        f"stopped: lost the Dask scheduler {address}: {ROBOTS * DAYS - stored} recordings not done; "
        "run the same command again to resume"
    ], err
    again = motor_ident(*command[1:-1], client.scheduler.address)
    assert again.returncode == 0, again.stderr
    assert f"{ROBOTS * DAYS - stored} recordings identified, {stored} already in the store" in again.stdout
    frame = pd.read_parquet(store / "rows")
    assert len(frame) == ROBOTS * DAYS and frame["key"].is_unique


def test_a_copy_under_the_same_robot_is_one_row_and_not_counted_twice(
    fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path: Path
) -> None:
    """The same file twice under one robot: one row, 1 identified and 1 copy (the summary used to say 2 identified)."""
    root = tmp_path / "fleet" / "robot_00"
    root.mkdir(parents=True)
    shutil.copy(fleet[0] / "robot_00" / "day_000.npz", root / "day_000.npz")
    shutil.copy(fleet[0] / "robot_00" / "day_000.npz", root / "again.npz")
    recordings = find_recordings([root.parent], robot_config="valkyrie_arm", robot_map=None)
    store = ParameterStore(tmp_path / "store")
    summary = identify_fleet(recordings, IdentifySettings(), store, client, timeout=RESULT_TIMEOUT_S)
    assert (summary.identified, summary.copies, summary.skipped, summary.failed) == (1, 1, 0, [])
    assert len(store) == 1
