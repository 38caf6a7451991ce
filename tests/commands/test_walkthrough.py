"""The walkthroughs of docs/real-logs.md, as a user runs them (subprocesses).

The example arm's logger files (examples/arm_log: headerless CSV, degrees, milliseconds, stamps of
8-13 ms, rests before and after) through their data spec -> identify (physically consistent) ->
validate on the second recording -> verdict -> a URDF that pinocchio reloads to the same torques.
docs/real-logs.md: the same files read as motor currents, the drive gains identified from the
payload run and carried by the parameter file into validate; identify --online on the log's rate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from motor_ident.core.actuators.friction import friction_torque
from motor_ident.io.params import load_parameters
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import REPO

LOGS = REPO / "examples" / "arm_log"
URDF = REPO / "config" / "urdf" / "valkyrie_arm.urdf"  # the user's robot: a plain URDF
MOTOR_IDENT = str(Path(sys.executable).parent / "motor-ident")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def motor_ident(*args: str | Path, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``motor-ident ARGS`` as a process; assert its exit status."""
    done = subprocess.run(
        [MOTOR_IDENT, *map(str, args)], capture_output=True, text=True, env=ENV, cwd=REPO, timeout=600
    )
    assert done.returncode == expect, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """identify on the first recording, validate on the second, with the URDF export."""
    out = tmp_path_factory.mktemp("walkthrough")
    paths = {
        "params": out / "arm_params.yaml",
        "identify_json": out / "identify.json",
        "validate_json": out / "validate.json",
        "report": out / "validation_report",
        "urdf": out / "arm_identified.urdf",
    }
    spec = LOGS / "spec.yaml"
    identify = motor_ident(
        "identify", LOGS / "identification.csv", "--spec", spec, "--robot", URDF,
        "--method", "log_cholesky", "--out", paths["params"], "--json", paths["identify_json"], "--no-report",
    )  # fmt: skip
    said = " ".join(identify.stderr.split())
    assert "onto a uniform 10 ms grid" in said and "positions by cubic spline, torques, currents linearly" in said
    assert "kept 1.5 s after the start to 1.5 s before the end" in said
    validate = motor_ident(
        "validate", paths["params"], LOGS / "validation.csv", "--spec", spec, "--robot", URDF,
        "--json", paths["validate_json"], "--report", paths["report"], "--urdf-out", paths["urdf"],
    )  # fmt: skip
    assert "verdict: PASSED" in validate.stdout
    return paths


def test_identified_model_predicts_the_second_recording_better_than_the_nominal(walkthrough: dict[str, Path]) -> None:
    result = json.loads(walkthrough["validate_json"].read_text())
    rre, nominal = np.array(result["rre_per_joint"]), np.array(result["nominal_rre_per_joint"])
    assert result["passed"] is True and result["reasons"] == []
    assert np.all(rre < 25.0), rre
    assert np.all(rre < nominal), (rre, nominal)
    assert np.all(np.array(result["r2_per_joint"]) > 0.9)
    assert len(result["rmse_per_joint"]) == 4
    prov = result["provenance"]
    assert prov["motor_ident_version"] and len(prov["validation_data_sha256"]) == 64
    assert len(prov["parameters_sha256"]) == 64 and "validate" in prov["command_line"]
    page = (walkthrough["report"] / "index.html").read_text()
    assert "PASSED" in page and (walkthrough["report"] / "prediction.png").stat().st_size > 1000


def test_exported_urdf_reloads_to_the_identified_torques(walkthrough: dict[str, Path]) -> None:
    """The exported URDF alone predicts the identified model's torques within 3 % of the largest.

    Not exactly: its links are the consistent ones nearest to the URDF's whose base parameters lie
    in the identified ones' 95 % confidence ellipsoid (docs/real-logs.md).
    """
    config = load_robot_config(URDF)
    regressor = config.build_regressor()
    theta = load_parameters(walkthrough["params"], expected_names=regressor.names).values
    # A fresh robot read from the exported URDF alone: its inertias, plus the identified rotor inertia.
    exported = load_robot_config(walkthrough["urdf"])
    assert exported.joints == config.joints
    robot = exported.build_model()
    robot.model.armature[robot.v_index] = theta[regressor.layout.reflected_inertia]
    rng = np.random.default_rng(3)
    q, v, a = (rng.uniform(-1.0, 1.0, (20, 4)) for _ in range(3))
    data = robot.create_data()
    rigid = np.array([pin.rnea(robot.model, data, q[k], v[k], a[k]) for k in range(20)])
    fc, fv = robot.model.friction, robot.model.damping
    friction = np.column_stack(
        [friction_torque(v[:, j], np.array([fc[j], fv[j]]), regressor.friction[j]) for j in range(4)]
    )
    expected = regressor.predict(theta, q, v, a)
    assert np.max(np.abs(rigid + friction - expected)) < 0.03 * np.max(np.abs(expected))
    assert "reflected rotor inertia" in walkthrough["urdf"].read_text()


def test_a_strict_limit_fails_the_verdict_with_a_reason(walkthrough: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "strict.json"
    done = motor_ident(
        "validate", walkthrough["params"], LOGS / "validation.csv", "--spec", LOGS / "spec.yaml",
        "--robot", URDF, "--max-rre", "elbow=1", "--json", out, expect=1,
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["passed"] is False
    assert len(result["reasons"]) == 1 and result["reasons"][0].startswith("elbow: RRE ")
    assert "verdict: FAILED" in done.stdout


@pytest.fixture(scope="module")
def currents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """docs/real-logs.md: currents -> drive gains from the payload run -> validate reads them from the parameters."""
    out = tmp_path_factory.mktemp("currents")
    params, fit, check = out / "arm_params.yaml", out / "identify.json", out / "validate.json"
    spec = LOGS / "spec.yaml"
    identify = motor_ident(
        "identify", LOGS / "identification.csv", "--spec", spec, "--robot", URDF, "--torque-source", "motor_current",
        "--payload-data", LOGS / "payload.csv", "--payload-mass", "2", "--method", "log_cholesky",
        "--out", params, "--json", fit, "--no-report", "--online",
    )  # fmt: skip
    validate = motor_ident(
        "validate", params, LOGS / "validation.csv", "--spec", spec, "--robot", URDF, "--torque-source",
        "motor_current", "--json", check,
    )  # fmt: skip
    return {
        "identify": json.loads(fit.read_text()),
        "validate": json.loads(check.read_text()),
        "identify_out": identify.stdout + identify.stderr,
        "validate_out": validate.stdout + " ".join(validate.stderr.split()),
        "params": params,
    }


def test_currents_give_a_validated_model_with_the_identified_gains(currents: dict[str, object]) -> None:
    """Gains within 6 % of the logger's (12 N m/A at the joint), written with their std; validate PASSED with them."""
    fit, check = currents["identify"], currents["validate"]
    assert isinstance(fit, dict) and isinstance(check, dict)
    gains = np.array(fit["drive_gains"])
    assert fit["drive_gain_side"] == "joint" and np.all(np.abs(gains / 12.0 - 1.0) < 0.06), gains
    block = load_parameters(currents["params"]).extra["drive_gains"]  # type: ignore[arg-type]
    assert set(block["std"]) == set(block["values"]) and all(s > 0.0 for s in block["std"].values())
    assert check["passed"] is True and check["torque_source"] == "motor_current"
    assert np.all(np.array(check["rre_per_joint"]) < 25.0) and np.all(
        np.array(check["rre_per_joint"]) < np.array(check["nominal_rre_per_joint"])
    )
    said = str(currents["validate_out"])
    assert "converted from motor_current [A] as identification does" in said
    assert f"drive gains [N m/A, joint side] from {currents['params']}" in said and "warning" not in said


def test_online_identifier_opens_its_gate_on_the_logs_rate(currents: dict[str, object]) -> None:
    """identify --online with the default settings on the 100 Hz log: every sample kept, 5 s window, gate open."""
    online = currents["identify"]["online"]  # type: ignore[index]
    assert online["gate_opened_at_s"] is not None and online["gate_open_at_end"] is True, online
    assert "window 500 samples (5 s)" in online["window"] and online["too_short"] is None
