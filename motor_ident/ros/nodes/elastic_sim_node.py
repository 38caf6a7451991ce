"""``elastic_sim``: Xin et al.'s two-inertia test bench joints as a ros2_control-like robot with dual encoders.

Each joint is a `motor_ident.sim.elastic.ElasticJointBench` (Table 1 values, J_m for the 21 Hz
resonance, quantised motor and link encoders, cogging ripple on the motor side), with the load
inertia scaled by ``load_scale`` (Xin et al.'s robustness test uses 0.5 and 1.5). The node

- subscribes ``effort_controller/commands`` (Float64MultiArray, motor torque per joint [N m],
  link-side referred); a message of the wrong size or with a NaN is dropped and the last torque held;
- publishes ``joint_states`` (link encoder: position, velocity by backward difference, effort =
  motor torque) and ``motor_states`` (motor encoder divided by the gear ratio, i.e. link-side
  referred; names ``motor_names``), each step;
- steps on a wall timer at ``rate_hz``, or with ``lockstep`` once per command answering the newest
  state (a deterministic closed loop as fast as the machine allows; it republishes the first state
  until a command arrives, and steps with the held command when none arrives within
  ``lockstep_timeout``). Commands carry no stamp: the node counts the states it is owed a command
  for (`motor_ident.sim.lockstep.CommandLedger`), holds the late answer to a state it stepped past
  without stepping on it, and so stays in step;
- reports counts, dropped commands, the lockstep ledger (WARN after timeout steps) and the true
  link velocity's ripple in ``/diagnostics``, and the counts in its stop log line.
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.papers.xin.bench import xin_bench_parameters
from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS, run_node
from motor_ident.ros.runtime.lockstep import LOCKSTEP_COMMAND_QOS, LockstepWait
from motor_ident.ros.runtime.parameters import declare_settings
from motor_ident.ros.wire.conversions import OK, WARN, InputDrops, array_values, make_joint_state, make_status
from motor_ident.scenario.nodes import ElasticSimSettings, motor_names_of
from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig


class ElasticSimNode(Node):
    """Adapter between `ElasticJointBench` joints and ROS topics."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("elastic_sim", **kwargs)  # type: ignore[arg-type]
        self.settings = settings = declare_settings(self, ElasticSimSettings)
        self.joints = tuple(settings.joints)
        self.motors = motor_names_of(settings.motor_names, self.joints)
        self.rate_hz = settings.rate_hz
        self.lockstep = settings.lockstep
        self.lockstep_timeout = settings.lockstep_timeout
        self.duration = settings.duration
        load_scale = settings.load_scale
        ripple = settings.ripple_amplitude
        try:
            params = xin_bench_parameters()
            plant = params.with_load_inertia(params.load_inertia * load_scale)
            encoders = EncoderConfig(ripple_amplitude=ripple)
            self.benches = [ElasticJointBench(plant, encoders=encoders, rate_hz=self.rate_hz) for _ in self.joints]
        except MotorIdentError as exc:
            raise ConfigError(f"elastic_sim parameters: {exc}") from None
        self.torque = np.zeros(len(self.joints))
        self.counts = {"steps": 0, "commands": 0}
        self.drops = InputDrops(("command",), self.get_logger())
        self.last_problem = ""
        self.finished = False
        self.link_velocity: list[float] = []  # true link velocity of joint 0, for the ripple figure
        self.state_pub = self.create_publisher(JointState, "joint_states", STATE_QOS)
        self.motor_pub = self.create_publisher(JointState, "motor_states", STATE_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        qos = LOCKSTEP_COMMAND_QOS if self.lockstep else COMMAND_QOS
        sub = self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_command, qos)
        self.wait = LockstepWait(self, self.lockstep_timeout, sub.topic_name) if self.lockstep else None
        if not self.lockstep:
            self.create_timer(1.0 / self.rate_hz, self._step)
        else:
            self._kick = self.create_timer(min(0.05, 0.5 * self.lockstep_timeout), self._lockstep_watchdog)
        self.create_timer(settings.diagnostics_period, self._diagnostics)

    @property
    def t(self) -> float:
        """Simulated time [s]."""
        return self.benches[0].t

    def _on_command(self, msg: Float64MultiArray) -> None:
        values, reason = array_values(msg, len(self.joints))
        if values is None:
            self.drops.add("command", reason)
            self.last_problem = self.drops.last
        else:
            self.torque = values
            self.counts["commands"] += 1
            if self.wait is not None and self.wait.command():
                self._step()

    def _lockstep_watchdog(self) -> None:
        """Lockstep: republish the first state until the controller answers (discovery takes a
        moment); then, when no command comes within ``lockstep_timeout``, step with the held one."""
        if self.wait is None:
            return
        if self.counts["commands"] == 0:
            self._publish()
        elif self.wait.due():
            self._step()

    def _step(self) -> None:
        if self.finished:
            return
        for bench, tau in zip(self.benches, self.torque):
            bench.step(float(tau))
        self.counts["steps"] += 1
        self.link_velocity.append(float(self.benches[0].x[3]))
        if self.duration > 0.0 and self.t >= self.duration:
            self.finished = True
        self._publish()
        if self.finished:
            self._diagnostics()  # the final counts, for a run that ends here

    def _publish(self) -> None:
        if self.wait is not None:
            self.wait.published()
        readings = [bench.measure() for bench in self.benches]
        t = self.t
        link = make_joint_state(
            self.joints,
            t,
            np.array([m.link_position for m in readings]),
            np.array([m.link_velocity for m in readings]),
            self.torque,
        )
        motor = make_joint_state(
            self.motors,
            t,
            np.array([m.motor_position for m in readings]),
            np.array([m.motor_velocity for m in readings]),
            self.torque,
        )
        self.state_pub.publish(link)
        self.motor_pub.publish(motor)

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        tail = self.link_velocity[-int(self.rate_hz) :]
        values: dict[str, object] = {
            **self.counts,
            **self.drops.diagnostic_values(),
            "sim_time": self.t,
            "link_velocity_std_last_s": float(np.std(tail)) if tail else 0.0,
        }
        level, message = (WARN, self.last_problem) if self.last_problem else (OK, "running")
        if self.wait is not None:
            level, message = self.wait.merge_status(level, message, values)
        msg.status = [make_status("motor_ident: elastic_sim", ",".join(self.joints), level, message, values)]
        self.diag_pub.publish(msg)
        self.last_problem = ""

    def destroy_node(self) -> None:
        """Log the run's counts (none when the constructor refused its parameters), then destroy."""
        if "wait" in vars(self):  # set after the counts
            counts = f"{self.counts['steps']} steps, {self.counts['commands']} commands, {self.drops.total} dropped"
            lockstep = f"; {self.wait.stop_line()}" if self.wait is not None else ""
            self.get_logger().info(f"stopping at t = {self.t:.3f} s: {counts}{lockstep}")
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident elastic_sim``."""
    run_node(ElasticSimNode, args)


if __name__ == "__main__":
    main()
