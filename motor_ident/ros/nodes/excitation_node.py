"""``excitation``: plays an exciting Fourier-series trajectory as trajectory_msgs/JointTrajectory.

Every ``publish_period`` (of the joint_states clock) it publishes the next ``horizon`` seconds of
the trajectory, sampled every ``spacing`` seconds with positions, velocities and accelerations,
stamped in absolute time: the feedforward node's ``~/reference`` by default, or a
joint_trajectory_controller's ``~/joint_trajectory`` (set ``output_topic``). The trajectory starts
from the robot's position at rest and is blended in over ``ramp_time`` (`ramp_in`).

The points lie on one grid, start + k ``spacing``, counted in integer nanoseconds: two chunks
that overlap carry the same points at the same times, so a receiver interpolating the reference
gets the same value whichever chunk it holds: a late chunk changes nothing.

The trajectory is an optimised one from ``motor-ident excite`` (``trajectory_file``: a path, or
one relative to motor_ident's share directory such as ``examples/icub_torso_excitation.yaml``) or a
random finite Fourier series (seeded) around the middle of the URDF's position limits.
"""

from __future__ import annotations

import numpy as np
from rclpy.duration import Duration
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from motor_ident.core.excitation.fourier import ramp_in, random_fourier_trajectory
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.io.trajectory import load_trajectory
from motor_ident.ros.runtime.common import STATE_QOS, load_robot, run_node
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import JointIndex, joint_state_arrays, stamp_to_nanoseconds
from motor_ident.scenario.nodes import ExcitationSettings


class ExcitationNode(ManagedNode):
    """Publishes the excitation in chunks, clocked by joint_states (managed: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("excitation", settings=ExcitationSettings, **kwargs)

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
        self.ramp_time = settings.ramp_time
        self.spacing_ns = max(1, round(settings.spacing * 1e9))
        self.period_ns = max(1, round(settings.publish_period * 1e9))
        # points per chunk: from the grid point at or before t to one at or after t + horizon
        self.offsets_ns = self.spacing_ns * np.arange(-(-round(settings.horizon * 1e9) // self.spacing_ns) + 2)
        topic = settings.output_topic
        self.pub = self.create_publisher(JointTrajectory, topic, 10)
        self.index = JointIndex(self.joints)
        self.messages = 0
        self.last_ns: int | None = None  # state time of the latest chunk [ns]

    def start_commanding(self) -> None:
        """Activate: the trajectory starts (ramped in) from where the robot is at the next joint_states."""
        self.start_ns: int | None = None
        self.q_start: np.ndarray | None = None
        self.next_publish_ns = 0
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)

    def safe_output(self) -> None:
        """Deactivate: a reference holding the latest chunk's first position (no velocity), once."""
        if self.last_ns is None:
            return
        msg = self.chunk(self.last_ns)
        hold, zeros = msg.points[0].positions, [0.0] * len(self.joints)
        for point in msg.points:
            point.positions, point.velocities, point.accelerations = hold, zeros, zeros
        self.pub.publish(msg)
        self.last_ns = None

    def _on_state(self, msg: JointState) -> None:
        t_ns = stamp_to_nanoseconds(msg.header.stamp)
        if self.start_ns is not None and t_ns < self.start_ns:
            self.start_ns = None  # clock went back: start again from where the robot is
        if self.start_ns is None:
            arrays, _ = joint_state_arrays(msg, self.index, ("position",))
            if not arrays:
                return
            self.start_ns, self.q_start, self.next_publish_ns = t_ns, arrays[0], t_ns
        if t_ns < self.next_publish_ns:
            return
        periods = (t_ns - self.start_ns) // self.period_ns + 1  # on the start's grid: no drift, none skipped twice
        self.next_publish_ns = self.start_ns + periods * self.period_ns
        self.pub.publish(self.chunk(t_ns))
        self.last_ns = t_ns
        self.messages += 1

    def chunk(self, t_ns: int) -> JointTrajectory:
        """The trajectory from ``t_ns`` [ns] to ``horizon`` past it, as a JointTrajectory.

        Its points are the grid points start + k ``spacing`` from the last one at or before
        ``t_ns`` on; the header is stamped with that first point's time (time_from_start 0).
        """
        assert self.start_ns is not None and self.q_start is not None
        first_ns = (t_ns - self.start_ns) // self.spacing_ns * self.spacing_ns  # since the start
        q, qd, qdd = ramp_in((first_ns + self.offsets_ns) * 1e-9, self.q_start, self.trajectory, self.ramp_time)
        msg = JointTrajectory()
        msg.header.stamp = Time(nanoseconds=self.start_ns + first_ns).to_msg()
        msg.joint_names = list(self.joints)
        for k, offset_ns in enumerate(self.offsets_ns.tolist()):
            msg.points.append(
                JointTrajectoryPoint(
                    positions=q[k].tolist(),
                    velocities=qd[k].tolist(),
                    accelerations=qdd[k].tolist(),
                    time_from_start=Duration(nanoseconds=offset_ns).to_msg(),
                )
            )
        return msg


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident excitation``."""
    run_node(ExcitationNode, args)


if __name__ == "__main__":
    main()
