"""``feedforward``: computed-torque feedforward with friction compensation for ros2_control.

The reference comes on ``~/reference`` (trajectory_msgs/JointTrajectory, linearly interpolated).
The model is the one the identifier's gate made active, as full physically consistent parameters
(``identifier/active_full_parameters``; the robot config's nominal model until that arrives);
torque is ``RNEA(q, qd, qdd_cmd; theta) + tau_friction(qd; theta)`` (Kolathaya et al. 2016,
eq. 109, with optional PD terms in qdd_cmd; `RneaComputedTorque`), switching to each new model
over a short blend (`ModelBlend`: no joint's torque moves faster than ``blend_rate`` because of
the switch). Two outputs (``output``):

- ``forward_command``: on every ``joint_states`` sample, the saturated torque on
  ``effort_controller/commands`` (std_msgs/Float64MultiArray for a ros2_controllers forward
  command controller, e.g. effort_controllers/JointGroupEffortController): the 1 kHz loop runs
  through this node. The message is preallocated; ``~/tracking_error`` goes out every
  `TRACKING_ERROR_EVERY`-th command, after the command.
- ``joint_trajectory``: every ``1 / trajectory_rate`` s, the reference from now to
  ``trajectory_horizon`` ahead as trajectory_msgs/JointTrajectory points every
  ``trajectory_spacing`` (positions, velocities, accelerations and the model's torque at that
  reference state as ``effort``) on ``joint_trajectory_controller/joint_trajectory``, joints in
  ``controller_joints`` order, for a joint_trajectory_controller with an ``effort`` command
  interface: its PID closes the loop at the controller manager's rate and adds the efforts as
  feedforward. No joint_states subscription: nothing here runs at 1 kHz. Without a reference
  covering now nothing is sent (the controller holds its last goal).

Watchdog (forward_command): when joint states stop for ``state_timeout`` (wall time) or the
reference does not cover the current time, the output is the safe one (``safe_mode``: zero torque
or gravity only, reached within the rate limit) and /diagnostics says why. The watchdog and
/diagnostics run on the steady clock: with ``use_sim_time`` a simulator or bag player that dies
stops /clock, and they go on (the message then also says /clock stopped).

Only states that continue the robot's clock are answered (`motor_ident.ros.wire.conversions`): a
malformed state, a duplicate, or one stamped back (a second publisher stamping 0) or far ahead is
dropped and counted per reason, without a command and without touching the rate limiter; the
node restarts (rate limiter from its last command, dt of one sample) only when
``clock_restart_samples`` states in a row agree on a new clock (bag loop, simulator reset). More
than one publisher on ``joint_states`` is a WARN in /diagnostics naming them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from numpy.typing import NDArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from motor_ident.core.control.computed_torque import FeedforwardConfig, ModelBlend, ReferenceBuffer, saturate
from motor_ident.core.control.model_torque import RneaComputedTorque, trajectory_points
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.errors import ConfigError, ModelError
from motor_ident.ros.runtime.common import (
    COMMAND_QOS,
    LATCHED_QOS,
    STATE_QOS,
    ClockWatch,
    load_robot,
    run_node,
    steady_timer,
)
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import (
    OK,
    WARN,
    DropCounter,
    JointIndex,
    array_values,
    make_status,
    publisher_warning,
    seconds_to_stamp,
    stamp_order,
    trajectory_times,
)
from motor_ident.ros.wire.wire import Float64ArrayWriter, JointStateReader, all_finite
from motor_ident.scenario.nodes import FeedforwardSettings
from motor_ident.schema import per_joint

TRACKING_ERROR_EVERY = 10
"""``~/tracking_error`` goes out with every 10th command (100 Hz at 1 kHz states): enough to plot,
and nine in ten cycles publish only the command."""


class FeedforwardNode(ManagedNode):
    """Adapter between `RneaComputedTorque` and ROS (a managed node: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("feedforward", settings=FeedforwardSettings, **kwargs)
        self.mode = "unconfigured"

    def build(self) -> None:
        """Configure: robot, model, control law, publishers, the model and reference inputs."""
        self.settings = settings = self.declared(FeedforwardSettings, self._apply, self._feedforward_config)
        config = load_robot(settings.robot)
        regressor = config.build_regressor()
        robot = regressor.robot
        n = robot.n
        urdf_limit = np.asarray(robot.model.effortLimit, dtype=float)[robot.v_index]
        self.urdf_limit = np.where(urdf_limit > 0.0, urdf_limit, 100.0)
        self.state_timeout = settings.state_timeout
        self.stamps = stamp_order(settings.stamps)
        self.base = structural_base_parameters(regressor)
        self.theta_nominal = config.nominal_parameters(regressor)
        self.law = RneaComputedTorque(
            regressor, self._feedforward_config(settings), self.theta_nominal, settings.blend_rate
        )
        self.model_source = "robot config nominal"
        self.tracking_mode = f"tracking ({self.model_source} model)"  # made once per model, not per state
        self.joints = config.joints
        self.index = JointIndex(config.joints)
        self.reference = ReferenceBuffer(n)
        self.previous = np.zeros(n)
        self.last_q: np.ndarray | None = None  # the last accepted state's positions (a copy)
        self._last_q = np.zeros(n)
        self.last_state_time: float | None = None
        self.last_state_wall = time.monotonic()
        self.mode = "waiting for joint_states"
        self.commands_published = 0
        self.nonfinite_commands = 0
        self.drops = DropCounter("joint_states sample", self.get_logger())
        self.tracking_error = np.zeros(n)
        # the 1 kHz path reads and writes serialized messages (motor_ident.ros.wire.wire)
        self.state_reader = JointStateReader(config.joints, ("position", "velocity"))
        self.command_out = Float64ArrayWriter(n)
        self.error_out = Float64ArrayWriter(n)

        self.error_pub = self.create_publisher(Float64MultiArray, "~/tracking_error", 10)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Float64MultiArray, settings.parameters_topic, self._on_parameters, LATCHED_QOS)
        self.create_subscription(JointTrajectory, "~/reference", self._on_reference, 10)
        self.state_sub: Any = None  # a subscription while active (forward_command)
        if settings.output == "joint_trajectory":
            self._start_trajectory_output(settings)
        else:
            self.cmd_pub = self.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
        self.clock = ClockWatch(self)
        steady_timer(self, settings.diagnostics_period, self._diagnostics)
        self.mode = "inactive"

    def start_commanding(self) -> None:
        """Activate: the joint_states subscription and the watchdog (forward_command) or the trajectory timer."""
        self.mode = "waiting for joint_states"
        if self.settings.output == "joint_trajectory":
            self.last_trajectory_time: float | None = None
            self.create_timer(1.0 / self.settings.trajectory_rate, self._publish_trajectory)
            self.mode = "waiting for a reference"
            return
        self.last_state_time, self.last_state_wall = None, time.monotonic()
        self.state_sub = self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS, raw=True)
        steady_timer(self, self.state_timeout / 2.0, self._watchdog)

    def safe_output(self) -> None:
        """Deactivate: ``safe_mode``'s torque once (zero, or gravity at the last state; within the
        effort limit), or an empty trajectory (a joint_trajectory_controller stops and holds)."""
        self.state_sub = None
        self.mode = f"inactive: safe output ({self.law.config.safe_mode}) sent"
        if self.settings.output == "joint_trajectory":
            self.trajectory_msg.points = []
            self.trajectory_pub.publish(self.trajectory_msg)
            return
        tau = self._safe(self.last_q) if self.last_q is not None else np.zeros_like(self.previous)
        limit = self.law.config.effort_limit
        self.previous = np.clip(np.where(np.isfinite(tau), tau, 0.0), -limit, limit)
        self.command_out.data[:] = self.previous
        self.cmd_pub.publish(self.command_out.serialized())
        self.commands_published += 1

    @property
    def blend(self) -> ModelBlend:
        """The model switch in progress (parameters in use: ``blend.theta``, full, (p,))."""
        return self.law.blend

    def _feedforward_config(self, settings: FeedforwardSettings) -> FeedforwardConfig:
        """The control law's gains and limits from ``settings``, per joint (URDF effort limits unless set).

        Raises:
            ConfigError: a per-joint list of neither 1 nor one value per joint.
        """
        n = self.urdf_limit.size
        limit = (
            self.urdf_limit if settings.effort_limit is None else per_joint("effort_limit", settings.effort_limit, n)
        )
        return FeedforwardConfig(
            kp=np.array(per_joint("kp", settings.kp, n)),
            kd=np.array(per_joint("kd", settings.kd, n)),
            effort_limit=np.asarray(limit, dtype=float),
            rate_limit=np.array(per_joint("rate_limit", settings.rate_limit, n)),
            safe_mode=settings.safe_mode,
        )

    def _apply(self, settings: FeedforwardSettings) -> None:
        """Live settings changed: the next command uses the new gains, limits and blend rate."""
        self.settings = settings
        self.law.config = self._feedforward_config(settings)
        self.law.blend.rate = settings.blend_rate
        self.get_logger().info(
            f"now kp {settings.kp}, kd {settings.kd}, effort_limit {settings.effort_limit or 'URDF'}, "
            f"rate_limit {settings.rate_limit}, safe_mode {settings.safe_mode}, blend_rate {settings.blend_rate:g}"
        )

    def _on_parameters(self, msg: Float64MultiArray) -> None:
        """A new model: full parameters (p,), or base ones (r,) completed with the nominal dependents."""
        n_full, n_base = self.law.regressor.n_parameters, self.base.n_base
        values, reason = array_values(msg, n_base if len(msg.data) == n_base else n_full)
        if values is None:
            self.get_logger().error(
                f"model parameters ignored: {reason} ({n_full} full or {n_base} base parameters)",
                throttle_duration_sec=5.0,
            )
            return
        if values.size == n_base and n_base != n_full:
            values = self.base.to_full(values, self.theta_nominal)  # same torques (P theta = values)
        try:
            self.law.set_target(values)
        except ModelError as exc:
            self.get_logger().error(f"model parameters ignored: {exc}", throttle_duration_sec=5.0)
            return
        self.model_source = "identifier"
        self.tracking_mode = f"tracking ({self.model_source} model)"

    def _on_reference(self, msg: JointTrajectory) -> None:
        order = self.index.order(msg.joint_names)
        if order is None or not msg.points:
            self.get_logger().warning("reference ignored: joints missing or no points", throttle_duration_sec=2.0)
            return
        t = trajectory_times(msg)
        try:
            q = np.array([np.asarray(p.positions, dtype=float)[order] for p in msg.points])
            qd = np.array(
                [
                    np.asarray(p.velocities, dtype=float)[order] if p.velocities else np.zeros(order.size)
                    for p in msg.points
                ]
            )
            qdd = np.array(
                [
                    np.asarray(p.accelerations, dtype=float)[order] if p.accelerations else np.zeros(order.size)
                    for p in msg.points
                ]
            )
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(qdd))):
                raise ValueError("non-finite values")
            self.reference.set(t, q, qd, qdd)
        except (IndexError, ValueError) as exc:
            self.get_logger().warning(f"reference ignored: {exc}", throttle_duration_sec=2.0)

    @property
    def rejected(self) -> int:
        """joint_states messages dropped so far (every reason)."""
        return self.drops.total

    def _on_state(self, data: bytes) -> None:
        """A serialized joint state: answered with one command (the 1 kHz path)."""
        reason = self.state_reader.read(data)
        if reason:
            self.drops.add(reason)
            return
        t = self.state_reader.stamp
        reason = self.stamps.accept(t)
        if reason:
            self.drops.add(reason)  # no command: the robot's own state of this instant was answered
            return
        if self.stamps.restarted:
            self.get_logger().warning(
                f"clock restarted: {self.stamps.confirm} states in a row went from {self.last_state_time or 0.0:.3f} "
                f"to {t:.3f} s; restarting",
                throttle_duration_sec=2.0,
            )
            self.last_state_time = None
        q, qd = self.state_reader.values  # views, overwritten by the next read
        dt = 0.001 if self.last_state_time is None else t - self.last_state_time
        self._last_q[:] = q
        self.last_state_time, self.last_state_wall, self.last_q = t, time.monotonic(), self._last_q
        ref = self.reference.sample(t)
        if ref is None:
            self.mode = "reference stale or missing: safe output"
            self._send(self._safe(q), dt)
            return
        self.mode = self.tracking_mode
        q_ref, qd_ref, qdd_ref = ref
        self._send(self.law.command(q, qd, q_ref, qd_ref, qdd_ref, dt), dt)
        if self.commands_published % TRACKING_ERROR_EVERY == 0:  # monitoring after the command
            np.subtract(q_ref, q, out=self.tracking_error)
            self.error_out.data[:] = self.tracking_error
            self.error_pub.publish(self.error_out.serialized())

    def _safe(self, q: np.ndarray) -> np.ndarray:
        if self.law.config.safe_mode == "gravity":
            return self.law.gravity(q)
        return np.zeros_like(q)

    def _send(self, tau: np.ndarray, dt: float) -> None:
        if not all_finite(tau.tolist()):
            self.nonfinite_commands += 1
            tau = self._safe(self.last_q) if self.last_q is not None else np.zeros_like(tau)
        self.previous[:] = saturate(tau, self.previous, self.law.config, dt, out=self.command_out.data)
        self.cmd_pub.publish(self.command_out.serialized())
        self.commands_published += 1

    # -- joint_trajectory output -----------------------------------------------------------------
    def _start_trajectory_output(self, settings: FeedforwardSettings) -> None:
        """Publisher and preallocated message of the ``joint_trajectory`` output (its timer: `start_commanding`).

        Raises:
            ConfigError: ``controller_joints`` is not an ordering of the robot's joints, or the
                horizon holds no point.
        """
        names = tuple(name for name in settings.controller_joints if name) or tuple(self.joints)
        if sorted(names) != sorted(self.joints):
            raise ConfigError(
                f"controller_joints = {list(settings.controller_joints)}: expected the joints {list(self.joints)} "
                "in the order of the controller's joints parameter ([''] = this order)"
            )
        self.controller_order = np.array([self.joints.index(name) for name in names])
        count = int(np.floor(settings.trajectory_horizon / settings.trajectory_spacing + 1e-9))
        if count < 1:
            raise ConfigError(
                f"trajectory_horizon = {settings.trajectory_horizon!r} s holds no point at trajectory_spacing = "
                f"{settings.trajectory_spacing!r} s: expected horizon >= spacing"
            )
        offsets: NDArray[np.float64] = np.arange(1, count + 1, dtype=np.float64)
        self.point_offsets = settings.trajectory_spacing * offsets
        self.trajectory_msg = JointTrajectory()
        self.trajectory_msg.joint_names = list(names)
        self.trajectory_points = [JointTrajectoryPoint() for _ in range(count)]
        for point, offset in zip(self.trajectory_points, self.point_offsets):
            sec = int(offset)
            point.time_from_start = Duration(sec=sec, nanosec=int(round((offset - sec) * 1e9)))
        self.trajectory_pub = self.create_publisher(
            JointTrajectory, "joint_trajectory_controller/joint_trajectory", COMMAND_QOS
        )

    def _publish_trajectory(self) -> None:
        """The reference from now to the horizon, with the model's torques, in the controller's order."""
        now = self.get_clock().now().nanoseconds * 1e-9
        period = 1.0 / self.settings.trajectory_rate
        dt = period if self.last_trajectory_time is None else now - self.last_trajectory_time
        states, efforts = trajectory_points(self.law, self.reference, now + self.point_offsets, self.previous, dt)
        if efforts.shape[0] == 0:
            self.mode = "reference stale or missing: no trajectory sent"
            return
        self.mode = self.tracking_mode
        order = self.controller_order
        msg = self.trajectory_msg
        msg.header.stamp = seconds_to_stamp(now)
        msg.points = self.trajectory_points[: efforts.shape[0]]
        for point, state, effort in zip(msg.points, states, efforts):
            point.positions = state[0, order].tolist()
            point.velocities = state[1, order].tolist()
            point.accelerations = state[2, order].tolist()
            point.effort = effort[order].tolist()
        self.trajectory_pub.publish(msg)
        self.previous, self.last_trajectory_time = efforts[0], now
        self.commands_published += 1

    def _watchdog(self) -> None:
        if self.last_q is None or time.monotonic() - self.last_state_wall < self.state_timeout:
            return
        clock = self.clock.why(self.state_timeout)
        stale = f"joint_states stale for more than {self.state_timeout:g} s"
        self.mode = f"{stale}, {clock}: safe output" if clock else f"{stale}: safe output"
        self._send(self._safe(self.last_q), self.state_timeout / 2.0)

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        level = OK if self.mode.startswith("tracking") else WARN
        message = self.mode
        values: dict[str, object] = {
            "mode": self.mode,
            "output": self.settings.output,
            "model": self.model_source,
            "model_switch_progress": self.blend.progress,
            "commands_published": self.commands_published,
            "nonfinite_commands_replaced": self.nonfinite_commands,
            **self.drops.diagnostic_values(),
            "clock_restarts": self.stamps.restarts,
            "tracking_error": list(self.tracking_error),
            "last_command": list(self.previous),
        }
        if self.state_sub is not None:
            values["joint_states_publishers"], crowded = publisher_warning(self, self.state_sub.topic_name)
            if crowded:
                level, message = WARN, f"{crowded}; {message}"
        msg.status = [make_status("motor_ident: feedforward", ",".join(self.joints), level, message, values)]
        self.diag_pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident feedforward``."""
    run_node(FeedforwardNode, args)


if __name__ == "__main__":
    main()
