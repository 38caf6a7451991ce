"""Records of raw torque measurements (currents, PWM, wrench) in CSV and NPZ, with and without tau."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from motor_ident.errors import DataError
from motor_ident.io.data import JointRecord, load_record, record_from_columns, save_record


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_raw_measurements_round_trip(tmp_path: Path, rng: np.random.Generator, suffix: str) -> None:
    """current, pwm and wrench survive a save / load; a record without joint torques keeps tau unmeasured."""
    N = 7
    record = JointRecord(
        t=np.arange(N) * 0.01,
        joint_names=("a", "b"),
        q=rng.normal(size=(N, 2)),
        tau=np.full((N, 2), np.nan),
        motor_names=("m2", "m1"),
        current=rng.normal(size=(N, 2)),
        pwm=rng.normal(size=(N, 2)),
        wrench=rng.normal(size=(N, 6)),
    )
    path = tmp_path / f"r{suffix}"
    save_record(path, record)
    back = load_record(path)
    assert not back.tau_measured
    assert back.motor_names == ("m2", "m1")
    for name in ("q", "current", "pwm", "wrench"):
        np.testing.assert_allclose(getattr(back, name), getattr(record, name), rtol=1e-9, err_msg=name)
    picked = back.select(["b", "a"])
    np.testing.assert_allclose(picked.current, record.current, rtol=1e-9, err_msg="motors are not reordered")


def test_columns_need_tau_or_a_raw_measurement() -> None:
    """Without tau.<joint> and without any raw column, the missing columns are named; partial motors too."""
    t, q = np.arange(3.0), np.zeros(3)
    with pytest.raises(DataError, match=r"tau\.a"):
        record_from_columns({"t": t, "q.a": q}, "x.csv")
    with pytest.raises(DataError, match=r"pwm\.m2"):
        record_from_columns({"t": t, "q.a": q, "current.m1": q, "current.m2": q, "pwm.m1": q}, "x.csv")
    record = record_from_columns(
        {"t": t, "q.a": q, "wrench.fx": q, **{f"wrench.{k}": q for k in "fy fz tx ty tz".split()}}, "x"
    )
    assert record.wrench is not None and record.wrench.shape == (3, 6)
