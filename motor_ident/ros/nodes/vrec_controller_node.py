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
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.core.control.vrec import VrecConfig, VrecController, design_gain
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS, run_node, steady_timer
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import (
    OK,
    WARN,
    InputDrops,
    JointIndex,
    array_values,
    joint_state_arrays,
    make_array,
    make_joint_state,
    make_status,
    stamp_to_seconds,
)
from motor_ident.scenario.nodes import VrecControllerSettings, motor_names_of
from motor_ident.schema import per_joint

FIELDS = ("position", "velocity")


class VrecControllerNode(ManagedNode):
    """Adapter between per-joint `VrecController` loops and ROS (managed: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("vrec_controller", settings=VrecControllerSettings, **kwargs)

    def build(self) -> None:
        """Configure: the per-joint loops (gains designed here), publishers, link and reference inputs."""
        self.settings = settings = self.declared(VrecControllerSettings)
        self.joints = tuple(settings.joints)
        n = len(self.joints)
        motors = motor_names_of(settings.motor_names, self.joints)
        side = settings.side
        rate_hz = settings.rate_hz
        self.stale_timeout = settings.stale_timeout
        self.at_rotor = settings.motor_states_at_rotor
        self.gear_ratio = np.array(per_joint("gear_ratio", settings.gear_ratio, n))
        keys: tuple[str, ...] = ("motor_inertia", "load_inertia", "stiffness", "motor_damping", "load_damping")
        keys += ("damping", "kp", "ki", "damping_ratio", "gain", "torque_limit")
        arrays = {key: np.array(per_joint(key, getattr(settings, key), n)) for key in keys}
        if not np.all(np.isfinite(arrays["torque_limit"])):
            raise ConfigError(f"parameter torque_limit = {arrays['torque_limit'].tolist()}: expected finite values > 0")
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
        self.counts = {"commands": 0, "stale": 0}
        self.drops = InputDrops(("velocity_reference", "joint_states", "motor_states"), self.get_logger())
        self.last_problem = ""

        self.command_pub = self.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
        self.deformation_pub = self.create_publisher(JointState, "~/deformation", STATE_QOS)
        self.rigid_pub = self.create_publisher(JointState, "~/rigid_velocity", STATE_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, STATE_QOS)
        self.create_subscription(Float64MultiArray, "~/velocity_reference", self._on_reference, COMMAND_QOS)
        steady_timer(self, settings.diagnostics_period, self._diagnostics)  # on in a stopped /clock too

    def start_commanding(self) -> None:
        """Activate: each motor_states sample is answered with a command."""
        self.create_subscription(JointState, "motor_states", self._on_motor_states, STATE_QOS)

    def safe_output(self) -> None:
        """Deactivate: zero torque on every joint, once."""
        self.last_command = np.zeros(len(self.joints))
        self.command_pub.publish(make_array(self.last_command))
        self.last_problem = "inactive: zero torque sent"

    @property
    def gains(self) -> list[float]:
        """The ripple elimination gain K of each joint."""
        return [c.config.gain for c in self.controllers]

    def _drop(self, what: str, reason: str) -> None:
        self.drops.add(what, reason)
        self.last_problem = self.drops.last

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
            **self.drops.diagnostic_values(),
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
