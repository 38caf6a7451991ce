"""The reduced humanoid the floating-base tests share."""

from __future__ import annotations

import pytest

from motor_ident.core.floating_base.model import FloatingBaseRegressor, load_floating_base_model
from tests.conftest import example_robot_urdf

# a reduced humanoid: joints in an order other than pinocchio's, so rows and columns are remapped
JOINTS = ("torso_pitch", "r_knee", "l_hip_pitch", "r_hip_pitch", "l_knee", "l_shoulder_pitch")
CONTACTS = ("l_foot_ft_sensor", "r_foot_ft_sensor")


@pytest.fixture(scope="module")
def humanoid() -> FloatingBaseRegressor:
    """iCub reduced to 6 joints on a free-flyer root, wrenches measured at the feet's F/T frames."""
    urdf = example_robot_urdf("icub_description/robots/icub.urdf")
    return FloatingBaseRegressor(load_floating_base_model(urdf, joint_names=JOINTS, contact_frames=CONTACTS))
