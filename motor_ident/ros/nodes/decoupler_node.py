"""``decoupler``: joint space <-> motor space through the robot's transmission (Guedelha et al. 2021, eq. 11-12).

For every configured coupling group (and one motor per uncoupled joint), with T the coupling of
`motor_ident.core.actuators.transmission`:

- ``joint_states`` (joint names) -> ``~/motor_states`` (motor names): position ``T^-1 q``,
  velocity ``T^-1 qd``, effort ``T' tau`` (the torque each motor chain delivers);
- ``motor_states`` (motor names) -> ``~/joint_states`` (joint names): position ``T q_m``,
  velocity ``T qd_m``, effort ``T^-T tau_m``; with ``motor_states_at_rotor`` the motor encoders
  are rotor-side and divided by the gear ratio first (torques multiplied by it);
- joint torque commands (Float64MultiArray, the config's joint order) on ``joint_commands_topic``
  (default ``~/joint_commands``; a scenario sets ``effort_controller/commands`` to convert the
  computed-torque ``feedforward`` node's output) -> ``~/motor_commands`` (motor torques ``T' tau``
  in the transmission's motor order, e.g. for ``pwm_feedforward`` with ``command_space: motor``).

Motor-side quantities are at the gearbox outputs. The motor order is the read-only parameter
``motor_names``. A bad message (missing name, wrong length, NaN, a damaged buffer) is dropped,
counted and reported in /diagnostics; the node never publishes a non-finite value.

Every input sits on the 1 kHz path, so messages are read and written as serialized bytes
(`motor_ident.ros.wire.wire`): the republished states carry the input's stamp and an empty frame id.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.publisher import Publisher
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS, declare, load_robot, run_node, steady_timer
from motor_ident.ros.runtime.parameters import declare_settings
from motor_ident.ros.wire.conversions import OK, WARN, InputDrops, make_status
from motor_ident.ros.wire.wire import Float64ArrayReader, Float64ArrayWriter, JointStateReader, JointStateWriter
from motor_ident.scenario.nodes import DecouplerSettings

FIELDS = ("position", "velocity", "effort")
ArrayMap = Callable[[np.ndarray], np.ndarray]


class DecouplerNode(Node):
    """Adapter between `motor_ident.core.actuators.transmission.Transmission` and ROS."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("decoupler", **kwargs)  # type: ignore[arg-type]
        self.settings = settings = declare_settings(self, DecouplerSettings)
        config = load_robot(settings.robot)
        self.transmission = config.build_transmission()
        self.at_rotor = settings.motor_states_at_rotor
        declare(self, "motor_names", list(self.transmission.motors), "motor order of ~/motor_commands", read_only=True)
        tr = self.transmission
        self.to_motor: tuple[ArrayMap, ArrayMap, ArrayMap] = (tr.motor_position, tr.motor_velocity, tr.motor_torque)
        self.to_joint: tuple[ArrayMap, ArrayMap, ArrayMap] = (tr.joint_position, tr.joint_velocity, tr.joint_torque)
        if self.at_rotor:  # rotor encoders: angles and speeds / rho, torques * rho first
            self.to_joint = (
                lambda q: tr.joint_position(tr.motor_velocity_from_rotor(q)),
                lambda qd: tr.joint_velocity(tr.motor_velocity_from_rotor(qd)),
                lambda tau: tr.joint_torque(np.asarray(tau) * tr.gear_ratio),
            )
        self.joint_reader = JointStateReader(tr.joints, FIELDS)
        self.motor_reader = JointStateReader(tr.motors, FIELDS)
        self.motor_state_out = JointStateWriter(tr.motors)
        self.joint_state_out = JointStateWriter(tr.joints)
        self.command_reader = Float64ArrayReader(tr.n)
        self.command_out = Float64ArrayWriter(len(tr.motors))
        self.counts = {"joint_states": 0, "motor_states": 0, "joint_commands": 0}
        self.drops = InputDrops(tuple(self.counts), self.get_logger())
        self.last_problem = ""

        self.motor_state_pub = self.create_publisher(JointState, "~/motor_states", STATE_QOS)
        self.joint_state_pub = self.create_publisher(JointState, "~/joint_states", STATE_QOS)
        self.command_pub = self.create_publisher(Float64MultiArray, "~/motor_commands", COMMAND_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, STATE_QOS, raw=True)
        self.create_subscription(JointState, "motor_states", self._on_motor_states, STATE_QOS, raw=True)
        self.create_subscription(
            Float64MultiArray, settings.joint_commands_topic, self._on_joint_commands, COMMAND_QOS, raw=True
        )
        steady_timer(self, settings.diagnostics_period, self._diagnostics)  # on in a stopped /clock too

    @property
    def dropped(self) -> int:
        """Messages dropped so far, every input."""
        return self.drops.total

    def _drop(self, what: str, reason: str) -> None:
        self.drops.add(what, reason)
        self.last_problem = self.drops.last

    def _on_joint_states(self, data: bytes) -> None:
        self._relay(data, "joint_states", self.joint_reader, self.to_motor, self.motor_state_out, self.motor_state_pub)

    def _on_motor_states(self, data: bytes) -> None:
        self._relay(data, "motor_states", self.motor_reader, self.to_joint, self.joint_state_out, self.joint_state_pub)

    def _relay(
        self,
        data: bytes,
        what: str,
        reader: JointStateReader,
        maps: tuple[ArrayMap, ArrayMap, ArrayMap],
        out: JointStateWriter,
        publisher: Publisher,
    ) -> None:
        """Position, velocity and effort of a serialized state through ``maps``, republished."""
        reason = reader.read(data)
        if reason:
            self._drop(what, reason)
            return
        position, velocity, effort = reader.values
        out.position[:] = maps[0](position)
        out.velocity[:] = maps[1](velocity)
        out.effort[:] = maps[2](effort)
        out.set_stamp(reader.sec, reader.nanosec)
        publisher.publish(out.serialized())
        self.counts[what] += 1

    def _on_joint_commands(self, data: bytes) -> None:
        reason = self.command_reader.read(data)
        if reason:
            self._drop("joint_commands", reason)
            return
        self.command_out.data[:] = self.transmission.motor_torque(self.command_reader.values)
        self.command_pub.publish(self.command_out.serialized())
        self.counts["joint_commands"] += 1

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        level = WARN if self.last_problem else OK
        message = self.last_problem or "converting"
        groups = {g.name: f"{list(g.joints)} <- {list(g.motors)}" for g in self.transmission.groups if g.n > 1}
        values: dict[str, object] = {**self.counts, **self.drops.diagnostic_values(), **groups}
        msg.status = [make_status("motor_ident: decoupler", ",".join(self.transmission.motors), level, message, values)]
        self.diag_pub.publish(msg)
        self.last_problem = ""


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident decoupler``."""
    run_node(DecouplerNode, args)


if __name__ == "__main__":
    main()
