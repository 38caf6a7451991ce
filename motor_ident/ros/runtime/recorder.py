"""What a scenario run's calling process keeps from the nodes' topics over DDS.

`Recorder` keeps the series and counters the demo reports and plots (`Recording`); `RunWatcher`
keeps what the run's summary needs from an identifier in another process; `identifier_summary`
reads the same summary from an identifier in this process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from numpy.typing import NDArray
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray

from motor_ident.io.demo_report import Recording
from motor_ident.ros.runtime.common import COMMAND_QOS, LATCHED_QOS, STATE_QOS
from motor_ident.ros.runtime.lockstep import status_counts
from motor_ident.ros.wire.conversions import (
    DropCounter,
    JointIndex,
    StampOrder,
    array_values,
    joint_state_arrays,
    stamp_to_seconds,
)

FloatArray = NDArray[np.float64]


class Recorder(Node):
    """Listens to the scenario's topics over DDS and keeps what the demo reports and plots.

    It keeps only messages that fit the scenario: states with every joint (matched by name, kept
    in ``joints`` order) in time order, arrays with one value per joint. Anything else, e.g. from
    a second publisher on ``joint_states``, is checked by the nodes' own validation
    (`motor_ident.ros.wire.conversions`) and counted per topic and reason in ``data.dropped``; a
    callback never raises, so a hostile message cannot stop the run.
    """

    def __init__(self, joints: tuple[str, ...], *, keep_series: bool = True, **kwargs: object) -> None:
        super().__init__("motor_ident_recorder", **kwargs)  # type: ignore[arg-type]
        self.joints = joints
        self.data = Recording(keep_series=keep_series)
        self.sim_time = 0.0
        self._last_command: FloatArray | None = None
        self._index = JointIndex(joints)
        self._stamps = StampOrder()
        topics = (
            "joint_states",
            "identifier/predicted_effort",
            "feedforward/tracking_error",
            "identifier/r2",
            "effort_controller/commands",
        )
        self._drops = {topic: DropCounter(topic, counts=self.data.dropped.setdefault(topic, {})) for topic in topics}
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)
        self.create_subscription(JointState, "identifier/predicted_effort", self._on_predicted, 10)
        self.create_subscription(Float64MultiArray, "feedforward/tracking_error", self._on_error, 10)
        self.create_subscription(Float64MultiArray, "identifier/r2", self._on_r2, 10)
        self.create_subscription(Bool, "identifier/gate_open", self._on_gate, LATCHED_QOS)
        self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_command, COMMAND_QOS)

    def _on_state(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self._index)  # what the identifier would use
        t = stamp_to_seconds(msg.header.stamp)
        reason = reason or self._stamps.accept(t)
        if reason:
            self._drops["joint_states"].add(reason)
            return
        self.sim_time = t
        self.data.states += 1
        if self.data.keep_series:
            self.data.state.append((t, arrays[0], arrays[2]))

    def _on_predicted(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self._index, ("effort",))
        if reason:
            self._drops["identifier/predicted_effort"].add(reason)
        elif self.data.keep_series:
            self.data.predicted.append((stamp_to_seconds(msg.header.stamp), arrays[0]))

    def _joint_array(self, topic: str, msg: Float64MultiArray) -> FloatArray | None:
        values, reason = array_values(msg, len(self.joints))
        if values is None:
            self._drops[topic].add(reason)
        return values

    def _on_error(self, msg: Float64MultiArray) -> None:
        values = self._joint_array("feedforward/tracking_error", msg)
        if values is not None and self.data.keep_series:
            self.data.tracking_error.append((self.sim_time, values))

    def _on_r2(self, msg: Float64MultiArray) -> None:
        values = self._joint_array("identifier/r2", msg)
        if values is not None and self.data.keep_series:
            self.data.r2.append((self.sim_time, values))

    def _on_gate(self, msg: Bool) -> None:
        self.data.gate.append((self.sim_time, bool(msg.data)))

    def _on_command(self, msg: Float64MultiArray) -> None:
        self.data.commands += 1
        if not np.all(np.isfinite(np.asarray(msg.data, dtype=float))):
            self.data.nonfinite_commands += 1  # whatever its size: a non-finite command is never fine
        command = self._joint_array("effort_controller/commands", msg)
        if command is None:
            return
        if self.data.keep_series and self._last_command is not None:
            self.data.command_step.append((self.sim_time, float(np.max(np.abs(command - self._last_command)))))
        self._last_command = command


class RunWatcher(Node):
    """What a run's summary needs from nodes in other processes, from their topics.

    The identifier's gate (``~/gate_open``), estimate (``~/parameters``), active model
    (``~/active_parameters``) and its /diagnostics (published every 0.5 s of simulated time: the
    R^2, condition number, reason and dropped samples of the summary may be that old), the last it
    published; its parameter names from its ``parameter_names`` parameter. The simulated time on
    /clock (RELIABLE, so the last stamp arrives even where the last best-effort state does not).
    The lockstep counts in the simulators' /diagnostics (they publish them once more when their
    ``duration`` is reached).
    """

    IDENTIFIER_STATUS = "motor_ident: identifier"
    CONTROLLER_STATUSES = ("motor_ident: feedforward", "motor_ident: pwm_feedforward")
    SIMULATOR_STATUSES = {"motor_ident: sim_robot": "sim_robot", "motor_ident: elastic_sim": "elastic_sim"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("motor_ident_run_watcher", **kwargs)
        self.gate_open = False
        self.theta: list[float] | None = None
        self.active_theta: list[float] = []
        self.reason = "no diagnostics from the identifier yet"
        self.values: dict[str, str] = {}
        self.parameter_names: list[str] = []
        self.clock = 0.0
        self.lockstep: dict[str, dict[str, Any]] = {}  # simulator node -> its lockstep counts
        self.controller_commands: dict[str, int] = {}  # controller status name -> commands it published
        self.controller_reports = 0  # controller statuses received
        self._names_future: Any = None
        self.create_subscription(Clock, "/clock", self._on_clock, 10)
        self.create_subscription(Bool, "identifier/gate_open", self._on_gate, LATCHED_QOS)
        self.create_subscription(Float64MultiArray, "identifier/parameters", self._on_theta, 10)
        self.create_subscription(Float64MultiArray, "identifier/active_parameters", self._on_active, LATCHED_QOS)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._names_client: Any = self.create_client(GetParameters, "identifier/get_parameters")

    def _on_clock(self, msg: Clock) -> None:
        self.clock = stamp_to_seconds(msg.clock)

    def _on_gate(self, msg: Bool) -> None:
        self.gate_open = bool(msg.data)

    def _on_theta(self, msg: Float64MultiArray) -> None:
        self.theta = list(msg.data)

    def _on_active(self, msg: Float64MultiArray) -> None:
        self.active_theta = list(msg.data)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == self.IDENTIFIER_STATUS:
                self.reason = status.message
                self.values = {kv.key: kv.value for kv in status.values}
            elif status.name in self.CONTROLLER_STATUSES:
                published = {kv.key: kv.value for kv in status.values}.get("commands_published")
                if published is not None:
                    self.controller_commands[status.name] = int(published)
                    self.controller_reports += 1
            elif status.name in self.SIMULATOR_STATUSES:
                counts = status_counts({kv.key: kv.value for kv in status.values})
                if counts is not None:
                    self.lockstep[self.SIMULATOR_STATUSES[status.name]] = counts

    def poll_parameter_names(self) -> bool:
        """Ask the identifier for its ``parameter_names`` once its parameter service is up (the
        answer arrives while spinning); True once they are known."""
        if not self.parameter_names:
            if self._names_future is None:
                if self._names_client.service_is_ready():
                    request = GetParameters.Request(names=["parameter_names"])
                    self._names_future = self._names_client.call_async(request)
            elif self._names_future.done():
                values = self._names_future.result().values
                if values and values[0].type == ParameterType.PARAMETER_STRING_ARRAY:
                    self.parameter_names = list(values[0].string_array_value)
        return bool(self.parameter_names)

    def summary(self) -> dict[str, object]:
        """`identifier_summary`'s keys, from what the identifier last published."""
        v = self.values
        consistent = v.get("physically_consistent")
        return {
            "gate_open": self.gate_open,
            "reason": self.reason,
            "r2_per_joint": _numbers(v.get("r2_per_joint")),
            "r2_uncentred_per_joint": _numbers(v.get("r2_uncentred_per_joint")),
            "condition_number": None if "condition_number" not in v else float(v["condition_number"]),
            "physically_consistent": None if consistent is None else consistent == "True",
            "active_theta": self.active_theta,
            "dropped_samples": int(v.get("dropped_samples", 0)),
            "theta": self.theta,
            "parameter_names": self.parameter_names,
        }


def _numbers(text: str | None) -> list[float] | None:
    """A list the diagnostics wrote as ``[0.98, 0.97]``, as floats (None if absent)."""
    if text is None:
        return None
    return [float(x) for x in text.strip("[]").split(",") if x.strip()]


def no_identifier_summary() -> dict[str, object]:
    """`identifier_summary`'s keys for a scenario without an identifier."""
    return {
        "gate_open": False,
        "reason": "the scenario has no identifier",
        "r2_per_joint": None,
        "r2_uncentred_per_joint": None,
        "condition_number": None,
        "physically_consistent": None,
        "active_theta": [],
        "dropped_samples": 0,
        "theta": None,
        "parameter_names": [],
    }


def controller_commands(nodes: Mapping[str, Node]) -> int | None:
    """Commands published by the run's controllers (feedforward, pwm_feedforward), by their own counts;
    None without one."""
    counts = [getattr(node, "commands_published", None) for name, node in nodes.items() if name == "feedforward"]
    counts += [getattr(node, "published", None) for name, node in nodes.items() if name == "pwm_feedforward"]
    known = [int(c) for c in counts if c is not None]
    return sum(known) if known else None


def identifier_summary(node: Node) -> dict[str, object]:
    """The run's summary from an identifier node in this process (its estimator's gate and fit)."""
    core = node.core  # type: ignore[attr-defined]
    fit = core.fit
    return {
        "gate_open": bool(core.gate_open),
        "reason": core.gate.reason,
        "r2_per_joint": None if fit is None else [float(x) for x in fit.r2],
        "r2_uncentred_per_joint": None if fit is None else [float(x) for x in fit.r2_uncentred],
        "condition_number": None if fit is None else float(fit.condition_number),
        "physically_consistent": None if core.gate.consistency is None else bool(core.gate.consistency.consistent),
        "active_theta": [float(x) for x in core.active_theta],
        "dropped_samples": int(core.dropped + node.rejected),  # type: ignore[attr-defined]
        "theta": None if fit is None else [float(x) for x in fit.theta],
        "parameter_names": list(node.names),  # type: ignore[attr-defined]
    }
