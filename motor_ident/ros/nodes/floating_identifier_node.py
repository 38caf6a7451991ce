"""``floating_identifier``: total mass and whole-body CoM of a robot standing on its feet, online.

The robot config's ``floating_base:`` section names the base IMU's frame and the feet (their F/T
sensor frames and soles). Subscribes ``joint_states`` (positions), the base IMU (``imu_topic``,
sensor_msgs/Imu: orientation and angular velocity) and one geometry_msgs/WrenchStamped per
contact (``wrench_topics``, default ``<contact>/wrench``, in the sensor frame); pairs them by
stamp (`motor_ident.core.estimation.stamp_alignment`, one aligner per stream in a chain) and feeds
`motor_ident.core.floating_base.online.OnlineFloatingBase`: the base rows of ``identify
--floating-base``, refitted chunk by chunk, judged by the fixed-base identifier's gate. Publishes:

- ``~/total_mass`` [kg, std] and ``~/com`` [x, y, z, std x, y, z] [m] (Float64MultiArray): every
  refit's estimate; the CoM in world axes with its origin at the base position at the start of
  the refit's buffer; the std residual-based (a sandwich with the long-run covariance of the
  chunks' residuals, as ``identify --floating-base`` reports, never below the white-noise ones);
- ``~/active_total_mass``, ``~/active_com`` (latched): the estimate while the gate is open, the
  robot config's URDF (std 0) otherwise; ``~/gate_open`` (Bool, latched);
- ``/diagnostics``: gate state and why, R^2 per base row, condition number, mass and CoM with
  their std (and the white-noise std beside them, ``*_std_white``), refits, CPU per refit, dropped
  messages per input and reason.

A malformed message (NaN, a missing joint, an IMU without orientation, a wrench in another frame)
is dropped and counted; a joint state that finds no IMU sample or wrench at its stamp is dropped
and counted too (a missing foot: ``secondary sample late or missing``). An input silent for
``secondary_timeout`` (wall) while joint states arrive empties the statistics (nominal values, gate closed) and
/diagnostics names it. Services: ``~/reset`` (Trigger), ``~/use_nominal`` (SetBool).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import SetBool, Trigger

from motor_ident.core.estimation.stamp_alignment import StampAligner
from motor_ident.core.floating_base.identification import structural_base_parameters
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.online import OnlineFloatingBase
from motor_ident.errors import ConfigError
from motor_ident.ros.runtime.common import (
    IDENTIFIER_STATE_QOS,
    LATCHED_QOS,
    ClockWatch,
    load_robot,
    run_node,
    steady_timer,
)
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import (
    ERROR,
    NON_FINITE,
    OK,
    WARN,
    InputDrops,
    JointIndex,
    Reason,
    joint_state_arrays,
    make_array,
    make_status,
    stamp_order,
    stamp_to_seconds,
)
from motor_ident.scenario.nodes import FloatingIdentifierSettings

JOINT_STATES = "joint_states"


class FloatingIdentifierNode(ManagedNode):
    """Adapter between `OnlineFloatingBase` and ROS (a managed node: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("floating_identifier", settings=FloatingIdentifierSettings, **kwargs)

    def build(self) -> None:
        """Configure: robot, floating-base regressor, its base parameters in stance, publishers, services."""
        self.settings = self.declared(FloatingIdentifierSettings, self._apply)
        self.config = load_robot(self.settings.robot)
        floating = self.config.floating_base
        if floating is None:
            raise ConfigError(f"robot = {self.settings.robot!r}: its config has no floating_base section")
        contacts = [c.name for c in floating.contacts]
        topics = list(self.settings.wrench_topics)
        if topics == [""]:
            topics = [f"{name}/wrench" for name in contacts]
        if len(topics) != len(contacts):
            raise ConfigError(f"wrench_topics = {topics}: expected one per contact {contacts}")
        self.contacts, self.sensor_frames = contacts, floating.sensor_frames
        self.wrench_topic_names = topics
        regressor = FloatingBaseRegressor(self.config.build_floating_base())
        standing = np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], floating.posture(self.config.joints)])
        base = structural_base_parameters(regressor, stance=floating.sole_frames, standing=standing)
        self.core = OnlineFloatingBase.from_config(
            regressor, base, self.settings.core, imu_frame=floating.imu_frame, sole_frames=floating.sole_frames
        )
        self.index = JointIndex(self.config.joints)
        self.stamps = stamp_order(self.settings.stamps)
        self.drops = InputDrops([JOINT_STATES, "imu", *contacts], self.get_logger())
        # joint state -> + IMU -> + each foot's wrench: a sample leaves the chain complete
        self.chain: list[StampAligner[Any]] = [
            StampAligner(name, self.settings.pairing.align_tolerance) for name in (self.settings.imu_topic, *topics)
        ]
        self.mass_pub = self.create_publisher(Float64MultiArray, "~/total_mass", 10)
        self.com_pub = self.create_publisher(Float64MultiArray, "~/com", 10)
        self.active_mass_pub = self.create_publisher(Float64MultiArray, "~/active_total_mass", LATCHED_QOS)
        self.active_com_pub = self.create_publisher(Float64MultiArray, "~/active_com", LATCHED_QOS)
        self.gate_pub = self.create_publisher(Bool, "~/gate_open", LATCHED_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/use_nominal", self._on_use_nominal)
        steady_timer(self, self.settings.diagnostics_period, self._publish_diagnostics)
        self.clock = ClockWatch(self)
        self.gate_history: list[tuple[float, bool]] = []
        self._last_heard: dict[str, float] = {}
        self._started = time.monotonic()
        self._last_gate: bool | None = None
        self._stale = ""
        self.get_logger().info(
            f"identifying the total mass and CoM of {self.config.name} from {base.n_base} base parameters "
            f"(IMU {self.settings.imu_topic}, feet {topics}); gate R2 >= {self.settings.core.gate.r2_threshold}"
        )

    def start_commanding(self) -> None:
        """Activate: the nominal values go out (latched), then the inputs are read."""
        self._publish_active()
        self._started = time.monotonic()
        self.create_subscription(JointState, JOINT_STATES, self._on_state, IDENTIFIER_STATE_QOS)
        self.create_subscription(Imu, self.settings.imu_topic, self._on_imu, IDENTIFIER_STATE_QOS)
        for k, topic in enumerate(self.wrench_topic_names):
            self.create_subscription(
                WrenchStamped, topic, lambda msg, k=k: self._on_wrench(k, msg), IDENTIFIER_STATE_QOS
            )

    def safe_output(self) -> None:
        """Deactivate: statistics emptied, nominal values active (gate closed), published once."""
        self._reset()

    @property
    def rejected(self) -> int:
        """Messages dropped so far, every input and reason."""
        return self.drops.total

    # -- data path -------------------------------------------------------------------------------
    def _on_state(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self.index, ("position",))
        if not arrays:
            self.drops.add(JOINT_STATES, reason)
            return
        t = stamp_to_seconds(msg.header.stamp)
        previous = self.stamps.last
        reason = self.stamps.accept(t)
        if reason:
            self.drops.add(JOINT_STATES, reason)
            return
        if self.stamps.restarted and previous is not None:
            self._reset()
            self.get_logger().warning(f"clock restarted from {previous:.3f} to {t:.3f} s: statistics emptied")
        if JOINT_STATES not in self._last_heard:  # inputs are waited for from the first joint state on
            self._started = time.monotonic()
        self._last_heard[JOINT_STATES] = time.monotonic()
        self.chain[0].add_primary(t, (arrays[0],))
        self._drain()

    def _on_imu(self, msg: Imu) -> None:
        o, w = msg.orientation, msg.angular_velocity
        values = np.array([o.x, o.y, o.z, o.w, w.x, w.y, w.z], dtype=float)
        if not np.all(np.isfinite(values)):
            self.drops.add("imu", Reason("non-finite orientation or angular velocity", NON_FINITE))
            return
        if not 0.9 < float(np.linalg.norm(values[:4])) < 1.1 or msg.orientation_covariance[0] == -1.0:
            self.drops.add(
                "imu", Reason("no orientation (not a unit quaternion, or covariance[0] = -1)", "no orientation")
            )
            return
        self._secondary(0, "imu", stamp_to_seconds(msg.header.stamp), values)

    def _on_wrench(self, k: int, msg: WrenchStamped) -> None:
        f, m = msg.wrench.force, msg.wrench.torque
        values = np.array([f.x, f.y, f.z, m.x, m.y, m.z], dtype=float)
        name = self.contacts[k]
        if not np.all(np.isfinite(values)):
            self.drops.add(name, Reason("non-finite wrench", NON_FINITE))
            return
        frame = msg.header.frame_id
        if frame and frame != self.sensor_frames[k]:
            self.drops.add(
                name, Reason(f"wrench in frame {frame!r}, expected {self.sensor_frames[k]!r}", "wrong frame")
            )
            return
        self._secondary(k + 1, name, stamp_to_seconds(msg.header.stamp), values)

    def _secondary(self, k: int, name: str, t: float, values: np.ndarray) -> None:
        self._last_heard[name] = time.monotonic()
        self.chain[k].add_secondary(t, values)
        self._drain()

    def _drain(self) -> None:
        """Move complete pairs down the chain; the last aligner's pairs are samples for the estimator."""
        for k, aligner in enumerate(self.chain):
            pairs, drops = aligner.pop()
            for drop in drops:
                self.drops.add(JOINT_STATES, Reason(drop.detail, f"{drop.kind} ({aligner.secondary})"))
            for t, item, values in pairs:
                if k + 1 < len(self.chain):
                    self.chain[k + 1].add_primary(t, (*item, values))
                else:
                    self._add_sample(t, (*item, values))

    def _add_sample(self, t: float, item: tuple[np.ndarray, ...]) -> None:
        q, imu, *wrenches = item
        if not self.core.add_sample(t, q, imu[:4], imu[4:], np.stack(wrenches)):
            return
        estimate = self.core.estimate
        if estimate is None:
            return  # too few samples for a fit yet
        self.mass_pub.publish(make_array(np.array([estimate.mass.value, estimate.mass.std]), "total_mass"))
        self.com_pub.publish(make_array(np.concatenate([estimate.com.value, estimate.com.std]), "com"))
        if self.core.gate_open != self._last_gate:
            self.gate_history.append((t, self.core.gate_open))
            self.get_logger().info(f"t = {t:.2f} s: {self.core.gate.reason}")
        self._publish_active()

    def _publish_active(self) -> None:
        mass, com = self.core.active()
        self.active_mass_pub.publish(make_array(np.array([mass.value, mass.std]), "total_mass"))
        com_values = np.full(6, np.nan) if com is None else np.concatenate([com.value, com.std])
        self.active_com_pub.publish(make_array(com_values, "com"))
        self.gate_pub.publish(Bool(data=self.core.gate_open))
        self._last_gate = self.core.gate_open

    def _reset(self) -> None:
        for aligner in self.chain:
            aligner.reset()
        self.core.reset()
        self._publish_active()

    # -- services and settings -------------------------------------------------------------------
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._reset()
        response.success, response.message = True, "statistics emptied, nominal values active"
        return response

    def _on_use_nominal(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self.core.gate.forced_nominal = bool(request.data)
        self.core.regate()
        self._publish_active()
        response.success = True
        response.message = "nominal values forced" if request.data else "gate decides again"
        return response

    def _apply(self, settings: FloatingIdentifierSettings) -> None:
        """Live settings (the gate's) changed: judged again now, and at every refit."""
        self.settings = settings
        self.core.set_gate(settings.core.gate)
        self.core.regate()
        self._publish_active()

    # -- diagnostics -----------------------------------------------------------------------------
    def _silent(self) -> str:
        """The first input silent for more than ``secondary_timeout`` while joint states arrive ("" when none)."""
        if JOINT_STATES not in self._last_heard:
            return ""
        # measured up to the last joint state, not to now: a machine that stalls (or a paused bag)
        # silences every input at once, which is no input's fault
        latest = self._last_heard[JOINT_STATES]
        for name in ("imu", *self.contacts):
            since = latest - self._last_heard.get(name, self._started)
            if since > self.settings.pairing.secondary_timeout:
                topic = self.chain[0 if name == "imu" else 1 + self.contacts.index(name)].secondary
                return f"{name} ({topic}) silent for {since:.1f} s"
        return ""

    def _publish_diagnostics(self) -> None:
        core, estimate = self.core, self.core.estimate
        values: dict[str, object] = {
            "gate": "open" if core.gate_open else "closed",
            "reason": core.gate.reason,
            "active_model": "identified" if core.gate_open else "nominal (robot config)",
            "refits": core.refits,
            "statistics_resets": core.resets,
            "samples_interpolated": core.filled,  # lost on the way, up to MAX_GAP_S in a row
            "buffer_restarts": core.gaps,  # longer gaps
            "chunks_refused": core.skipped,
            "physical_consistency": "not checked (a total mass and a CoM, no model to control with)",
            "nominal_total_mass": core.nominal_mass,
            **self.drops.diagnostic_values(),
        }
        if estimate is not None:
            values.update(
                {
                    "total_mass": float(estimate.mass.value),
                    "total_mass_std": float(estimate.mass.std),
                    "com": estimate.com.value.tolist(),
                    "com_std": estimate.com.std.tolist(),
                    "total_mass_std_white": float(estimate.mass_white.std),
                    "com_std_white": estimate.com_white.std.tolist(),
                    "com_determined": estimate.com.identifiable.tolist(),
                    "samples_in_fit": estimate.samples,
                    "refit_cpu_ms": 1e3 * estimate.cpu_s,
                }
            )
            if estimate.fit is not None:
                values.update(
                    {
                        "r2_per_row": list(estimate.fit.r2),
                        "r2_uncentred_per_row": list(estimate.fit.r2_uncentred),
                        "condition_number": estimate.fit.condition_number,
                    }
                )
        level, message = (OK if core.gate_open else WARN), core.gate.reason
        if estimate is not None and not np.isfinite(float(estimate.mass.value)):
            level = ERROR
        if not self.commanding:
            level, message = WARN, "inactive: nominal values active"
        else:
            silent = self._silent()
            if silent and not self._stale:  # an input stopped: nothing to identify from
                self._reset()
            self._stale = silent
            if silent:
                values["gate"], values["reason"] = "closed", f"{silent}: gate closed"
                level, message = max(level, WARN), f"{silent}: gate closed, nominal values active"
            clock = self.clock.why(self.settings.diagnostics_period)
            if clock:
                level, message = max(level, WARN), f"{clock}: no new samples; {message}"
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [make_status("motor_ident: floating_identifier", self.config.name, level, message, values)]
        self.diag_pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident floating_identifier``."""
    run_node(FloatingIdentifierNode, args)


if __name__ == "__main__":
    main()
