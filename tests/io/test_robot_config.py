"""Robot configs: shipped configs load; bad values raise errors naming key, value and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config

GOOD = {
    "robot": {
        "name": "mini",
        "urdf": str(Path(__file__).resolve().parents[2] / "config" / "urdf" / "szabo_3dof.urdf"),
        "joints": ["joint1", "joint2", "joint3"],
        "joint_parameters": {"joint2": {"gear_ratio": 50.0, "friction_values": [1.0, 0.5]}},
    }
}


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("name", ["valkyrie_arm", "szabo_3dof"])
def test_shipped_configs_load(name: str) -> None:
    """Every shipped config builds its model and regressor."""
    config = load_robot_config(name)
    regressor = config.build_regressor()
    assert regressor.robot.joint_names == config.joints
    assert config.nominal_parameters(regressor).shape == (regressor.n_parameters,)


def test_user_config_from_path(tmp_path: Path) -> None:
    """A user's YAML with per-joint values loads; unlisted joints get defaults."""
    config = load_robot_config(_write(tmp_path, GOOD))
    assert config.joint_parameters[1].gear_ratio == 50.0
    assert config.joint_parameters[0].gear_ratio == 1.0
    assert config.build_model().n == 3


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(joints=["joint1", "wrist"]), "wrist"),
        (lambda r: r["joint_parameters"].update(elbow={}), "elbow"),
        (lambda r: r["joint_parameters"]["joint2"].update(gear_ratio=-3), "gear_ratio"),
        (lambda r: r["joint_parameters"]["joint2"].update(friction_values=[1.0]), "friction_values"),
        (lambda r: r.update(gravity=[0, 0]), "gravity"),
        (lambda r: r.update(friction={"kind": "magic"}), "friction.kind"),
        (lambda r: r.update(speed=3), "speed"),
    ],
)
def test_bad_config_names_the_problem(tmp_path: Path, edit, message: str) -> None:
    """Each wrong value raises ConfigError whose message names the offending key or value."""
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    edit(doc["robot"])
    with pytest.raises(ConfigError, match=message):
        load_robot_config(_write(tmp_path, doc)).build_model()


def test_unknown_config_lists_the_shipped_ones() -> None:
    """A wrong config name says which configs exist."""
    with pytest.raises(ConfigError, match="valkyrie_arm"):
        load_robot_config("no_such_robot")
