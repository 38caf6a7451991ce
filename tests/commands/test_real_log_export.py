"""`identify --urdf-out` on a real arm's log (the Stäubli TX40 in ../shared/real_logs/, joints 1-4):
its base parameters' covariance is singular, and the export still writes a consistent URDF."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

TX40 = REPO.parent / "shared" / "real_logs" / "staubli_tx40"
RATIOS = (32.0, 32.0, 45.0, -48.0)  # joints 1-4: joint = motor / ratio, joint torque = ratio * motor torque
ROWS = 15000  # 3 s at 5 kHz


def tx40_joints_1_to_4(folder: Path, rows: int = ROWS) -> tuple[Path, Path, Path]:
    """The TX40 log's first ``rows`` samples as one CSV (motor positions and torques), a data spec mapping
    joints 1-4 to the joint side, and a robot YAML identifying them (skips where the log is absent)."""
    if not (TX40 / "pos_read_data.csv").is_file():
        pytest.skip(f"{TX40} is absent")
    position = np.loadtxt(TX40 / "pos_read_data.csv", delimiter=",", skiprows=1, max_rows=rows)
    torque = np.loadtxt(TX40 / "curr_data.csv", delimiter=",", skiprows=1, max_rows=rows)
    data = folder / "tx40.csv"
    header = ",".join([f"qm{k}" for k in range(1, 7)] + [f"taum{k}" for k in range(1, 7)])
    np.savetxt(data, np.hstack([position, torque]), delimiter=",", header=header, comments="")
    columns = "\n".join(
        f"  q.joint_{k}: {{column: qm{k}, scale: {1.0 / r!r}}}\n  tau.joint_{k}: {{column: taum{k}, scale: {r!r}}}"
        for k, r in enumerate(RATIOS, start=1)
    )
    spec = folder / "spec.yaml"
    spec.write_text(f"data_spec: 1\nheader: true\nrate_hz: 5000\ncolumns:\n{columns}\n", encoding="utf-8")
    robot = folder / "robot.yaml"
    robot.write_text(
        "robot:\n  name: tx40_joints_1_4\n"
        f"  urdf: {TX40 / 'tx40_mdh_modified.urdf'}\n"
        "  joints: [joint_1, joint_2, joint_3, joint_4]\n"
        "  friction: {kind: coulomb_viscous}\n",
        encoding="utf-8",
    )
    return data, spec, robot


def test_urdf_export_on_the_tx40_log(tmp_path: Path) -> None:
    """ols on 3 s of the TX40 (covariance rank-deficient): exit 0, the shrinkage said, every link's mass
    nominal -> exported and CoM shift printed, and pinocchio reloads the URDF to the identified torques."""
    data, spec, robot = tx40_joints_1_to_4(tmp_path)
    out = tmp_path / "tx40.urdf"
    run = subprocess.run(
        [sys.executable, "-m", "motor_ident.cli", "identify", str(data), "--spec", str(spec), "--robot", str(robot)]
        + ["--method", "ols", "--urdf-out", str(out), "--json", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "covariance is singular (rank" in run.stderr
    assert "CoM shift mm" in run.stdout and "reloaded by pinocchio" in run.stdout
    rows = [line.split() for line in run.stdout.splitlines() if line.strip().startswith("link_")]
    assert [r[0] for r in rows] == ["link_1", "link_2", "link_3", "link_4"], run.stdout
    summary = json.loads((tmp_path / "out.json").read_text())
    links = summary["urdf"]["links"]
    assert links["covariance_rank"] < summary["n_base_parameters"]
    assert links["mass_class"][0] == "undetermined"  # the base yaw: gravity never acts on link 1's mass
    assert abs(links["mass"][0] / links["mass_nominal"][0] - 1.0) < 0.05
    assert all(m > 0.0 for m in links["mass"])
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(out))
    masses = {model.names[k]: model.inertias[k].mass for k in range(1, model.njoints)}
    np.testing.assert_allclose([masses[f"joint_{k}"] for k in (1, 2, 3)], links["mass"][:3], rtol=1e-9)
