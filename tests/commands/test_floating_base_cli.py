"""``synth --floating-base`` then ``identify --floating-base`` as a user runs them, on a reduced humanoid."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from motor_ident.io.bags.write import BagWriter
from motor_ident.io.floating_record import load_floating_record
from tests.commands.test_torque_source_cli import motor_ident
from tests.sim.test_humanoid import reduced_config


def test_synth_identify_validate_and_export(tmp_path: Path) -> None:
    """The total mass comes back within 0.3 %, the held-out forces beat the URDF's, the URDF is written."""
    robot = str(reduced_config(tmp_path))
    for seed, name in ((0, "train"), (1, "test")):
        done = motor_ident(
            "synth", "--robot", robot, "--floating-base", "--duration", "3", "--rate", "250", "--seed", str(seed),
            "--out", str(tmp_path / f"{name}.npz"), "--json", str(tmp_path / f"{name}_truth.json"),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    truth = json.loads((tmp_path / "train_truth.json").read_text())
    done = motor_ident(
        "identify", str(tmp_path / "train.npz"), "--robot", robot, "--floating-base", "--method", "sdp",
        "--validate-on", str(tmp_path / "test.npz"), "--urdf-out", str(tmp_path / "identified.urdf"),
        "--json", str(tmp_path / "fit.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fit = json.loads((tmp_path / "fit.json").read_text())
    assert "no new parameter" in done.stdout and "[not determined]" in done.stdout
    assert "feet on the ground in the data (schedule or F/T force threshold): l_sole + r_sole" in done.stdout
    assert "link masses determined alone by these data (0 of 16)" in done.stdout
    # the vertical CoM, seen only through the pelvis tilts, is flagged; the std include the residuals' correlation
    assert fit["com_weakly_determined"][2] and "[weakly determined]" in done.stdout
    assert fit["com_weakly_determined"] == [s > 1e-3 for s in fit["com_std"]]
    assert all(s >= w for s, w in zip(fit["com_std"], fit["com_std_white"]))
    assert abs(fit["total_mass"] / truth["true_total_mass"] - 1.0) < 3e-3
    assert abs(truth["nominal_total_mass"] / truth["true_total_mass"] - 1.0) > 0.01
    validation = fit["validation"]
    # forces (fx, fy, fz): the mass the URDF gets wrong; 3 s of motion excite too little for the torques
    assert np.mean(validation["identified"]["nrmse"][:3]) < 0.5 * np.mean(validation["nominal"]["nrmse"][:3])
    assert (tmp_path / "identified.urdf").is_file() and fit["min_pseudo_inertia_eigenvalue"] > -1e-6
    # the held-out error split into the states' share and the parameters'
    assert "of which the states and sensors" in done.stdout
    # the floor is a WLS refit: it minimises the rows' weighted sum, not each row's error
    assert np.mean(validation["floor"]["nrmse"]) < np.mean(validation["determined"]["nrmse"])
    # the base orientation's tilt, and the URDF recommended where the data know less than it
    assert "base orientation's constant tilt" in done.stdout and len(fit["imu_tilt"]) == 2
    # the IMU orientation's white noise (the simulator's 2 mrad) estimated, its bias corrected (SIMEX)
    assert "IMU orientation's white noise" in done.stdout and fit["orientation_noise_correction"]["refits"] == 6
    np.testing.assert_allclose(fit["orientation_noise"], 0.002, rtol=0.2)
    assert fit["prefer_nominal"]["com"][2] and "use the URDF's CoM z" in done.stdout
    # the exported links: the per-link table, every mass positive, the total the identified one
    links = fit["urdf"]["links"]
    assert "exported kg" in done.stdout and len(links["mass"]) == 16 and min(links["mass"]) > 0.0
    assert abs(sum(links["mass"]) / fit["total_mass"] - 1.0) < 3e-3


def test_identify_from_a_bag(tmp_path: Path) -> None:
    """The same recording as a bag (joint states, sensor_msgs/Imu, a WrenchStamped per foot) gives the same mass."""
    robot = str(reduced_config(tmp_path))
    done = motor_ident(
        "synth", "--robot", robot, "--floating-base", "--duration", "3", "--rate", "250",
        "--out", str(tmp_path / "r.npz"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = load_floating_record(tmp_path / "r.npz")
    with BagWriter(tmp_path / "bag") as bag:
        for k, t in enumerate(record.t):
            bag.joint_state("/joint_states", float(t), record.joint_names, record.q[k])
            bag.imu("/imu/data", float(t), record.imu_quaternion[k], record.imu_gyro[k], record.imu_accelerometer[k])
            bag.wrench("/left_foot/wrench", float(t), record.wrench[k, 0, :3], record.wrench[k, 0, 3:])
            bag.wrench("/feet/right", float(t), record.wrench[k, 1, :3], record.wrench[k, 1, 3:])
    fits = {}
    for name, data, extra in (("npz", "r.npz", []), ("bag", "bag", ["--foot-wrench-topic", "right_foot=/feet/right"])):
        done = motor_ident(
            "identify", str(tmp_path / data), "--robot", robot, "--floating-base",
            "--json", str(tmp_path / f"{name}.json"), *extra,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        fits[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert abs(fits["bag"]["total_mass"] - fits["npz"]["total_mass"]) < 1e-6 * fits["npz"]["total_mass"]


def test_fixed_base_robot_is_refused(tmp_path: Path) -> None:
    """A robot without a floating_base section: one line saying what is missing, exit status 2."""
    data = tmp_path / "none.npz"
    data.write_bytes(b"")
    done = motor_ident("identify", str(data), "--robot", "valkyrie_arm", "--floating-base")
    assert done.returncode == 2 and "floating_base" in done.stderr


def test_synth_writes_a_bag_that_identify_reads(tmp_path: Path) -> None:
    """``synth --floating-base --out DIR`` writes the robot's topics as a bag (what ``motor-ident play``
    replays to the floating_identifier node); identified, it gives the NPZ's total mass."""
    robot = str(reduced_config(tmp_path))
    common = ("--robot", robot, "--floating-base")
    masses = []
    for out in ("r.npz", "bag"):
        path = str(tmp_path / out)
        done = motor_ident("synth", *common, "--duration", "3", "--rate", "250", "--out", path)
        assert done.returncode == 0, done.stderr
        done = motor_ident("identify", path, *common, "--json", f"{path}.json")
        assert done.returncode == 0, done.stderr
        masses.append(json.loads(Path(f"{path}.json").read_text())["total_mass"])
    assert (tmp_path / "bag" / "metadata.yaml").is_file()
    assert abs(masses[1] - masses[0]) < 1e-6 * masses[0]
    done = motor_ident("synth", *common, "--duration", "1", "--out", str(tmp_path / "r.csv"))
    assert done.returncode == 2 and "bag directory" in done.stderr
