"""Robot configs with ``couplings:``: groups load, motor drive data follow the motors, bad groups are named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config

URDF = str(Path(__file__).resolve().parents[2] / "config" / "urdf" / "szabo_3dof.urdf")
GOOD = {
    "robot": {
        "name": "coupled",
        "urdf": URDF,
        "joints": ["joint1", "joint2", "joint3"],
        "joint_parameters": {"joint1": {"gear_ratio": 30.0, "friction_values": [1.0, 0.5]}},
        "couplings": {
            "wrist": {
                "joints": ["joint2", "joint3"],
                "motors": ["m2", "m3"],
                "coupling": [[0.5, 0.5], [0.5, -0.5]],
                "motor_parameters": {"m3": {"gear_ratio": 100.0, "rotor_inertia": 1e-5, "friction_values": [2.0, 1.0]}},
            }
        },
    }
}


def _load(tmp_path: Path, doc: dict):  # noqa: ANN202
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_robot_config(path)


def test_coupled_config_loads(tmp_path: Path) -> None:
    """The group becomes a TransmissionGroup; motor drive data are in transmission motor order."""
    config = _load(tmp_path, GOOD)
    tr = config.build_transmission()
    assert tr.motors == ("joint1", "m2", "m3")
    drives = config.motor_drives()
    assert drives[0].gear_ratio == 30.0 and drives[2].gear_ratio == 100.0 and drives[1].gear_ratio == 1.0
    assert tr.reflected_inertia[2] == pytest.approx(0.1)
    assert config.build_model().n == 3


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda g: g.update(coupling=[[1.0, 1.0], [1.0, 1.0]]), "robot.couplings.wrist.*singular or ill-conditioned"),
        (lambda g: g.update(coupling=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), "robot.couplings.wrist.coupling\\[0\\]"),
        (lambda g: g.update(motors=["m3"]), "robot.couplings.wrist.*2 joints .* but 1 motors"),
        (lambda g: g.update(joints=["joint2", "elbow"]), "robot.couplings.wrist.joints.*elbow"),
        (lambda g: g.update(max_condition="big"), "max_condition"),
        (lambda g: g.update(ratio=3), "unknown key\\(s\\) \\['ratio'\\]"),
        (lambda g: g.pop("coupling"), "robot.couplings.wrist.coupling is missing"),
        (lambda g: g["motor_parameters"].update(m9={}), "m9"),
    ],
)
def test_bad_coupling_names_the_key(tmp_path: Path, edit, message: str) -> None:  # noqa: ANN001
    """Each wrong coupling entry raises ConfigError naming the key under robot.couplings."""
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    edit(doc["robot"]["couplings"]["wrist"])
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, doc)


def test_coupled_joint_may_not_carry_its_own_rotor_inertia(tmp_path: Path) -> None:
    """The armature of a coupled joint is a full matrix: its rotor inertia belongs to the motors."""
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    doc["robot"]["joint_parameters"]["joint2"] = {"rotor_inertia": 1e-4}
    with pytest.raises(ConfigError, match="joint_parameters.joint2.rotor_inertia"):
        _load(tmp_path, doc)
