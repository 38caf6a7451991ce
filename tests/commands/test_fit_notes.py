"""What `identify` says about the record's rate and what the fit leaves out: the derivatives' window chosen
for the rate, joints of the recording that the robot config ignores, joints the fit predicts worse than
their mean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from motor_ident.core.estimation.signals import MIN_WINDOW_SAMPLES, Differentiation


@pytest.mark.parametrize(
    ("rate_hz", "window_s", "samples"), [(100.0, 0.11, 11), (1000.0, 0.05, 51), (5000.0, 0.05, 251)]
)
def test_default_window_holds_enough_samples_at_every_rate(rate_hz: float, window_s: float, samples: int) -> None:
    """The default window: 0.05 s, lengthened to 11 samples at low rates; the note says which and how many."""
    default = Differentiation()
    assert default.window_at(1.0 / rate_hz) == pytest.approx(window_s)
    assert f"{window_s:g} s window ({samples} samples at {rate_hz:g} Hz" in default.describe(1.0 / rate_hz)
    assert default.few_samples(1.0 / rate_hz) is None
    explicit = Differentiation(window_s=0.05)
    assert explicit.window_at(1.0 / rate_hz) == 0.05
    note = explicit.few_samples(1.0 / rate_hz)
    assert (note is not None) == (0.05 * rate_hz < MIN_WINDOW_SAMPLES), note


def test_identify_names_ignored_joints_and_a_negative_r2(tmp_path: Path) -> None:
    """A 100 Hz NPZ with an extra moving joint and a torque offset on one joint: the window chosen, the
    ignored joint named with its motion, the joint with R2 < 0 warned about; exit 0."""
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    record, _ = excitation_record(regressor, config.nominal_parameters(regressor), duration=10.0, rate_hz=100.0)
    tau = record.tau.copy()
    tau[:, 2] += 5.0 * tau[:, 2].std()  # a torque sensor's offset: no parameter of the model can take it
    gripper = 0.8 * np.sin(2.0 * np.pi * 0.3 * record.t)
    data = tmp_path / "arm.npz"
    np.savez(
        data,
        t=record.t,
        q=np.column_stack([record.q, gripper]),
        tau=np.column_stack([tau, np.zeros_like(gripper)]),
        joint_names=np.array([*config.joints, "gripper"]),
    )
    run = subprocess.run(
        [sys.executable, "-m", "motor_ident.cli", "identify", str(data), "--robot", "valkyrie_arm", "--no-report"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    err = " ".join(run.stderr.split())  # unwrapped
    assert "0.11 s window (11 samples at 100 Hz; the default 0.05 s lengthened" in err, err
    assert "positions of gripper (moves over 1.6 rad) are ignored" in err, err
    bad = config.joints[2]
    assert f"joint {bad}: training R2 -" in err, err
    assert all(f"joint {name}: training R2" not in err for name in config.joints if name != bad), err
