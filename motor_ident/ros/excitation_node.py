"""``excitation``: plays an exciting Fourier-series trajectory as trajectory_msgs/JointTrajectory.

Every ``publish_period`` (of the joint_states clock) it publishes the next ``horizon`` seconds of
the trajectory, sampled every ``spacing`` seconds with positions, velocities and accelerations,
stamped in absolute time: the feedforward node's ``~/reference`` by default, or a
joint_trajectory_controller's ``~/joint_trajectory`` (set ``output_topic``). The trajectory starts
from the robot's position at rest and is blended in over ``ramp_time`` (`ramp_in`).

The trajectory is an optimised one from ``motor-ident excite`` (``trajectory_file``: a path, or
one relative to motor_ident's share directory such as ``examples/icub_torso_excitation.yaml``) or a
random finite Fourier series (seeded) around the middle of the URDF's position limits.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from motor_ident.core.excitation.fourier import ramp_in, random_fourier_trajectory
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.io.trajectory import load_trajectory
from motor_ident.ros.common import STATE_QOS, load_robot, run_node
from motor_ident.ros.conversions import JointIndex, joint_state_arrays, seconds_to_stamp, stamp_to_seconds
from motor_ident.ros.lifecycle import ManagedNode
from motor_ident.scenario.nodes import ExcitationSettings


class ExcitationNode(ManagedNode):
    """Publishes the excitation in chunks, clocked by joint_states (a managed node: `motor_ident.ros.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("excitation", **kwargs)

    def build(self) -> None:
        """Configure: robot, trajectory (loaded or drawn), publisher."""
        self.settings = settings = self.declared(ExcitationSettings)
        config = load_robot(settings.robot)
        robot = config.build_model()
        self.joints = config.joints
        lower = robot.model.lowerPositionLimit[robot.q_index]
        upper = robot.model.upperPositionLimit[robot.q_index]
        finite = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
        centre = np.where(finite, 0.5 * (lower + upper), 0.0)
        trajectory_file = settings.trajectory_file
        if trajectory_file:
            try:
                self.trajectory = load_trajectory(trajectory_file).select(self.joints)
            except MotorIdentError as exc:
                raise ConfigError(f"parameter trajectory_file = {trajectory_file!r}: {exc}") from None
        else:
            self.trajectory = random_fourier_trajectory(
                np.random.default_rng(settings.seed),
                n=robot.n,
                harmonics=settings.harmonics,
                base_frequency=settings.base_frequency,
                velocity_amplitude=settings.velocity_amplitude,
                q0=centre,
            )
        self.horizon = settings.horizon
        self.spacing = settings.spacing
        self.publish_period = settings.publish_period
        self.ramp_time = settings.ramp_time
        topic = settings.output_topic
        self.pub = self.create_publisher(JointTrajectory, topic, 10)
        self.index = JointIndex(self.joints)
        self.messages = 0
        self.last_time: float | None = None  # of the latest chunk [s]

    def start_commanding(self) -> None:
        """Activate: the trajectory starts (ramped in) from where the robot is at the next joint_states."""
        self.start_time: float | None = None
        self.q_start: np.ndarray | None = None
        self.next_publish = -np.inf
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)

    def safe_output(self) -> None:
        """Deactivate: a reference holding the latest chunk's first position (no velocity), once."""
        if self.last_time is None:
            return
        msg = self.chunk(self.last_time)
        hold, zeros = msg.points[0].positions, [0.0] * len(self.joints)
        for point in msg.points:
            point.positions, point.velocities, point.accelerations = hold, zeros, zeros
        self.pub.publish(msg)
        self.last_time = None

    def _on_state(self, msg: JointState) -> None:
        t = stamp_to_seconds(msg.header.stamp)
        if self.start_time is not None and t < self.start_time:
            self.start_time = None  # clock went back: start again from where the robot is
        if self.start_time is None:
            arrays, _ = joint_state_arrays(msg, self.index, ("position",))
            if not arrays:
                return
            self.start_time, self.q_start, self.next_publish = t, arrays[0], t
        if t < self.next_publish:
            return
        self.next_publish = t + self.publish_period
        self.pub.publish(self.chunk(t))
        self.last_time = t
        self.messages += 1

    def chunk(self, t: float) -> JointTrajectory:
        """The trajectory from ``t`` to ``t + horizon`` as a JointTrajectory stamped ``t``."""
        assert self.start_time is not None and self.q_start is not None
        offsets = np.arange(0.0, self.horizon + 0.5 * self.spacing, self.spacing)
        q, qd, qdd = ramp_in(t - self.start_time + offsets, self.q_start, self.trajectory, self.ramp_time)
        msg = JointTrajectory()
        msg.header.stamp = seconds_to_stamp(t)
        msg.joint_names = list(self.joints)
        for k, dt in enumerate(offsets):
            sec = int(dt)
            msg.points.append(
                JointTrajectoryPoint(
                    positions=q[k].tolist(),
                    velocities=qd[k].tolist(),
                    accelerations=qdd[k].tolist(),
                    time_from_start=Duration(sec=sec, nanosec=int(round((dt - sec) * 1e9))),
                )
            )
        return msg


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident excitation``."""
    run_node(ExcitationNode, args)


if __name__ == "__main__":
    main()
