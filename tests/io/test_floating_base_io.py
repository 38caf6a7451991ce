"""The floating_base section of a robot config, and floating-base records (NPZ round trip)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from motor_ident.errors import ConfigError, DataError
from motor_ident.io.floating_base_config import floating_base_from_dict
from motor_ident.io.floating_record import FloatingBaseRecord, load_floating_record, save_floating_record
from motor_ident.io.robot_config import load_robot_config

SECTION = {
    "base_link": "base_link",
    "imu_frame": "root_link",
    "contacts": {"left_foot": {"sensor_frame": "l_foot_ft_sensor", "sole_frame": "l_sole"}},
    "standing_posture": {"l_knee": -0.5},
}


def test_shipped_icub_config_builds_its_floating_base() -> None:
    """config/icub.yaml: 32 joints on a free-flyer, wrenches at the two feet's sensor frames."""
    config = load_robot_config("icub")
    floating = config.build_floating_base()
    assert floating.n == 32 and floating.contact_frames == ("l_foot_ft_sensor", "r_foot_ft_sensor")
    assert floating.total_mass == pytest.approx(28.35, abs=0.01)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"contacts": {}}, "contacts"),
        ({"standing_posture": {"no_such_joint": 0.1}}, "standing_posture"),
        ({"friction_coefficient": -1.0}, "friction_coefficient"),
        ({"urdf_mass_uncertainty": 0.0}, "urdf_mass_uncertainty"),
        ({"urdf_mass_uncertainty": "weighed"}, "urdf_mass_uncertainty"),
        ({"typo": 1}, "typo"),
    ],
)
def test_bad_sections_name_the_key(change: dict[str, object], message: str) -> None:
    """Each mistake raises a ConfigError naming the key."""
    with pytest.raises(ConfigError, match=message):
        floating_base_from_dict({**SECTION, **change}, ("l_knee",))


def test_fixed_base_config_has_no_floating_base() -> None:
    """A fixed-base robot refuses to build a floating base, saying why."""
    with pytest.raises(ConfigError, match="floating_base"):
        load_robot_config("valkyrie_arm").build_floating_base()


def test_record_round_trip(tmp_path: Path, rng: np.random.Generator) -> None:
    """save -> load keeps every array; a wrench of the wrong shape is refused."""
    N = 5
    record = FloatingBaseRecord(
        t=np.arange(N) * 0.01,
        joint_names=("a", "b"),
        q=rng.standard_normal((N, 2)),
        contact_names=("left", "right"),
        wrench=rng.standard_normal((N, 2, 6)),
        imu_quaternion=np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)),
        imu_gyro=rng.standard_normal((N, 3)),
        imu_accelerometer=rng.standard_normal((N, 3)),
        tau=rng.standard_normal((N, 2)),
    )
    save_floating_record(tmp_path / "r.npz", record)
    back = load_floating_record(tmp_path / "r.npz")
    assert back.joint_names == record.joint_names and back.contact_names == record.contact_names
    for name in ("t", "q", "wrench", "imu_quaternion", "imu_gyro", "imu_accelerometer", "tau"):
        np.testing.assert_array_equal(getattr(back, name), getattr(record, name), err_msg=name)
    assert back.base_position is None
    with pytest.raises(DataError, match="wrench"):
        FloatingBaseRecord(**{**record.__dict__, "wrench": np.zeros((N, 1, 6))})
