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
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from motor_ident.core.excitation.fourier import ramp_in, random_fourier_trajectory
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.io.trajectory import load_trajectory
from motor_ident.ros.common import STATE_QOS, declare, robot_from_parameters, run_node
from motor_ident.ros.conversions import JointIndex, joint_state_arrays, seconds_to_stamp, stamp_to_seconds


class ExcitationNode(Node):
    """Publishes the excitation in chunks, clocked by joint_states."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("excitation", **kwargs)  # type: ignore[arg-type]
        config = robot_from_parameters(self)
        robot = config.build_model()
        self.joints = config.joints
        lower = robot.model.lowerPositionLimit[robot.q_index]
        upper = robot.model.upperPositionLimit[robot.q_index]
        finite = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
        centre = np.where(finite, 0.5 * (lower + upper), 0.0)
        trajectory_file = declare(
            self,
            "trajectory_file",
            "",
            "optimised trajectory from motor-ident excite: a path, or relative to motor_ident's share directory "
            "(examples/...); '' = random",
        )
        seed = declare(self, "seed", 3, "seed of the random Fourier coefficients")
        harmonics = declare(self, "harmonics", 5, "harmonics of the Fourier series")
        base_frequency = declare(self, "base_frequency", 0.2, "fundamental frequency [Hz]")
        amplitude = declare(self, "velocity_amplitude", 1.2, "bound on each joint's speed [rad/s]")
        if trajectory_file:
            try:
                self.trajectory = load_trajectory(trajectory_file).select(self.joints)
            except MotorIdentError as exc:
                raise ConfigError(f"parameter trajectory_file = {trajectory_file!r}: {exc}") from None
        else:
            self.trajectory = random_fourier_trajectory(
                np.random.default_rng(seed),
                n=robot.n,
                harmonics=harmonics,
                base_frequency=base_frequency,
                velocity_amplitude=amplitude,
                q0=centre,
            )
        self.horizon = declare(self, "horizon", 0.5, "seconds of trajectory per message")
        self.spacing = declare(self, "spacing", 0.01, "time between trajectory points [s]")
        self.publish_period = declare(self, "publish_period", 0.1, "time between messages [s]")
        self.ramp_time = declare(self, "ramp_time", 2.0, "blend-in time from rest [s]")
        topic = declare(self, "output_topic", "feedforward/reference", "where to publish the trajectory")
        self.pub = self.create_publisher(JointTrajectory, topic, 10)
        self.index = JointIndex(self.joints)
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)
        self.start_time: float | None = None
        self.q_start: np.ndarray | None = None
        self.next_publish = -np.inf
        self.messages = 0

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
