"""fleet simulate -> identify (2 Dask workers) -> report, as processes, checked against the injected truth.

``fleet identify`` runs on the session's LocalCluster through ``--scheduler`` (the cluster's start
is paid once for every fleet test); ``--workers`` starts the same `local_cluster` in the process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from motor_ident.fleet.drift import DriftSettings, detect, long_table, z_scores
from motor_ident.fleet.report import write_fleet_report
from motor_ident.fleet.store import ParameterStore
from tests.fleet.conftest import DAYS, ROBOTS, motor_ident


@pytest.fixture(scope="module")
def reported(
    fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The fleet identified by ``fleet identify --scheduler`` on the 2-worker LocalCluster, reported with --json."""
    recordings, _ = fleet
    root = tmp_path_factory.mktemp("reported")
    store, alarms = root / "store", root / "alarms.json"
    identified = motor_ident(
        "fleet", "identify", str(recordings), "--robot", "valkyrie_arm", "--store", str(store),
        "--scheduler", client.scheduler.address,
        "--json", str(root / "run.json"),
    )  # fmt: skip
    assert identified.returncode == 0, identified.stderr
    report = motor_ident("fleet", "report", "--store", str(store), "--json", str(alarms))
    assert report.returncode == 0, report.stderr
    return {
        "store": store,
        "run": json.loads((root / "run.json").read_text()),
        "alarms": json.loads(alarms.read_text()),
    }


def test_every_recording_is_one_row(reported: dict[str, Any]) -> None:
    """15 recordings -> 15 rows with unique keys, readable by pandas and DuckDB, with values, stds and metrics."""
    assert reported["run"]["identified"] == ROBOTS * DAYS and reported["run"]["failed"] == []
    frame = pd.read_parquet(reported["store"] / "rows")
    assert len(frame) == ROBOTS * DAYS and frame["key"].is_unique
    assert frame.groupby("robot").size().to_dict() == {f"robot_{r:02d}": DAYS for r in range(ROBOTS)}
    for column in ("p.elbow.fv", "std.elbow.fv", "r2.elbow", "nrmse.elbow", "condition_number", "config_hash"):
        assert column in frame.columns
    assert (frame["r2.elbow"] > 0.99).all() and (frame["std.elbow.fv"] > 0).all()
    assert set(frame["motor_ident_version"]) == {"0.1.0"} and set(frame["torque_source"]) == {"record tau"}
    glob = str(reported["store"] / "rows" / "*" / "*.parquet")
    days = duckdb.sql(f"SELECT count(DISTINCT date) FROM read_parquet('{glob}', union_by_name=true)").fetchall()
    assert days == [(DAYS,)]


def test_every_injected_drift_is_found(fleet: tuple[Path, dict[str, Any]], reported: dict[str, Any]) -> None:
    """Each drift of truth.json alarms on its robot and parameter from its first day on, every day after."""
    _, truth = fleet
    alarms = reported["alarms"]["alarms"]
    assert len(truth["drifts"]) == 2
    for drift in truth["drifts"]:
        days = {a["day"] for a in alarms if (a["robot"], a["parameter"]) == (drift["robot"], drift["parameter"])}
        assert days == set(range(drift["from_day"], DAYS)), (drift, days)
        assert all(a["joint"] == drift["joint"] for a in alarms if a["parameter"] == drift["parameter"])


def test_no_alarm_without_a_true_change(fleet: tuple[Path, dict[str, Any]], reported: dict[str, Any]) -> None:
    """The stationary robot has no alarm, and every alarm is on a base parameter whose truth moved."""
    _, truth = fleet
    drifting = {d["robot"] for d in truth["drifts"]}
    stationary = set(truth["robots"]) - drifting
    assert stationary == {"robot_00"}
    report = reported["alarms"]
    assert report["tests"] == ROBOTS * (DAYS - report["baseline_days"]) * len(truth["base_parameters"])
    names = truth["base_parameters"]
    for alarm in report["alarms"]:
        assert alarm["robot"] not in stationary
        by_day = np.asarray(truth["truth"][alarm["robot"]]["base_parameters_by_day"])
        k = names.index(alarm["parameter"])
        assert abs(by_day[alarm["day"], k] - by_day[0, k]) > 1e-6, alarm
        assert abs(alarm["statistic"]) > alarm["threshold"] > 3.0


def test_a_second_run_identifies_nothing(
    fleet: tuple[Path, dict[str, Any]], reported: dict[str, Any], tmp_path: Path
) -> None:
    """The same recordings again, robots mapped to their config by --robot-map: all skipped, no row added."""
    recordings, _ = fleet
    robot_map = tmp_path / "robots.yaml"
    robot_map.write_text("".join(f"robot_{r:02d}: valkyrie_arm\n" for r in range(ROBOTS)))
    again = motor_ident(
        "fleet", "identify", str(recordings), "--robot-map", str(robot_map), "--store", str(reported["store"]),
        "--workers", "1",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"0 recordings identified, {ROBOTS * DAYS} already in the store" in again.stdout
    assert len(list((reported["store"] / "rows").glob("*/*.parquet"))) == ROBOTS * DAYS
    robot_map.write_text("robot_00: valkyrie_arm\n")
    unmapped = motor_ident(
        "fleet", "identify", str(recordings), "--robot-map", str(robot_map), "--store", str(tmp_path)
    )
    assert unmapped.returncode == 2 and "robot 'robot_01'" in unmapped.stderr and "--robot-map" in unmapped.stderr


def test_html_report_shows_each_joint(reported: dict[str, Any], tmp_path: Path) -> None:
    """The HTML report of one robot names the test and embeds one PNG per joint, its alarms in red."""
    table = long_table(ParameterStore(reported["store"]).frame())
    table = table[table["robot"] == "robot_01"]
    settings = DriftSettings()
    page = write_fleet_report(tmp_path, table, z_scores(table, settings), detect(table, settings)).read_text()
    images = sorted(p.name for p in tmp_path.glob("*.png"))
    assert images == [
        f"robot_01__{j}.png" for j in sorted(["shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"])
    ]
    assert all(f"src='{name}'" in page for name in images)
    assert "two-sample z-test" in page and "elbow.fv" in page
