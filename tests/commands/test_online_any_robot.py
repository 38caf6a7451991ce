"""identify --online for any robot: a plain URDF, the identifier's defaults or a scenario naming only them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from motor_ident.commands.online_replay import online_replay
from motor_ident.io.data_spec import load_spec, read_with_spec
from motor_ident.io.preprocess import prepare_record
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import REPO

LOGS = REPO / "examples" / "arm_log"


def test_online_replay_runs_for_a_plain_urdf(tmp_path: Path) -> None:
    config = load_robot_config(REPO / "config" / "urdf" / "valkyrie_arm.urdf")
    spec = load_spec(LOGS / "spec.yaml")
    record, _ = prepare_record(read_with_spec(LOGS / "identification.csv", spec), spec.preparation)
    args = (config.joints, record.t, record.q, record.qd, record.tau)
    replay = online_replay("", *args, config=config)  # the defaults, in time: 5 s at the log's 100 Hz
    counts = replay["counts"]
    assert (counts.decimation, counts.window, counts.refit_every) == (1, 500, 10)
    assert counts.input_rate_hz == pytest.approx(100.0)
    assert replay["gate_opened_at_s"] is not None and replay["gate"][-1][1] and replay["too_short"] == ""
    assert replay["r2"].shape[1] == 4 and np.all(replay["r2"][-1] > 0.9)
    scenario = tmp_path / "identifier_only.yaml"
    scenario.write_text("identifier:\n  ros__parameters:\n    window_duration: 40.0\n")
    long = online_replay(str(scenario), *args, config=config)
    assert long["gate_opened_at_s"] is None and "buffer filling" in long["reason"]
    assert "too short for the online identifier's window" in long["too_short"] and "spans 31 s" in long["too_short"]
