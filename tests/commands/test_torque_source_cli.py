"""``synth`` and ``identify`` with --torque-source: currents + payload run on CSV, NPZ and bags, F/T from a bag."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from motor_ident.io.bags.write import BagWriter
from motor_ident.io.data import JointRecord, load_record
from tests.conftest import REPO


def motor_ident(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``motor-ident`` as a user would, in a subprocess with one BLAS thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "motor_ident.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def synth(tmp_path: Path, name: str, *args: str) -> dict[str, object]:
    """``motor-ident synth ... --out <name> --json``: the JSON summary."""
    summary = tmp_path / f"{name}.json"
    done = motor_ident("synth", *args, "--out", str(tmp_path / name), "--json", str(summary))
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(summary.read_text())
    return result


def to_bag(record: JointRecord, path: Path) -> None:
    """A recording as a robot logs it: joint_states without effort, motor_states.effort = currents, the wrench."""
    with BagWriter(path) as bag:
        for k, t in enumerate(record.t):
            bag.joint_state("/joint_states", float(t), record.joint_names, record.q[k], record.qd[k])  # type: ignore[index]
            if record.current is not None:
                bag.joint_state("/motor_states", float(t), record.motor_names, effort=record.current[k])
            if record.wrench is not None:
                bag.wrench("/ft_sensor/wrench", float(t), record.wrench[k, :3], record.wrench[k, 3:], "ft")


@pytest.mark.parametrize("form", ["csv", "bag"])
def test_drive_gains_from_an_unloaded_and_a_loaded_run(tmp_path: Path, form: str) -> None:
    """Same seed: same true gains with and without payload; identify recovers them within 2 % with std."""
    common = ["--robot", "ur5_currents", "--torque-source", "motor_current", "--duration", "20", "--rate", "100"]
    suffix = "csv" if form == "csv" else "npz"
    unloaded = synth(tmp_path, f"unloaded.{suffix}", *common, "--seed", "3")
    loaded = synth(tmp_path, f"loaded.{suffix}", *common, "--seed", "3", "--payload-mass", "2.5")
    assert unloaded["true_drive_gains"] == loaded["true_drive_gains"]
    truth = np.array(unloaded["true_drive_gains"], dtype=float)
    nominal = np.array(unloaded["nominal_drive_gains"], dtype=float)
    assert np.all(np.abs(truth / nominal - 1.0) > 0.019), "the config's gains are a few percent off"
    data, payload = tmp_path / f"unloaded.{suffix}", tmp_path / f"loaded.{suffix}"
    if form == "bag":
        to_bag(load_record(data), tmp_path / "unloaded_bag")
        to_bag(load_record(payload), tmp_path / "loaded_bag")
        data, payload = tmp_path / "unloaded_bag", tmp_path / "loaded_bag"
    fit = tmp_path / "fit.json"
    done = motor_ident(
        "identify",
        str(data),
        "--robot",
        "ur5_currents",
        "--payload-data",
        str(payload),
        "--payload-mass",
        "2.5",
        "--json",
        str(fit),
        "--out",
        str(tmp_path / "params.yaml"),
        "--no-report",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(fit.read_text())
    assert result["torque_source"] == "motor_current"
    gains, std = np.array(result["drive_gains"]), np.array(result["drive_gains_std"])
    assert gains.shape == std.shape == (6,)
    error = gains / truth - 1.0
    assert np.all(np.abs(error) < 0.02), f"relative errors {error}"
    assert np.all(np.abs(gains - truth) < 5.0 * std + 1e-3 * truth), f"z = {(gains - truth) / std}"
    assert "drive_gains" in (tmp_path / "params.yaml").read_text()


def test_currents_without_gains_or_payload_are_refused(tmp_path: Path) -> None:
    """A config without drive gains and no payload run: exit 2, the message asks for the payload run."""
    synth(tmp_path, "c.npz", "--robot", "valkyrie_arm", "--torque-source", "motor_current", "--duration", "5")
    done = motor_ident(
        "identify", str(tmp_path / "c.npz"), "--robot", "valkyrie_arm", "--torque-source", "motor_current"
    )
    assert done.returncode == 2
    assert "not identifiable" in done.stderr and "--payload-data" in done.stderr


def test_ft_sensor_bag_identifies(tmp_path: Path) -> None:
    """Wrench of a sensor at the last link, in a bag: the link-side model fits (R^2 > 0.95 on every joint)."""
    synth(tmp_path, "ft.npz", "--robot", "valkyrie_arm", "--torque-source", "ft_sensor", "--duration", "20")
    to_bag(load_record(tmp_path / "ft.npz"), tmp_path / "ft_bag")
    fit = tmp_path / "fit.json"
    done = motor_ident(
        "identify",
        str(tmp_path / "ft_bag"),
        "--robot",
        "valkyrie_arm",
        "--torque-source",
        "ft_sensor",
        "--json",
        str(fit),
        "--no-report",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(fit.read_text())
    assert result["torque_source"] == "ft_sensor"
    assert min(result["r2_per_joint"]) > 0.95
