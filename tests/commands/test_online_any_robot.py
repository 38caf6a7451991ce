"""identify --online for any robot: a plain URDF, the identifier's defaults or a scenario naming only them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from motor_ident.commands.identify import online_replay
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
    defaults = online_replay("", *args, config=config)  # 1 kHz defaults: decimation 10 leaves 310 samples
    assert defaults["gate_opened_at_s"] is None and "buffer filling" in defaults["reason"]
    scenario = tmp_path / "identifier_only.yaml"
    scenario.write_text("identifier:\n  ros__parameters:\n    decimation: 1\n")
    replay = online_replay(str(scenario), *args, config=config)
    assert replay["gate_opened_at_s"] is not None and replay["gate"][-1][1]
    assert replay["r2"].shape[1] == 4 and np.all(replay["r2"][-1] > 0.9)
