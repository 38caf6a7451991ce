"""``sim_robot``: the simulated robot, speaking the topics of a ros2_control robot.

Publishes ``joint_states`` (position, velocity, effort = measured joint torque), ``motor_states``
(rotor encoders and motor torques at the rotors, names and order = the motors of the robot
config's transmission: a coupling group's ``motors``, an uncoupled joint's motor named after the
joint) and ``/clock``. With ``motor_effort: motor_current`` or ``motor_pwm`` the motor states'
effort holds what the drives read instead of the rotor torque: currents [A] made with true drive
gains a few percent off the config's nominal ones, or duty cycles; with ``publish_wrench`` the
robot config's F/T sensor publishes ``ft_sensor/wrench`` (`motor_ident.sim.sensors`).

It takes the commands of ONE ros2_control command interface, chosen by ``command_interface``
(std_msgs/Float64MultiArray, as ros2_controllers' forward command controllers take them); the
other topic is not subscribed, so a command is never applied twice:

- ``effort``: joint torques on ``effort_controller/commands``, joint order of the robot config;
- ``pwm``: motor duty cycles on ``pwm_controller/commands``, motor order (the robot config's
  transmission, as the decoupler's and pwm_feedforward's ``motor_names``), driving the motor
  chains (K_pwm*, tau_0, back-EMF, friction, rotor inertia of every motor) that move the joints
  through the coupling T. The measured joint torque is then the link-side one, as from joint
  torque sensors (an iCub's F/T-based estimates).

The physics is the plant of ``engine`` (`motor_ident.sim.engines.make_plant`):
`motor_ident.sim.plant.SimulatedRobot` (pinocchio, its docstring has the equations) or
`motor_ident.sim.mujoco_plant.MujocoRobot` (MuJoCo, joint torques only).

Two ways to run:
- ``lockstep: false``: a wall timer steps at ``rate_hz`` (real time), holding the last command.
- ``lockstep: true``: after each published state the node waits for the controller's command
  and steps as soon as it arrives (faster than real time, deterministic); if none arrives within
  ``lockstep_timeout`` of wall time it steps with the held command. Commands carry no stamp, so
  the node counts the states it is owed a command for (`motor_ident.sim.lockstep.CommandLedger`):
  the late answer to a state it stepped past is held, not stepped on, and the loop stays in step.

``/diagnostics`` (status ``motor_ident: sim_robot``) has the counts of steps, commands and rejected
commands and, in lockstep, the ledger's counts: WARN when timeout steps happened since the last
status. The stop log line has the same counts.
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.errors import ConfigError
from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS, load_robot, run_node
from motor_ident.ros.runtime.lockstep import LOCKSTEP_COMMAND_QOS, LockstepWait
from motor_ident.ros.runtime.parameters import declare_settings
from motor_ident.ros.wire.conversions import OK, WARN, array_values, make_joint_state, make_status, seconds_to_stamp
from motor_ident.scenario.nodes import SimRobotSettings
from motor_ident.sim.engines import make_plant
from motor_ident.sim.sensors import SimSensors


class SimRobotNode(Node):
    """Adapter between a simulated robot (`motor_ident.sim.engines.Plant`) and ROS topics."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("sim_robot", **kwargs)  # type: ignore[arg-type]
        self.settings = declare_settings(self, SimRobotSettings)
        config = load_robot(self.settings.robot)
        plant_config = self.settings.plant
        self.lockstep = self.settings.lockstep
        self.lockstep_timeout = self.settings.lockstep_timeout
        self.duration = self.settings.duration
        try:
            self.sim = make_plant(config, plant_config)
        except ConfigError as exc:
            raise ConfigError(
                f"parameter robot = {config.name!r}, engine = {plant_config.engine!r}, "
                f"command_interface = {plant_config.command_interface!r}: {exc}"
            ) from None
        self.joint_names = list(config.joints)
        order = [name for name in self.settings.joint_state_order if name]
        if order and sorted(order) != sorted(self.joint_names):
            raise ConfigError(f"parameter joint_state_order = {order}: expected a permutation of {self.joint_names}")
        self.publish_index = np.array(
            [self.joint_names.index(j) for j in order] if order else range(len(self.joint_names))
        )
        self.published_names = [self.joint_names[i] for i in self.publish_index]
        self.motor_names = list(self.sim.transmission.motors)
        self.command_interface = plant_config.command_interface
        self.state_pub = self.create_publisher(JointState, "joint_states", STATE_QOS)
        self.motor_pub = self.create_publisher(JointState, "motor_states", STATE_QOS)
        self.sensors = SimSensors(config, self.settings.sensors)  # motor_states.effort as currents / PWM, F/T
        if self.settings.sensors.publish_wrench and getattr(self.sim, "qdd", None) is None:
            raise ConfigError(f"publish_wrench: engine {plant_config.engine!r} gives no joint accelerations")
        self.wrench_pub = (
            self.create_publisher(WrenchStamped, "ft_sensor/wrench", STATE_QOS)
            if self.settings.sensors.publish_wrench
            else None
        )
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.settings.publish_clock else None
        qos = LOCKSTEP_COMMAND_QOS if self.lockstep else COMMAND_QOS
        if self.command_interface == "pwm":
            sub = self.create_subscription(Float64MultiArray, "pwm_controller/commands", self._on_pwm, qos)
        else:
            sub = self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_effort, qos)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.rejected_commands = 0
        self.commands_applied = 0  # valid commands held (in lockstep, stepped on or not)
        self.steps = 0
        self.wait = LockstepWait(self, self.lockstep_timeout, sub.topic_name) if self.lockstep else None
        # lockstep: check the wait often enough to step within ~1.5 lockstep_timeout of the last state or command
        period = min(0.05, 0.5 * self.lockstep_timeout) if self.lockstep else 1.0 / plant_config.rate_hz
        self.timer = self.create_timer(period, self._on_timer)
        self.create_timer(self.settings.diagnostics_period, self._diagnostics)
        self._publish()
        self.get_logger().info(
            f"simulating {config.name} ({len(self.joint_names)} joints) with {plant_config.engine} at "
            f"{plant_config.rate_hz:g} Hz, "
            f"{'lockstep' if self.lockstep else 'real time'}, {self.command_interface} commands"
        )

    @property
    def finished(self) -> bool:
        """True once ``duration`` of simulated time has passed."""
        return self.duration > 0.0 and self.sim.t >= self.duration

    def _on_effort(self, msg: Float64MultiArray) -> None:
        values, reason = array_values(msg, len(self.joint_names))
        if values is None:
            self._reject("effort", reason)
            return
        self.sim.set_effort(values)
        self._applied()

    def _on_pwm(self, msg: Float64MultiArray) -> None:
        values, reason = array_values(msg, len(self.motor_names))
        if values is None:
            self._reject(f"pwm (motors {self.motor_names})", reason)
            return
        self.sim.set_pwm(values)
        self._applied()

    def _reject(self, what: str, reason: str) -> None:
        self.rejected_commands += 1
        self.get_logger().warning(f"{what} command ignored: {reason}", throttle_duration_sec=2.0)

    def _applied(self) -> None:
        self.commands_applied += 1
        if self.wait is not None and self.wait.command():
            self._advance()

    def _on_timer(self) -> None:
        if self.wait is None or self.wait.due():
            self._advance()

    def _advance(self) -> None:
        if self.finished:
            return
        self.sim.step()
        self.steps += 1
        self._publish()
        if self.finished:
            self._diagnostics()  # the final counts, for a run that ends here

    def _diagnostics(self) -> None:
        values: dict[str, object] = {
            "steps": self.steps,
            "commands": self.commands_applied,
            "rejected_commands": self.rejected_commands,
            "sim_time": self.sim.t,
        }
        level, message = (WARN, "rejected commands") if self.rejected_commands else (OK, "running")
        if self.wait is not None:
            level, message = self.wait.merge_status(level, message, values)
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [make_status("motor_ident: sim_robot", ",".join(self.joint_names), level, message, values)]
        self.diag_pub.publish(msg)

    def destroy_node(self) -> None:
        """Log the run's counts (none when the constructor refused its parameters), then destroy."""
        if "wait" in vars(self):  # set after the counts
            counts = f"{self.steps} steps, {self.commands_applied} commands, {self.rejected_commands} rejected"
            lockstep = f"; {self.wait.stop_line()}" if self.wait is not None else ""
            self.get_logger().info(f"stopping at t = {self.sim.t:.3f} s: {counts}{lockstep}")
        super().destroy_node()

    def _publish(self) -> None:
        m = self.sim.measure()
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=seconds_to_stamp(m.t)))
        i = self.publish_index
        self.state_pub.publish(make_joint_state(self.published_names, m.t, m.q[i], m.qd[i], m.effort[i]))
        effort = self.sensors.motor_effort(m.effort, m.qd, m.motor_effort)
        self.motor_pub.publish(make_joint_state(self.motor_names, m.t, m.motor_position, m.motor_velocity, effort))
        if self.wrench_pub is not None:
            self._publish_wrench(m.t, m.q, m.qd)
        if self.wait is not None:
            self.wait.published()

    def _publish_wrench(self, t: float, q: np.ndarray, qd: np.ndarray) -> None:
        w = self.sensors.wrench(q, qd, getattr(self.sim, "qdd", np.zeros_like(q)))
        msg = WrenchStamped()
        msg.header.stamp = seconds_to_stamp(t)
        msg.header.frame_id = "ft_sensor"
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(x) for x in w[:3])
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(x) for x in w[3:])
        self.wrench_pub.publish(msg)  # type: ignore[union-attr]  # set when publish_wrench


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident sim_robot``."""
    run_node(SimRobotNode, args)


if __name__ == "__main__":
    main()
