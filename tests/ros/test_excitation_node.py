"""The excitation node plays a trajectory file from ``motor-ident excite``, or refuses a bad one."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.excitation.fourier import random_fourier_trajectory
from motor_ident.errors import ConfigError
from motor_ident.io.trajectory import NamedTrajectory, save_trajectory

pytestmark = pytest.mark.ros

JOINTS = ["shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"]


def _make_node(ros, trajectory_file: str):
    from motor_ident.ros.excitation_node import ExcitationNode

    return ros.add(ExcitationNode, trajectory_file=trajectory_file)


def test_plays_the_saved_trajectory_in_the_robot_joint_order(ros, tmp_path) -> None:
    """A file saved with the joints in reverse order is played in the robot's order, after the ramp."""
    from motor_ident.ros.conversions import make_joint_state

    rng = np.random.default_rng(4)
    trajectory = random_fourier_trajectory(rng, n=4, harmonics=3, base_frequency=0.25, velocity_amplitude=0.8)
    reversed_rows = [3, 2, 1, 0]
    stored = NamedTrajectory(
        type(trajectory)(
            a=trajectory.a[reversed_rows],
            b=trajectory.b[reversed_rows],
            q0=trajectory.q0[reversed_rows],
            base_frequency=trajectory.base_frequency,
        ),
        joints=tuple(reversed(JOINTS)),
    )
    path = tmp_path / "traj.yaml"
    save_trajectory(path, stored)

    node = _make_node(ros, str(path))
    assert list(node.joints) == JOINTS
    node._on_state(make_joint_state(node.joints, 100.0, np.zeros(4), np.zeros(4), np.zeros(4)))
    t = 100.0 + node.ramp_time + 1.3  # past the blend-in: the reference is the file's trajectory
    msg = node.chunk(t)
    q_msg = np.array([p.positions for p in msg.points])
    offsets = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    q_true, _, _ = trajectory.evaluate(t - 100.0 + offsets)
    np.testing.assert_allclose(q_msg, q_true, atol=1e-12)


def test_a_trajectory_without_the_robot_joints_is_refused_naming_the_parameter(ros, tmp_path) -> None:
    """A file for another robot stops the node at start with a message naming trajectory_file."""
    trajectory = random_fourier_trajectory(np.random.default_rng(0), n=2, harmonics=2, base_frequency=0.2)
    path = tmp_path / "other_robot.yaml"
    save_trajectory(path, NamedTrajectory(trajectory, joints=("wrist", "finger")))
    with pytest.raises(ConfigError, match="trajectory_file") as error:
        _make_node(ros, str(path))
    assert "shoulder_extensor" in str(error.value)


def test_a_missing_file_is_refused(ros, tmp_path) -> None:
    """A path that does not exist is a configuration error, not a crash."""
    with pytest.raises(ConfigError, match="trajectory_file"):
        _make_node(ros, str(tmp_path / "nope.yaml"))


def test_the_ros_free_closed_loop_plays_the_same_file(tmp_path) -> None:
    """``excitation.trajectory_file`` of a scenario means the same to the runner without DDS."""
    from motor_ident.scenario.closed_loop import build_closed_loop

    trajectory = random_fourier_trajectory(np.random.default_rng(1), n=4, harmonics=2, base_frequency=0.3)
    path = tmp_path / "traj.yaml"
    save_trajectory(path, NamedTrajectory(trajectory, joints=tuple(JOINTS)))
    loop = build_closed_loop("valkyrie_arm", {"excitation": {"trajectory_file": str(path)}})
    np.testing.assert_array_equal(loop.excitation.a, trajectory.a)
    np.testing.assert_array_equal(loop.excitation.q0, trajectory.q0)
