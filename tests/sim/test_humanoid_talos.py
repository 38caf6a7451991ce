"""A second humanoid through the floating-base pipeline: TALOS (example-robot-data), not iCub.

The simulated humanoid and the robot config are not iCub's: TALOS is three times as heavy and twice
as tall, its F/T sensors sit at the ankles above the soles, its URDF holds grippers the config leaves
out. A reduced TALOS (legs, torso, shoulders) stands, and its base rows give the true total mass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.humanoid import HumanoidRun, HumanoidSimConfig, simulate_humanoid
from tests.sim.test_humanoid import base_row_fit

CONFIG = Path(__file__).parents[2] / "config" / "talos.yaml"
LEGS = [f"leg_{side}_{i}_joint" for side in ("left", "right") for i in range(1, 7)]
KEPT = [*LEGS, "torso_1_joint", "torso_2_joint", "arm_left_1_joint", "arm_right_1_joint"]


@pytest.fixture(scope="module")
def talos(tmp_path_factory: pytest.TempPathFactory) -> tuple[RobotConfig, HumanoidRun]:
    """Three seconds at 500 Hz of config/talos.yaml reduced to 16 joints (the others locked at zero)."""
    doc = yaml.safe_load(CONFIG.read_text())
    robot = doc["robot"]
    robot["joints"] = KEPT
    posture = robot["floating_base"]["standing_posture"]
    robot["floating_base"]["standing_posture"] = {k: v for k, v in posture.items() if k in KEPT}
    path = tmp_path_factory.mktemp("robot") / "talos_reduced.yaml"
    path.write_text(yaml.safe_dump(doc))
    config = load_robot_config(path)
    return config, simulate_humanoid(config, HumanoidSimConfig(duration=3.0, rate_hz=500.0))


def test_talos_config_loads_with_its_ankle_sensors() -> None:
    """The shipped config: 30 joints, ~90 kg, F/T frames at the ankles 10.7 cm above the soles."""
    config = load_robot_config(CONFIG)
    assert config.floating_base is not None
    model = config.build_floating_base()
    assert model.n == 30 and 85.0 < model.total_mass < 95.0
    data = model.model.createData()
    import pinocchio as pin

    q = pin.neutral(model.model)
    pin.framesForwardKinematics(model.model, data, q)
    sensor = data.oMf[model.model.getFrameId("leg_left_6_link")].translation
    sole = data.oMf[model.model.getFrameId("left_sole_link")].translation
    np.testing.assert_allclose(sensor - sole, [0.0, 0.0, 0.107], atol=1e-9)


def test_talos_stands_on_feet_that_could_hold(talos: tuple[RobotConfig, HumanoidRun]) -> None:
    """Each foot's CoP 5 mm inside its sole and its force inside the friction cone in >= 99 % of the
    samples; the feet carry the true weight (the URDF's is > 1 % off)."""
    config, run = talos
    assert run.friction["holdable"] >= 0.99, run.friction
    assert run.friction["min_normal_force"] > 50.0
    mass_true = run.theta_true[0::10].sum()
    assert abs(mass_true / config.build_floating_base().total_mass - 1.0) > 0.01
    vertical = run.record.wrench[:, :, 2].sum(axis=1)  # the ankle frames stay level within the small tilts
    np.testing.assert_allclose(vertical.mean(), mass_true * 9.81, rtol=5e-3)


def test_talos_base_rows_identify_the_true_total_mass(talos: tuple[RobotConfig, HumanoidRun]) -> None:
    """Wrenches and IMU alone: the total mass within 0.3 % of the truth; horizontal CoM determined."""
    config, run = talos
    result = base_row_fit(config, run)
    mass_true = run.theta_true[0::10].sum()
    assert bool(np.all(result.mass.identifiable))
    assert abs(float(result.mass.value) / mass_true - 1.0) < 3e-3, (float(result.mass.value), mass_true)
    assert list(result.com.identifiable) == [True, True, False]
