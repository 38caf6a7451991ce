"""Motor-side columns in a data spec (q_rotor, qd_rotor, tau_rotor) and columns from a file beside the log.

The logger of the Staubli TX40 example: motor encoders in one CSV, motor torques in another, a
reversed motor 4 and a coupled wrist (motor 6 at 32 (q5 + q6)); the spec and robot config shipped
in examples/staubli_tx40 turn them into joint positions and torques.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from motor_ident.core.actuators.transmission import Transmission
from motor_ident.errors import ConfigError, DataError
from motor_ident.io.data_spec import load_spec, read_with_spec, rotor_columns_to_joints, spec_from_dict
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "staubli_tx40"
HEADER = "Joint_1,Joint_2,Joint_3,Joint_4,Joint_5,Joint_6"


@pytest.fixture(scope="module")
def transmission() -> Transmission:
    """The TX40 example's transmission."""
    return load_robot_config(EXAMPLE / "robot.yaml").build_transmission()


def write_logger_files(folder: Path, q: np.ndarray, tau: np.ndarray) -> None:
    """The TX40 logger's two files from joint q, tau (N, 6), with FIGAROH's matrices written out by hand."""
    R = np.diag([32.0, 32.0, 45.0, -48.0, 45.0, 32.0])
    R[5, 4] = 32.0  # motor 6 turns at 32 (q5 + q6)
    q_motor = q @ R.T  # q_joint = R^-1 q_motor
    tau_motor = np.linalg.solve(R.T, tau.T).T  # tau_joint = R' tau_motor
    np.savetxt(folder / "pos_read_data.csv", q_motor, delimiter=",", header=HEADER, comments="", fmt="%.12g")
    np.savetxt(folder / "curr_data.csv", tau_motor, delimiter=",", header=HEADER, comments="", fmt="%.12g")


def test_motor_side_logger_files_read_as_joints(
    tmp_path: Path, transmission: Transmission, rng: np.random.Generator
) -> None:
    """The shipped spec reads encoders and torques of both files back to the joint q and tau (round trip)."""
    q, tau = rng.normal(size=(50, 6)), rng.normal(scale=5.0, size=(50, 6))
    write_logger_files(tmp_path, q, tau)
    record = read_with_spec(tmp_path / "pos_read_data.csv", load_spec(EXAMPLE / "spec.yaml"), transmission)
    assert record.joint_names == transmission.joints
    np.testing.assert_allclose(record.q, q, atol=1e-9)
    np.testing.assert_allclose(record.tau, tau, atol=1e-9)
    np.testing.assert_allclose(record.t[1], 0.0002)


def test_rotor_velocities_become_joint_velocities(transmission: Transmission) -> None:
    """qd_rotor of the wrist motors: qd5 = qd_m5 / 45, qd6 = qd_m6 / 32 - qd_m5 / 45."""
    out = rotor_columns_to_joints(
        {"qd_rotor.motor_5": np.array([45.0]), "qd_rotor.motor_6": np.array([64.0])}, transmission
    )
    assert set(out) == {"qd.joint_5", "qd.joint_6"}
    np.testing.assert_allclose([out["qd.joint_5"][0], out["qd.joint_6"][0]], [1.0, 1.0])


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"q_rotor.motor_6": np.zeros(3)}, "map q_rotor.motor_5 too"),
        ({"tau_rotor.motor_9": np.zeros(3)}, "no motor 'motor_9'"),
        ({"q_rotor.motor_5": np.zeros(3), "q_rotor.motor_6": np.zeros(3), "q.joint_6": np.zeros(3)}, "keep one"),
    ],
)
def test_incomplete_or_clashing_motor_columns_are_refused(
    transmission: Transmission, columns: dict, message: str
) -> None:
    """A coupled group needs every motor; unknown motors and joints given twice are named."""
    with pytest.raises(ConfigError, match=message):
        rotor_columns_to_joints(columns, transmission)


def test_file_beside_the_recording_must_exist_and_match(
    tmp_path: Path, transmission: Transmission, rng: np.random.Generator
) -> None:
    """A missing companion file, one with other row counts, a path with a directory, no robot: one clear error each."""
    spec = load_spec(EXAMPLE / "spec.yaml")
    write_logger_files(tmp_path, rng.normal(size=(20, 6)), rng.normal(size=(20, 6)))
    with pytest.raises(ConfigError, match="give a robot config"):
        read_with_spec(tmp_path / "pos_read_data.csv", spec)
    (tmp_path / "curr_data.csv").write_text(HEADER + "\n" + "0,0,0,0,0,0\n")
    with pytest.raises(DataError, match="1 rows, .* has 20"):
        read_with_spec(tmp_path / "pos_read_data.csv", spec, transmission)
    (tmp_path / "curr_data.csv").unlink()
    with pytest.raises(DataError, match="curr_data.csv does not exist"):
        read_with_spec(tmp_path / "pos_read_data.csv", spec, transmission)
    with pytest.raises(ConfigError, match="no directory"):
        spec_from_dict({"data_spec": 1, "rate_hz": 10, "columns": {"q.a": {"column": 0, "file": "../x.csv"}}})


def test_identify_names_the_missing_companion_file(tmp_path: Path, rng: np.random.Generator) -> None:
    """identify in a folder without curr_data.csv: exit 2 and one line naming it."""
    write_logger_files(tmp_path, rng.normal(size=(20, 6)), rng.normal(size=(20, 6)))
    (tmp_path / "curr_data.csv").unlink()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "motor-ident"), "identify", "pos_read_data.csv", "--spec",
         str(EXAMPLE / "spec.yaml"), "--robot", str(EXAMPLE / "robot.yaml"), "--no-report"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "curr_data.csv does not exist" in done.stderr and "Traceback" not in done.stderr
