"""``vrec_controller``: per-joint PI velocity loop with ripple elimination (VREC, Xin et al. 2020) on dual encoders.

Thin over `motor_ident.core.control.vrec.VrecController` and `motor_ident.core.elastic.dual_encoder`. Every joint is
a two-inertia drive (link-side referred parameters, see `motor_ident.core.elastic.two_inertia`); the node

- subscribes ``motor_states`` (motor encoders, names = ``motor_names``; link-side referred unless
  ``motor_states_at_rotor``, then divided by ``gear_ratio``) and ``joint_states`` (link encoders),
  and ``~/velocity_reference`` (Float64MultiArray, rad/s per joint, zero until received);
- on each ``motor_states`` sample with a fresh ``joint_states`` (younger than ``stale_timeout``),
  runs one VREC update per joint and publishes the motor torques [N m, link side] on
  ``effort_controller/commands`` (RELIABLE), saturated to ``torque_limit``, never NaN;
- publishes the dual-encoder signals for monitoring: ``~/deformation`` (JointState: position
  delta = theta_m - theta_l [rad], velocity its rate v_m - v_l [rad/s], effort the spring torque
  K delta + D delta_dot [N m]) and ``~/rigid_velocity`` (JointState velocity: v_r of Xin et al. 2020,
  eq. 4-6 [rad/s]);
- reports gains, designed damping, counts and why samples were dropped in ``/diagnostics``.

The ripple elimination gain K of each joint is ``gain`` when given (finite), else designed from the
desired damping ratio ``damping_ratio`` of the closed-loop resonant poles (`design_gain`).
"""

from __future__ import annotations

import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.core.control.vrec import VrecConfig, VrecController, design_gain
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.papers.xin.bench import XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
from motor_ident.ros.common import COMMAND_QOS, STATE_QOS, declare, run_node
from motor_ident.ros.conversions import (
    OK,
    WARN,
    JointIndex,
    array_values,
    joint_state_arrays,
    make_array,
    make_joint_state,
    make_status,
    stamp_to_seconds,
)

FIELDS = ("position", "velocity")


def _per_joint(node: Node, name: str, default: float, n: int, description: str) -> np.ndarray:
    """A double-array parameter with one value per joint (a single value is broadcast)."""
    raw = declare(node, name, [float(default)], description)
    values = np.asarray(raw, dtype=float).ravel()
    if values.size == 1:
        values = np.full(n, values[0])
    if values.shape != (n,):
        raise ConfigError(f"parameter {name} has {values.size} values: expected 1 or {n} (one per joint)")
    return values


class VrecControllerNode(Node):
    """Adapter between per-joint `VrecController` loops and ROS."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("vrec_controller", **kwargs)  # type: ignore[arg-type]
        self.joints = tuple(declare(self, "joints", ["joint1"], "link joint names, in command order"))
        n = len(self.joints)
        motors = tuple(declare(self, "motor_names", list(self.joints), "motor names in motor_states, joint order"))
        if n == 0 or len(motors) != n:
            raise ConfigError(f"parameter motor_names has {len(motors)} names: expected {n}, one per joint")
        side = str(declare(self, "side", "motor", "velocity feedback: 'motor' (K > 0) or 'link' (K < 0)"))
        rate_hz = float(declare(self, "rate_hz", 1000.0, "rate of motor_states, the loop's sample rate [Hz]"))
        if not (math.isfinite(rate_hz) and rate_hz > 0.0):
            raise ConfigError(f"parameter rate_hz = {rate_hz!r}: expected a finite number > 0")
        self.stale_timeout = float(declare(self, "stale_timeout", 0.05, "joint_states older than this are stale [s]"))
        self.at_rotor = bool(
            declare(self, "motor_states_at_rotor", False, "motor_states are rotor encoders (divide by gear_ratio)")
        )
        self.gear_ratio = _per_joint(self, "gear_ratio", 1.0, n, "gear ratio N per joint (motor_states_at_rotor)")
        bench = xin_bench_parameters()  # defaults: Xin et al.'s test bench (Table 1, J_m for the 21 Hz resonance)
        arrays = {
            key: _per_joint(self, key, default, n, description)
            for key, default, description in (
                ("motor_inertia", bench.motor_inertia, "J_m, link-side referred [kg m^2]"),
                ("load_inertia", bench.load_inertia, "J_l [kg m^2]"),
                ("stiffness", bench.stiffness, "K [N m/rad]"),
                ("motor_damping", bench.motor_damping, "B_m, link-side referred [N m s/rad]"),
                ("load_damping", bench.load_damping, "B_l [N m s/rad]"),
                ("damping", bench.damping, "joint damping D [N m s/rad]"),
                (
                    "kp",
                    XIN_MOTOR_KP,
                    "PI proportional gain [N m s/rad] (Xin et al. 2020: 480 motor side, 168 link side)",
                ),
                ("ki", XIN_MOTOR_KI, "PI integral gain [N m/rad] (Xin et al. 2020: 2400 motor side, 1200 link side)"),
                ("damping_ratio", 0.707, "xi of the closed-loop resonant poles that K is designed for [-]"),
                ("gain", float("nan"), "ripple elimination gain K [-]; NaN: design it from damping_ratio"),
                ("torque_limit", 272.0, "|motor torque| bound, link-side referred [N m]"),
            )
        }
        if np.any(~(arrays["torque_limit"] > 0.0)) or not np.all(np.isfinite(arrays["torque_limit"])):
            raise ConfigError(f"parameter torque_limit = {arrays['torque_limit'].tolist()}: expected finite values > 0")
        if np.any(~(self.gear_ratio > 0.0)):
            raise ConfigError(f"parameter gear_ratio = {self.gear_ratio.tolist()}: expected values > 0")
        self.torque_limit = arrays["torque_limit"]
        self.plants: list[TwoInertiaParameters] = []
        self.controllers: list[VrecController] = []
        for j in range(n):
            try:
                plant = TwoInertiaParameters(
                    motor_inertia=float(arrays["motor_inertia"][j]),
                    load_inertia=float(arrays["load_inertia"][j]),
                    stiffness=float(arrays["stiffness"][j]),
                    motor_damping=float(arrays["motor_damping"][j]),
                    load_damping=float(arrays["load_damping"][j]),
                    damping=float(arrays["damping"][j]),
                )
                kp, ki = float(arrays["kp"][j]), float(arrays["ki"][j])
                gain = float(arrays["gain"][j])
                if not math.isfinite(gain):
                    gain = design_gain(plant, side, kp, ki, float(arrays["damping_ratio"][j]))
                config = VrecConfig(side, kp, ki, gain, torque_limit=float(self.torque_limit[j]))
            except MotorIdentError as exc:
                raise ConfigError(f"joint {self.joints[j]!r}: {exc}") from None
            self.plants.append(plant)
            self.controllers.append(VrecController(plant, config, rate_hz))
        self.stiffness = arrays["stiffness"]
        self.damping = arrays["damping"]
        self.side = side
        self.damping_ratio = arrays["damping_ratio"]

        self.joint_index = JointIndex(self.joints)
        self.motor_index = JointIndex(motors)
        self.motors = motors
        self.reference = np.zeros(n)
        self.link: tuple[float, np.ndarray, np.ndarray] | None = None  # receive time, q, qd
        self.last_command = np.zeros(n)
        self.counts = {"commands": 0, "dropped": 0, "stale": 0}
        self.last_problem = ""

        self.command_pub = self.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
        self.deformation_pub = self.create_publisher(JointState, "~/deformation", STATE_QOS)
        self.rigid_pub = self.create_publisher(JointState, "~/rigid_velocity", STATE_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, STATE_QOS)
        self.create_subscription(JointState, "motor_states", self._on_motor_states, STATE_QOS)
        self.create_subscription(Float64MultiArray, "~/velocity_reference", self._on_reference, COMMAND_QOS)
        self.create_timer(declare(self, "diagnostics_period", 0.5, "period of /diagnostics [s]"), self._diagnostics)

    @property
    def gains(self) -> list[float]:
        """The ripple elimination gain K of each joint."""
        return [c.config.gain for c in self.controllers]

    def _drop(self, what: str, reason: str) -> None:
        self.counts["dropped"] += 1
        self.last_problem = f"{what} dropped: {reason}"
        self.get_logger().warning(self.last_problem, throttle_duration_sec=2.0)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_reference(self, msg: Float64MultiArray) -> None:
        values, reason = array_values(msg, len(self.joints))
        if values is None:
            self._drop("velocity_reference", reason)
            return
        self.reference = values

    def _on_joint_states(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self.joint_index, FIELDS)
        if not arrays:
            self._drop("joint_states", reason)
            return
        self.link = (self._now(), arrays[0], arrays[1])

    def _on_motor_states(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self.motor_index, FIELDS)
        if not arrays:
            self._drop("motor_states", reason)
            return
        if self.link is None or self._now() - self.link[0] > self.stale_timeout:
            self.counts["stale"] += 1
            self.last_problem = "joint_states missing or stale: no command"
            return
        theta_m, v_m = arrays
        if self.at_rotor:
            theta_m, v_m = theta_m / self.gear_ratio, v_m / self.gear_ratio
        _, theta_l, v_l = self.link
        n = len(self.joints)
        tau = np.zeros(n)
        rigid = np.zeros(n)
        for j, controller in enumerate(self.controllers):
            tau[j] = controller.update(float(self.reference[j]), float(v_m[j]), float(v_l[j]))
            rigid[j] = controller.rigid_velocity
        tau = np.where(np.isfinite(tau), tau, 0.0)  # VrecController never returns NaN; this line makes sure
        tau = np.clip(tau, -self.torque_limit, self.torque_limit)
        self.last_command = tau
        self.command_pub.publish(make_array(tau))
        self.counts["commands"] += 1
        t = stamp_to_seconds(msg.header.stamp)
        delta, rate = theta_m - theta_l, v_m - v_l
        spring = self.stiffness * delta + self.damping * rate
        self.deformation_pub.publish(make_joint_state(self.joints, t, delta, rate, spring))
        self.rigid_pub.publish(make_joint_state(self.joints, t, None, rigid))

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        level = WARN if self.last_problem else OK
        values: dict[str, object] = {
            **self.counts,
            "side": self.side,
            "gain_K": self.gains,
            "damping_ratio": self.damping_ratio.tolist(),
            "last_command": self.last_command.tolist(),
        }
        msg.status = [
            make_status(
                "motor_ident: vrec_controller", ",".join(self.joints), level, self.last_problem or "running", values
            )
        ]
        self.diag_pub.publish(msg)
        self.last_problem = ""


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident vrec_controller``."""
    run_node(VrecControllerNode, args)


if __name__ == "__main__":
    main()
