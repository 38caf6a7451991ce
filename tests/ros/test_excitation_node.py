"""The excitation node plays a trajectory file from ``motor-ident excite``, or refuses a bad one."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.excitation.fourier import random_fourier_trajectory
from motor_ident.errors import ConfigError
from motor_ident.io.trajectory import NamedTrajectory, save_trajectory
from motor_ident.ros.wire.conversions import trajectory_times

pytestmark = pytest.mark.ros

JOINTS = ["shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"]


def _make_node(ros, trajectory_file: str):
    from motor_ident.ros.nodes.excitation_node import ExcitationNode

    return ros.add(ExcitationNode, trajectory_file=trajectory_file)


def test_plays_the_saved_trajectory_in_the_robot_joint_order(ros, tmp_path) -> None:
    """A file saved with the joints in reverse order is played in the robot's order, after the ramp."""
    from motor_ident.ros.wire.conversions import make_joint_state

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
    msg = node.chunk(round(t * 1e9))
    q_msg = np.array([p.positions for p in msg.points])
    q_true, _, _ = trajectory.evaluate(trajectory_times(msg) - 100.0)
    np.testing.assert_allclose(q_msg, q_true, atol=1e-12)


def test_overlapping_chunks_carry_the_same_points(ros, tmp_path) -> None:
    """Chunks published at different states (every 7 ms here, off the 10 ms point grid) share their
    points to the bit: a receiver that holds an older chunk interpolates the same reference."""
    from motor_ident.core.control.computed_torque import ReferenceBuffer
    from motor_ident.ros.wire.conversions import make_joint_state

    trajectory = random_fourier_trajectory(np.random.default_rng(2), n=4, harmonics=3, base_frequency=0.3)
    path = tmp_path / "traj.yaml"
    save_trajectory(path, NamedTrajectory(trajectory, joints=tuple(JOINTS)))
    node = _make_node(ros, str(path))
    node._on_state(make_joint_state(node.joints, 7.0005, np.zeros(4), np.zeros(4), np.zeros(4)))
    buffers = []
    for k in range(5):
        msg = node.chunk(7_000_500_000 + 1_700_000_000 + 7_000_000 * k)  # in the ramp and out of it
        points = msg.points
        buffer = ReferenceBuffer(4)
        buffer.set(
            trajectory_times(msg),
            [p.positions for p in points],
            [p.velocities for p in points],
            [p.accelerations for p in points],
        )
        assert trajectory_times(msg)[-1] >= 7.0005 + 1.7 + 0.007 * k + node.settings.horizon
        buffers.append(buffer)
    for t in 8.7355 + 0.0013 * np.arange(200):
        samples = [b.sample(t) for b in buffers]
        held = [np.array(x) for x in samples if x is not None]
        assert len(held) >= 1
        for other in held[1:]:
            np.testing.assert_array_equal(other, held[0])


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
