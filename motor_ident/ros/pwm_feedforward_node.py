"""``pwm_feedforward``: desired joint torques -> motor duty cycles on ``pwm_controller/commands``.

Each desired joint-torque vector on ``effort_controller/commands`` (Float64MultiArray in the
config's joint order; the computed-torque ``feedforward`` node's output, remappable) becomes one
duty vector in the transmission's motor order (read-only parameter ``motor_names``), by
`motor_ident.core.feedforward_pwm.pwm_feedforward` (seed 000):

    duty = (T' tau_joint + friction(qd_motor) - tau_0 + back_emf qd_motor) / K_pwm*,  saturated to +-duty_limit

The motor chains' friction, K_pwm*, tau_0 and back-EMF are the robot config's motor values (those
that ``motor-ident experiment`` identifies). Motor velocities come from ``joint_states`` through
T^-1; when they are older than ``state_timeout`` (wall time) the velocity terms are left out and
/diagnostics says so. A bad message is dropped and counted; a duty is never NaN.
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.core.feedforward_pwm import ChainModel, PwmFeedforwardConfig, pwm_feedforward
from motor_ident.errors import ConfigError
from motor_ident.ros.common import COMMAND_QOS, STATE_QOS, declare, robot_from_parameters, run_node
from motor_ident.ros.conversions import OK, WARN, JointIndex, array_values, joint_state_arrays, make_array, make_status


class PwmFeedforwardNode(Node):
    """Adapter between `pwm_feedforward` and ROS."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("pwm_feedforward", **kwargs)  # type: ignore[arg-type]
        config = robot_from_parameters(self)
        self.transmission = config.build_transmission()
        chains = []
        for motor, drive, reflected in zip(
            self.transmission.motors, config.motor_drives(), self.transmission.reflected_inertia, strict=True
        ):
            if drive.motor is None:
                raise ConfigError(f"parameter robot = {config.name!r}: motor {motor!r} has no 'motor:' block (K_pwm*)")
            values = (
                drive.friction_values if drive.friction_values is not None else np.zeros(drive.friction.n_parameters)
            )
            chains.append(
                ChainModel(
                    friction=drive.friction,
                    friction_values=np.asarray(values, dtype=float),
                    motor=drive.motor,
                    reflected_inertia=float(reflected),
                )
            )
        self.chains = chains
        try:
            self.ff_config = PwmFeedforwardConfig(
                duty_limit=declare(self, "duty_limit", 1.0, "saturation of every duty cycle (1.0 = 100 %)"),
                friction_compensation=declare(self, "friction_compensation", True, "add the motors' friction"),
                smoothing_velocity=declare(self, "smoothing_velocity", 0.0035, "sign smoothing near rest [rad/s]"),
            )
        except ConfigError as exc:
            raise ConfigError(f"parameter {exc}") from None
        self.state_timeout = declare(self, "state_timeout", 0.1, "joint_states older than this (wall) are stale [s]")
        declare(self, "motor_names", list(self.transmission.motors), "motor order of the duty cycles", read_only=True)
        self.joint_index = JointIndex(self.transmission.joints)
        self.qd_motor = np.full(self.transmission.n, np.nan)
        self.last_state_wall: float | None = None
        self.published = 0
        self.saturated = 0
        self.dropped = 0
        self.last_problem = ""
        self.last_duty = np.zeros(self.transmission.n)

        self.pwm_pub = self.create_publisher(Float64MultiArray, "pwm_controller/commands", COMMAND_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)
        self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_desired, COMMAND_QOS)
        self.create_timer(declare(self, "diagnostics_period", 0.5, "period of /diagnostics [s]"), self._diagnostics)

    def _drop(self, what: str, reason: str) -> None:
        self.dropped += 1
        self.last_problem = f"{what} dropped: {reason}"
        self.get_logger().warning(self.last_problem, throttle_duration_sec=2.0)

    def _on_state(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self.joint_index, ("velocity",))
        if not arrays:
            self._drop("joint_states", reason)
            return
        self.qd_motor = self.transmission.motor_velocity(arrays[0])
        self.last_state_wall = time.monotonic()

    def _on_desired(self, msg: Float64MultiArray) -> None:
        tau, reason = array_values(msg, self.transmission.n)
        if tau is None:
            self._drop("effort_controller/commands", reason)
            return
        fresh = self.last_state_wall is not None and time.monotonic() - self.last_state_wall < self.state_timeout
        qd = self.qd_motor if fresh else np.full(self.transmission.n, np.nan)  # NaN: no velocity terms
        if not fresh:
            self.last_problem = "joint_states stale or missing: no friction or back-EMF compensation"
        duty = pwm_feedforward(tau, qd, self.transmission, self.chains, self.ff_config)
        limits = np.array([min(self.ff_config.duty_limit, c.motor.duty_limit) for c in self.chains])
        self.saturated += int(np.any(np.abs(duty) >= limits))
        self.pwm_pub.publish(make_array(duty))
        self.last_duty = duty
        self.published += 1

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        level = WARN if self.last_problem else OK
        values: dict[str, object] = {
            "commands_published": self.published,
            "saturated_commands": self.saturated,
            "dropped": self.dropped,
            "last_duty": list(self.last_duty),
            "friction_compensation": self.ff_config.friction_compensation,
        }
        hardware = ",".join(self.transmission.motors)
        msg.status = [make_status("motor_ident: pwm_feedforward", hardware, level, self.last_problem or "ok", values)]
        self.diag_pub.publish(msg)
        self.last_problem = ""


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident pwm_feedforward``."""
    run_node(PwmFeedforwardNode, args)


if __name__ == "__main__":
    main()
