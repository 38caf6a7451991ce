"""The identifier's torque source over ROS: which topics, pairing by stamp, conversion to joint torques.

- ``joint_effort``: ``joint_states.effort`` is the joint torque; nothing else is subscribed.
- ``motor_current`` / ``motor_pwm``: ``motor_states`` (sensor_msgs/JointState, names = the robot
  config's motors, ``effort`` = current [A] or duty [-]) is paired with ``joint_states`` by stamp
  (`motor_ident.core.estimation.stamp_alignment.StampAligner`).
- ``ft_sensor``: ``ft_sensor/wrench`` (geometry_msgs/WrenchStamped, the sensor frame) is paired the
  same way; the joint accelerations the estimate needs come from the estimator's own filter
  (`EmaDerivative`, ``velocity_cutoff_hz``), the sample held back by its lag (`DelayLine`) as the
  estimator does, so acceleration, state and wrench describe one instant.

The conversion is `motor_ident.core.actuators.torque_sources.TorqueConverter`, the one ``motor-ident
identify`` uses. A secondary message that cannot be read, and a joint state without a partner, are
dropped and counted by reason; a secondary topic silent for ``secondary_timeout`` (wall time) while
joint states arrive makes `TorqueInputs.stale` say so, and the node closes its gate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from geometry_msgs.msg import WrenchStamped
from numpy.typing import NDArray
from rclpy.node import Node
from sensor_msgs.msg import JointState

from motor_ident.core.actuators.torque_sources import UNITS
from motor_ident.core.estimation.online import DelayLine
from motor_ident.core.estimation.signals import EmaDerivative
from motor_ident.core.estimation.stamp_alignment import StampAligner
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import DataError
from motor_ident.io.joint_order import JointIndex
from motor_ident.io.robot_config import RobotConfig
from motor_ident.ros.runtime.common import IDENTIFIER_STATE_QOS
from motor_ident.ros.wire.conversions import NON_FINITE, DropCounter, Reason, joint_state_arrays, stamp_to_seconds
from motor_ident.scenario.nodes import IdentifierSettings

FloatArray = NDArray[np.float64]
AddSample = Callable[[float, FloatArray, FloatArray, FloatArray], None]


class TorqueInputs:
    """Subscriptions, pairing and conversion for one identifier node (state: the pairing buffers).

    Args:
        node: the node that owns the subscriptions.
        config: the robot config.
        settings: the identifier's settings (``torque_source``, topics, tolerance, timeout).
        robot: the model the converter uses (``ft_sensor``).
        add: called with (t, q, qd, tau_joint) for every sample ready for the estimator.
        drops: where joint states given up are counted.
    """

    def __init__(
        self,
        node: Node,
        config: RobotConfig,
        settings: IdentifierSettings,
        robot: RobotModel,
        add: AddSample,
        drops: DropCounter,
    ) -> None:
        self.converter = config.torque_converter(settings.torque_source or None, robot)
        self.kind = self.converter.kind
        self._add, self._drops = add, drops
        self.timeout = settings.pairing.secondary_timeout
        self.topic = ""
        self.secondary_drops = DropCounter("secondary sample", node.get_logger())
        self._aligner: StampAligner[tuple[FloatArray, FloatArray]] | None = None
        n = len(config.joints)
        self._ema = EmaDerivative(n, settings.core.velocity_cutoff_hz)
        self._delay: DelayLine | None = None
        self._previous_t: float | None = None
        self._qdd = np.zeros(n)  # filtered acceleration at the held-back sample [rad/s^2]
        self._first_primary: float | None = None
        self._last_primary = 0.0
        self._last_secondary: float | None = None
        if self.kind in ("motor_current", "motor_pwm"):
            self._motor_index = JointIndex(self.converter.transmission.motors)
            self._sub = node.create_subscription(
                JointState, settings.motor_states_topic, self._on_motor_states, IDENTIFIER_STATE_QOS
            )
        elif self.kind == "ft_sensor":
            self._sub = node.create_subscription(
                WrenchStamped, settings.wrench_topic, self._on_wrench, IDENTIFIER_STATE_QOS
            )
        if self.kind != "joint_effort":
            self.topic = self._sub.topic_name
            self._aligner = StampAligner(self.topic, settings.pairing.align_tolerance)

    @property
    def state_fields(self) -> tuple[str, ...]:
        """The joint_states fields this source reads (effort only for ``joint_effort``)."""
        return ("position", "velocity", "effort") if self.kind == "joint_effort" else ("position", "velocity")

    def on_joint_state(self, t: float, arrays: list[FloatArray]) -> None:
        """An accepted joint state: straight to the estimator, or waiting for its secondary sample."""
        if self._aligner is None:
            self._add(t, arrays[0], arrays[1], arrays[2])
            return
        self._last_primary = time.monotonic()
        if self._first_primary is None:
            self._first_primary = self._last_primary
        self._aligner.add_primary(t, (arrays[0], arrays[1]))
        self._drain()

    def reset(self) -> None:
        """The clock restarted: forget what waits."""
        if self._aligner is not None:
            self._aligner.reset()
        self._ema.reset()
        self._delay, self._previous_t = None, None

    def stale(self) -> str:
        """Why the secondary topic is stale: joint states kept arriving for more than ``secondary_timeout``
        after its last message ("" when not, or when there is no secondary topic)."""
        if self._aligner is None or self._first_primary is None:
            return ""
        # up to the last joint state, not to now: a stalled machine or a paused bag silences both
        since = self._last_primary - (self._first_primary if self._last_secondary is None else self._last_secondary)
        if since <= self.timeout:
            return ""
        if self._last_secondary is None:
            return f"no message on {self.topic} ({self.kind}) for {since:.1f} s"
        return f"{self.topic} ({self.kind}) silent for {since:.1f} s"

    def diagnostic_values(self) -> dict[str, object]:
        """``torque_source``, its unit, the secondary topic and its drops, nominal drive gains."""
        values: dict[str, object] = {"torque_source": self.kind, "torque_source_unit": UNITS[self.kind]}
        if self.topic:
            values["torque_source_topic"] = self.topic
            values.update(self.secondary_drops.diagnostic_values(f"{self.topic} "))
        if self.kind == "motor_current":
            values["drive_gains_joint_side"] = [float(g) for g in self.converter.drive_gains]
        return values

    # -- secondary topics ----------------------------------------------------------------------
    def _on_motor_states(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self._motor_index, ("effort",))
        if not arrays:
            self.secondary_drops.add(reason)
            return
        self._secondary(stamp_to_seconds(msg.header.stamp), arrays[0])

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, m = msg.wrench.force, msg.wrench.torque
        values = np.array([f.x, f.y, f.z, m.x, m.y, m.z], dtype=float)
        if not np.all(np.isfinite(values)):
            self.secondary_drops.add(Reason("non-finite wrench", NON_FINITE))
            return
        self._secondary(stamp_to_seconds(msg.header.stamp), values)

    def _secondary(self, t: float, values: FloatArray) -> None:
        assert self._aligner is not None
        self._last_secondary = time.monotonic()
        self._aligner.add_secondary(t, values)
        self._drain()

    def _drain(self) -> None:
        assert self._aligner is not None
        pairs, drops = self._aligner.pop()
        for drop in drops:
            self._drops.add(Reason(drop.detail, drop.kind))
        for t, (q, qd), values in pairs:
            sample = self._with_acceleration(t, q, qd, values) if self.kind == "ft_sensor" else (t, q, qd, values)
            if sample is None:
                continue
            t, q, qd, values = sample
            measurement: dict[str, Any] = {}
            if self.kind == "ft_sensor":
                measurement = {"qdd": self._qdd[None], "wrench": values[None]}
            else:
                measurement = {"current" if self.kind == "motor_current" else "pwm": values[None]}
            try:
                tau: FloatArray = self.converter.joint_torque(q=q[None], qd=qd[None], **measurement)[0]
            except DataError as exc:
                self._drops.add(Reason(str(exc), "conversion failed"))
                continue
            self._add(t, q, qd, tau)

    def _with_acceleration(
        self, t: float, q: FloatArray, qd: FloatArray, wrench: FloatArray
    ) -> tuple[float, FloatArray, FloatArray, FloatArray] | None:
        """``ft_sensor``: the sample held back by the acceleration filter's lag (None while the line fills)."""
        n = q.size
        _, qdd = self._ema.update(t, qd)
        dt = None if self._previous_t is None else t - self._previous_t
        self._previous_t = t
        if self._delay is None and dt is not None and dt > 0.0:
            self._delay = DelayLine(1 + 2 * n + 6, int(round(self._ema.delay(dt) / dt)))
        if self._delay is None:
            return None
        held = self._delay.push(np.concatenate([[t], q, qd, wrench]))
        if held is None:
            return None
        self._qdd = qdd.copy()
        return float(held[0]), held[1 : 1 + n], held[1 + n : 1 + 2 * n], held[1 + 2 * n :]
