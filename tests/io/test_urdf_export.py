"""Plain URDFs as robots, and identified parameters written back into a checked URDF copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.io.urdf_export import check_urdf, export_urdf
from tests.conftest import REPO

URDF = REPO / "config" / "urdf" / "elastic_arm6.urdf"


def test_a_plain_urdf_is_a_robot_with_every_movable_joint() -> None:
    config = load_robot_config(URDF)
    assert config.joints == (
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    )
    regressor = config.build_regressor()
    assert regressor.has_reflected_inertia
    assert [shape.names for shape in regressor.friction] == [("fc", "fv")] * 6


def test_a_urdf_that_is_not_xml_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "arm.urdf"
    bad.write_text("Author: someone\n<robot")
    with pytest.raises(ConfigError, match="not valid XML"):
        load_robot_config(bad)


def _identified(config_name: str | Path, seed: int = 1) -> tuple:
    config = load_robot_config(config_name)
    regressor = config.build_regressor()
    theta = config.nominal_parameters(regressor)
    rng = np.random.default_rng(seed)
    n = config.build_model().n
    inertial = theta[regressor.layout.inertial].reshape(n, 10) * rng.uniform(0.8, 1.3, (n, 1))
    theta[regressor.layout.inertial] = inertial.ravel()
    theta[regressor.layout.reflected_inertia] = rng.uniform(0.01, 0.2, n)
    for cols in regressor.layout.friction:
        theta[cols] = rng.uniform(0.1, 2.0, cols.stop - cols.start)
    return config, regressor, theta


@pytest.mark.parametrize("robot", ["valkyrie_arm", URDF, "icub_torso"])
def test_exported_urdf_reloads_to_the_same_torques(robot: str | Path, tmp_path: Path) -> None:
    config, regressor, theta = _identified(robot)
    out = tmp_path / "identified.urdf"
    done = export_urdf(out, config, regressor, theta)
    assert done.max_torque_error < 1e-9 * done.max_torque
    text = out.read_text()
    assert text.count("reflected rotor inertia") == len(config.joints)
    error, largest = check_urdf(out, config, regressor, theta, seed=5)
    assert error < 1e-9 * largest
    # The check would catch a wrong file: the original URDF does not reproduce these torques.
    error, largest = check_urdf(config.urdf, config, regressor, theta, seed=5)
    assert error > 1e-3 * largest


def test_physically_impossible_parameters_are_not_exported(tmp_path: Path) -> None:
    config, regressor, theta = _identified("valkyrie_arm")
    theta[regressor.layout.inertial.start + 10] = -1.0  # second body's mass
    out = tmp_path / "identified.urdf"
    with pytest.raises(ConfigError, match="mass -1 kg is not positive.*--method log_cholesky"):
        export_urdf(out, config, regressor, theta)
    assert not out.exists()
