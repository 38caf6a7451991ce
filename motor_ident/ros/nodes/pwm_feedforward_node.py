"""``pwm_feedforward``: desired torques -> motor duty cycles on ``pwm_controller/commands``.

Each desired torque vector on ``command_topic`` (Float64MultiArray) becomes one duty vector in the
transmission's motor order (read-only parameter ``motor_names``), by
`motor_ident.core.control.pwm.PwmFeedforward` (`pwm_feedforward` a sample at a time; Guedelha et al. 2021):

    duty = (tau_motor + friction(qd_motor) + D qdd_motor - tau_0 + back_emf qd_motor) / K_pwm*,
           saturated to +-duty_limit

The desired torques are joint torques (``command_space: joint``, the config's joint order, e.g.
the computed-torque ``feedforward`` node's ``effort_controller/commands``; ``tau_motor = T'
tau_joint``) or motor torques (``command_space: motor``, motor order, e.g. the decoupler's
``decoupler/motor_commands``, which are already ``T' tau_joint``). The motor chains' friction,
K_pwm*, tau_0, back-EMF and reflected rotor inertia D = rho^2 I are the robot config's motor
values (those that ``motor-ident experiment`` identifies).

Velocity and acceleration terms:

- by default ``qd_motor`` is the measured velocity, from ``joint_states`` through T^-1, and there
  is no rotor-inertia term;
- with ``reference_topic`` set (the trajectory the feedforward tracks, trajectory_msgs/
  JointTrajectory), ``qd_motor = T^-1 qd_ref`` and ``qdd_motor = T^-1 qdd_ref`` at the latest
  joint_states time: a feedforward along the desired motion. Why, on the icub_torso waist (K_v ~
  50 N m s/rad against 0.16 kg m^2 at the yaw): a friction compensation at the measured velocity,
  one sample late, acts as K_v dt ~ 0.05 kg m^2 of extra inertia and adds the velocity noise times
  K_v, and the computed-torque joint torque of a link model (joint torque sensors see no rotor)
  misses the rotors, which weigh more than the links there. Measured (ROS-free closed loop,
  3-4 Hz yaw excitation): yaw tracking error 0.025 rad RMS with neither, 0.0004 rad with both.
  Outside the reference's time span the measured velocity is used and there is no rotor-inertia
  term.

The velocity terms are left out, and /diagnostics says so, when the latest joint_states sample is
stamped more than ``state_timeout`` before now on the node's clock (the simulated clock with
``use_sim_time``): a robot that stopped publishing gets no friction compensation. On the
simulated clock a lockstep simulation waiting for its command is never stale, however long a
step takes on a loaded machine; judged on wall time, such stalls left single commands without
their friction compensation (25 N m less on a waist motor for one step), and the torque spikes
that followed broke the identification of the icub_torso scenario.

A bad message is dropped and counted; a duty is never NaN.
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from numpy.typing import NDArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from motor_ident.core.actuators.transmission import build_transmission
from motor_ident.core.control.pwm import ChainModel, PwmFeedforward
from motor_ident.errors import ConfigError
from motor_ident.ros.runtime.common import (
    COMMAND_QOS,
    STATE_QOS,
    ClockWatch,
    declare,
    load_robot,
    run_node,
    steady_timer,
)
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import (
    OK,
    WARN,
    InputDrops,
    JointIndex,
    make_status,
    trajectory_times,
)
from motor_ident.ros.wire.wire import Float64ArrayReader, Float64ArrayWriter, JointStateReader
from motor_ident.scenario.nodes import PwmFeedforwardSettings


class PwmFeedforwardNode(ManagedNode):
    """Adapter between `pwm_feedforward` and ROS (a managed node: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("pwm_feedforward", settings=PwmFeedforwardSettings, **kwargs)

    def build(self) -> None:
        """Configure: motor chains, transmission, publishers, the state and reference inputs."""
        self.settings = settings = self.declared(PwmFeedforwardSettings, self._apply)
        config = load_robot(settings.robot)
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
        self.ff_config = settings.core
        self.state_timeout = settings.state_timeout
        if not self.has_parameter("motor_names"):  # declared at the first configure
            declare(
                self, "motor_names", list(self.transmission.motors), "motor order of the duty cycles", read_only=True
            )
        self.command_space = settings.command_space
        # motor torques pass through unchanged: the identity transmission over the motors
        self.torque_map = (
            self.transmission if self.command_space == "joint" else build_transmission(self.transmission.motors)
        )
        self.feedforward = PwmFeedforward(self.torque_map, chains, settings.core)
        self.joint_index = JointIndex(self.transmission.joints)
        # the 1 kHz path reads and writes serialized messages (motor_ident.ros.wire.wire)
        self.state_reader = JointStateReader(self.transmission.joints, ("velocity",))
        self.desired_reader = Float64ArrayReader(self.transmission.n)
        self.duty_out = Float64ArrayWriter(self.transmission.n)
        self.no_velocity = np.full(self.transmission.n, np.nan)  # NaN: no velocity terms
        self.qd_motor = np.full(self.transmission.n, np.nan)
        self.last_state_time: float | None = None  # stamp of the latest joint_states [s]
        self.reference_time = np.zeros(0)
        self.reference_motor: NDArray[np.float64] = np.zeros((0, 2, self.transmission.n))  # (K, [qd, qdd], m)
        self.published = 0
        self.saturated = 0
        self.drops = InputDrops(("joint_states", "reference", "desired torques"), self.get_logger())
        self.last_problem = ""
        self.last_duty = np.zeros(self.transmission.n)
        self.clock = ClockWatch(self)

        self.pwm_pub = self.create_publisher(Float64MultiArray, "pwm_controller/commands", COMMAND_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS, raw=True)
        if settings.reference_topic:
            self.create_subscription(JointTrajectory, settings.reference_topic, self._on_reference, 10)
        steady_timer(self, settings.diagnostics_period, self._diagnostics)  # on in a stopped /clock too

    def start_commanding(self) -> None:
        """Activate: the desired torques are answered with duty cycles."""
        self.create_subscription(
            Float64MultiArray, self.settings.command_topic, self._on_desired, COMMAND_QOS, raw=True
        )

    def safe_output(self) -> None:
        """Deactivate: zero duty on every motor, once."""
        self.last_duty = np.zeros(self.transmission.n)
        self.duty_out.data[:] = 0.0
        self.pwm_pub.publish(self.duty_out.serialized())
        self.last_problem = "inactive: zero duty sent"

    def _apply(self, settings: PwmFeedforwardSettings) -> None:
        """Live settings changed: the next duty cycles use the new limit, compensation and timeout."""
        self.settings = settings
        self.ff_config = self.feedforward.config = settings.core
        self.state_timeout = settings.state_timeout
        self.get_logger().info(f"now {settings.core}, state_timeout {settings.state_timeout:g} s")

    @property
    def dropped(self) -> int:
        """Messages dropped so far, every input."""
        return self.drops.total

    def _drop(self, what: str, reason: str) -> None:
        self.drops.add(what, reason)
        self.last_problem = self.drops.last

    def _on_state(self, data: bytes) -> None:
        """A serialized joint state: the motor velocities and its stamp (the 1 kHz path)."""
        reason = self.state_reader.read(data)
        if reason:
            self._drop("joint_states", reason)
            return
        self.qd_motor = self.transmission.motor_velocity(self.state_reader.values[0])
        self.last_state_time = self.state_reader.stamp

    def _on_reference(self, msg: JointTrajectory) -> None:
        """Keep the reference's velocities and accelerations, in motor space (T^-1), at absolute times."""
        order = self.joint_index.order(msg.joint_names)
        if order is None or not msg.points:
            self._drop("reference", f"joints {self.joint_index.missing(msg.joint_names)} missing or no points")
            return
        n = len(msg.joint_names)
        if any(len(p.velocities) != n or len(p.accelerations) != n for p in msg.points):
            self._drop("reference", f"a point without {n} velocities and accelerations")
            return
        t = trajectory_times(msg)
        joint = np.array(
            [
                [np.asarray(p.velocities, dtype=float)[order], np.asarray(p.accelerations, dtype=float)[order]]
                for p in msg.points
            ]
        )
        if not (np.all(np.isfinite(joint)) and np.all(np.isfinite(t)) and np.all(np.diff(t) > 0.0)):
            self._drop("reference", "non-finite values or times not increasing")
            return
        self.reference_time, self.reference_motor = (
            t,
            self.transmission.motor_velocity(joint.reshape(-1, self.transmission.n)).reshape(joint.shape),
        )

    def _reference_at_state(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Reference motor velocities and accelerations (m,) at the latest state's time; None outside the reference."""
        t, times = self.last_state_time, self.reference_time
        if t is None or times.size == 0 or t < times[0] or t > times[-1]:
            return None
        samples = self.reference_motor.reshape(times.size, -1)  # linear interpolation of each column
        x = np.array([np.interp(t, times, column) for column in samples.T]).reshape(2, -1)
        return x[0], x[1]

    def _on_desired(self, data: bytes) -> None:
        """Serialized desired torques: answered with one duty vector (the 1 kHz path)."""
        reason = self.desired_reader.read(data)
        if reason:
            self._drop("desired torques", reason)
            return
        tau = self.desired_reader.values
        now = self.get_clock().now().nanoseconds * 1e-9
        fresh = self.last_state_time is not None and now - self.last_state_time < self.state_timeout
        qd = self.qd_motor if fresh else self.no_velocity
        qdd = None
        if not fresh:
            age = "missing" if self.last_state_time is None else f"stamped {now - self.last_state_time:.3g} s ago"
            self.last_problem = f"joint_states {age}: no friction or back-EMF compensation"
        elif (reference := self._reference_at_state()) is not None:
            qd, qdd = reference
        duty = self.feedforward.duty(tau, qd, qdd)
        self.saturated += int((np.abs(duty) >= self.feedforward.duty_limits).any())
        self.duty_out.data[:] = duty
        self.pwm_pub.publish(self.duty_out.serialized())
        self.last_duty = duty
        self.published += 1

    def _diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        clock = self.clock.why(self.settings.diagnostics_period)
        if clock:  # the simulator or bag player stopped
            self.last_problem = f"{clock}; {self.last_problem}" if self.last_problem else clock
        level = WARN if self.last_problem else OK
        values: dict[str, object] = {
            "commands_published": self.published,
            "saturated_commands": self.saturated,
            **self.drops.diagnostic_values(),
            "last_duty": list(self.last_duty),
            "friction_compensation": self.ff_config.friction_compensation,
            "command_space": self.command_space,
            "rotor_inertia_compensation": self.reference_time.size > 0,
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
