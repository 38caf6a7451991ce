"""Single-process runner: the scenario's nodes in one executor, for machines without ``ros2 launch``.

`run_scenario` starts ``sim_robot``, ``identifier``, ``feedforward`` and ``excitation`` with the
scenario's parameter file (the same file the launch file passes), plus a `Recorder` node that
listens to their topics over DDS like rqt would, and spins them with rclpy's EventsExecutor in
the calling (main) thread until the simulated ``duration`` has passed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray

from motor_ident.errors import ConfigError
from motor_ident.io.demo_report import Recording, RunResult
from motor_ident.ros.common import COMMAND_QOS, LATCHED_QOS, STATE_QOS
from motor_ident.ros.conversions import stamp_to_seconds

FloatArray = NDArray[np.float64]


def scenario_file(name_or_path: str | Path) -> Path:
    """Parameter file of a scenario: a path, or ``config/scenarios/<name>.yaml`` of motor_ident."""
    from motor_ident.io.robot_config import config_directories

    path = Path(name_or_path)
    if path.is_file():
        return path
    found: set[str] = set()
    for directory in config_directories():
        candidate = directory / "scenarios" / f"{name_or_path}.yaml"
        if candidate.is_file():
            return candidate
        if (directory / "scenarios").is_dir():
            found.update(p.stem for p in (directory / "scenarios").glob("*.yaml"))
    raise ConfigError(f"scenario {str(name_or_path)!r} not found: give a parameter file or one of {sorted(found)}")


class Recorder(Node):
    """Listens to the scenario's topics over DDS and keeps what the demo reports and plots."""

    def __init__(self, joints: tuple[str, ...], *, keep_series: bool = True, **kwargs: object) -> None:
        super().__init__("motor_ident_recorder", **kwargs)  # type: ignore[arg-type]
        self.joints = joints
        self.data = Recording(keep_series=keep_series)
        self.sim_time = 0.0
        self._last_command: FloatArray | None = None
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)
        self.create_subscription(JointState, "identifier/predicted_effort", self._on_predicted, 10)
        self.create_subscription(Float64MultiArray, "feedforward/tracking_error", self._on_error, 10)
        self.create_subscription(Float64MultiArray, "identifier/r2", self._on_r2, 10)
        self.create_subscription(Bool, "identifier/gate_open", self._on_gate, LATCHED_QOS)
        self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_command, COMMAND_QOS)

    def _on_state(self, msg: JointState) -> None:
        self.sim_time = stamp_to_seconds(msg.header.stamp)
        self.data.states += 1
        if self.data.keep_series:
            self.data.state.append((self.sim_time, np.asarray(msg.position), np.asarray(msg.effort)))

    def _on_predicted(self, msg: JointState) -> None:
        if self.data.keep_series:
            self.data.predicted.append((stamp_to_seconds(msg.header.stamp), np.asarray(msg.effort)))

    def _on_error(self, msg: Float64MultiArray) -> None:
        if self.data.keep_series:
            self.data.tracking_error.append((self.sim_time, np.asarray(msg.data)))

    def _on_r2(self, msg: Float64MultiArray) -> None:
        if self.data.keep_series:
            self.data.r2.append((self.sim_time, np.asarray(msg.data)))

    def _on_gate(self, msg: Bool) -> None:
        self.data.gate.append((self.sim_time, bool(msg.data)))

    def _on_command(self, msg: Float64MultiArray) -> None:
        self.data.commands += 1
        command = np.asarray(msg.data, dtype=float)
        if not np.all(np.isfinite(command)):
            self.data.nonfinite_commands += 1
        elif self.data.keep_series and self._last_command is not None:
            self.data.command_step.append((self.sim_time, float(np.max(np.abs(command - self._last_command)))))
        self._last_command = command


def default_dds_environment() -> None:
    """Keep DDS discovery on this machine unless the user chose otherwise."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def run_scenario(
    scenario: str | Path,
    *,
    duration: float,
    lockstep: bool = True,
    overrides: dict[str, dict[str, object]] | None = None,
    progress: Callable[[RunResult], None] | None = None,
    wall_timeout: float | None = None,
    keep_series: bool = True,
) -> RunResult:
    """Run a scenario's nodes in this process until ``duration`` seconds of simulated time.

    Args:
        scenario: scenario name (``config/scenarios/<name>.yaml``) or parameter file path.
        duration: simulated seconds to run.
        lockstep: step the simulator on each command (faster than real time) instead of in real time.
        overrides: extra parameters per node name, e.g. ``{"identifier": {"window": 300}}``.
        progress: called about twice a second with the partial result.
        wall_timeout: stop after this many wall seconds anyway (default: 20 x duration + 30).
        keep_series: keep every sample for plots; False keeps only counters (long runs, flat memory).

    Raises:
        ConfigError: a parameter is invalid (the node refused to start; the message names it).
    """
    import rclpy
    from rclpy.experimental import EventsExecutor

    from motor_ident.ros.excitation_node import ExcitationNode
    from motor_ident.ros.feedforward_node import FeedforwardNode
    from motor_ident.ros.identifier_node import IdentifierNode
    from motor_ident.ros.sim_robot_node import SimRobotNode

    default_dds_environment()
    params_file = scenario_file(scenario)
    overrides = {k: dict(v) for k, v in (overrides or {}).items()}
    overrides.setdefault("sim_robot", {}).update({"lockstep": lockstep, "duration": float(duration)})
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", str(params_file)], context=context)
    nodes: list[Node] = []
    executor = None
    try:

        def make(cls: type[Node], name: str) -> Node:
            params = [Parameter(k, value=v) for k, v in overrides.get(name, {}).items()]
            node = cls(context=context, parameter_overrides=params)
            nodes.append(node)
            return node

        sim = make(SimRobotNode, "sim_robot")
        identifier = make(IdentifierNode, "identifier")
        make(FeedforwardNode, "feedforward")
        make(ExcitationNode, "excitation")
        recorder = Recorder(tuple(sim.joint_names), keep_series=keep_series, context=context)  # type: ignore[attr-defined]
        nodes.append(recorder)
        executor = EventsExecutor(context=context)
        for node in nodes:
            executor.add_node(node)
        start = time.monotonic()
        limit = wall_timeout if wall_timeout is not None else 20.0 * duration + 30.0
        last_report = start

        def result() -> RunResult:
            return RunResult(
                scenario=params_file.stem,
                robot=identifier.config.name,  # type: ignore[attr-defined]
                joints=tuple(sim.joint_names),  # type: ignore[attr-defined]
                sim_time=sim.sim.t,  # type: ignore[attr-defined]
                wall_time=time.monotonic() - start,
                recording=recorder.data,
                identifier_summary=_identifier_summary(identifier),
            )

        while not sim.finished and time.monotonic() - start < limit:  # type: ignore[attr-defined]
            executor.spin_once(timeout_sec=0.05)
            now = time.monotonic()
            if progress is not None and now - last_report > 0.5:
                last_report = now
                progress(result())
        # Let the last messages arrive.
        settle = time.monotonic()
        while time.monotonic() - settle < 0.2:
            executor.spin_once(timeout_sec=0.02)
        return result()
    finally:
        if executor is not None:
            executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)


def _identifier_summary(node: Node) -> dict[str, object]:
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
