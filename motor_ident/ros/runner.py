"""Scenario runner: a scenario's nodes over DDS, for machines without ``ros2 launch``.

A scenario's parameter file (``config/scenarios/<name>.yaml``) has one top-level key per node,
the nodes its launch file starts; `run_scenario` starts every node the file names (`NODES` maps a
name to its class; setup.py's ``NODES`` maps it to its ``ros2 run`` entry point) with that file,
plus a `Recorder` node that listens to their topics over DDS like rqt would, and runs them until
the simulated robot's ``duration`` has passed. Two layouts:

- in process (default): every node in the calling process, spun by one executor in the calling
  (main) thread. Nothing crosses a process boundary but DDS itself.
- as processes (``processes=True``; ``motor-ident run --processes``): each node is its own process,
  started through its entry point with ``--ros-args --params-file FILE -p name:=value`` as
  ``ros2 launch`` starts it; only the `Recorder` stays in the calling process. This is the layout
  on a robot, where the ros2_control hardware interface is another process too. The simulated
  robot starts last, once every other node has created its topics, so lockstep begins with every
  node listening. At the end each process gets SIGINT; one still running after `STOP_GRACE_S`
  gets SIGTERM, then SIGKILL (reported: Fast DDS then leaves files in /dev/shm, removed by
  ``fastdds shm clean``). Each process writes its output to ``<log_dir>/<node>.log``; a process
  that exits early stops the run with its last log lines. Ctrl-C (the terminal's SIGINT reaches
  the nodes too) ends the run early with what was recorded. In lockstep the simulated robot waits
  for the feedforward's command only: the identifier, not in that loop, has to keep up with the
  simulated rate on its own (its deep state queue rides out its refits).
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from numpy.typing import NDArray
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray

from motor_ident.errors import ConfigError, NodeProcessError
from motor_ident.io.demo_report import Recording, RunResult
from motor_ident.ros.common import (
    COMMAND_QOS,
    DEFAULT_ROBOT,
    LATCHED_QOS,
    NODE_EXECUTOR,
    STATE_QOS,
    limit_blas_threads,
    make_executor,
)
from motor_ident.ros.conversions import (
    DropCounter,
    JointIndex,
    StampOrder,
    array_values,
    joint_state_arrays,
    stamp_to_seconds,
)

FloatArray = NDArray[np.float64]

# Node name -> its class, "module:Class". The module's ``main`` is the node's entry point, listed
# under the same name in setup.py's NODES (tests/ros/test_node_processes.py checks both agree).
NODES: dict[str, str] = {
    "sim_robot": "motor_ident.ros.sim_robot_node:SimRobotNode",
    "identifier": "motor_ident.ros.identifier_node:IdentifierNode",
    "feedforward": "motor_ident.ros.feedforward_node:FeedforwardNode",
    "excitation": "motor_ident.ros.excitation_node:ExcitationNode",
    "decoupler": "motor_ident.ros.decoupler_node:DecouplerNode",
    "pwm_feedforward": "motor_ident.ros.pwm_feedforward_node:PwmFeedforwardNode",
    "vrec_controller": "motor_ident.ros.vrec_controller_node:VrecControllerNode",
    "elastic_sim": "motor_ident.ros.elastic_sim_node:ElasticSimNode",
}
# The simulated robots: a run lasts their ``duration`` parameter of simulated time.
SIMULATORS = ("sim_robot", "elastic_sim")

STARTUP_TIMEOUT_S = 60.0  # node processes import pinocchio / cvxpy and compile an SDP: seconds each, more when loaded
STOP_GRACE_S = 5.0  # after SIGINT (then SIGTERM) before the next, harder signal
STALL_S = 10.0  # no new state for this long (wall): the simulated robot has stopped; end the run
LOG_TAIL_LINES = 15


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


def scenario_nodes(params_file: Path) -> dict[str, dict[str, Any]]:
    """The nodes a scenario's parameter file names, in file order, with their parameters.

    Parameters under the ``/**`` key (every node) are merged under each node's own.

    Raises:
        ConfigError: the file is not a ROS 2 parameter file, names a node motor_ident does not
            have, or names none.
    """
    try:
        content = yaml.safe_load(params_file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"scenario file {params_file}: {exc}") from None
    expected = "one 'node_name: ros__parameters: {...}' entry per node"
    if not isinstance(content, dict):
        raise ConfigError(f"scenario file {params_file}: expected {expected}")
    sections: dict[str, dict[str, Any]] = {}
    for key, entry in content.items():
        parameters = entry.get("ros__parameters") if isinstance(entry, dict) else None
        if not isinstance(parameters, dict):
            raise ConfigError(f"scenario file {params_file}: {key}: expected {expected}")
        sections[str(key).lstrip("/")] = parameters
    every = sections.pop("**", {})
    unknown = [name for name in sections if name not in NODES]
    if unknown:
        raise ConfigError(
            f"scenario file {params_file} names {unknown}: motor_ident has no such node; its nodes are {sorted(NODES)}"
        )
    if not sections:
        raise ConfigError(f"scenario file {params_file} names no node: expected {expected}")
    return {name: {**every, **parameters} for name, parameters in sections.items()}


def node_class(name: str) -> type[Node]:
    """The class of node ``name`` (a key of `NODES`)."""
    module, cls = NODES[name].split(":")
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def node_command(name: str, ros_arguments: Sequence[str]) -> list[str]:
    """Command line starting node ``name`` as ``ros2 run motor_ident <name>`` does.

    Its entry point script next to this Python (a virtual environment's or a pip install's
    ``bin/``), else ``python -m <module>`` (the same ``main()``), then ``--ros-args`` and
    ``ros_arguments``.
    """
    script = Path(sys.executable).parent / name
    head = [str(script)] if script.is_file() else [sys.executable, "-m", NODES[name].split(":")[0]]
    return [*head, "--ros-args", *ros_arguments]


def parameter_argument(name: str, value: object) -> str:
    """``name:=value`` for ``--ros-args -p``: the value as YAML, which is how rcl reads it."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return f"{name}:={text.removesuffix('...').strip()}"


def memory_mb(pid: int | None = None, *, peak: bool = False) -> float:
    """Resident set size of a process (this one by default) [MB], its peak with ``peak``.

    Linux /proc; NaN elsewhere or once the process has gone.
    """
    key = "VmHWM:" if peak else "VmRSS:"
    try:
        with open(f"/proc/{'self' if pid is None else pid}/status") as status:
            for line in status:
                if line.startswith(key):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


class Recorder(Node):
    """Listens to the scenario's topics over DDS and keeps what the demo reports and plots.

    It keeps only messages that fit the scenario: states with every joint (matched by name, kept
    in ``joints`` order) in time order, arrays with one value per joint. Anything else, e.g. from
    a second publisher on ``joint_states``, is checked by the nodes' own validation
    (`motor_ident.ros.conversions`) and counted per topic and reason in ``data.dropped``; a
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

    def _on_clock(self, msg: Clock) -> None:
        self.clock = stamp_to_seconds(msg.clock)

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


def default_dds_environment() -> None:
    """Keep DDS discovery on this machine unless the user chose otherwise."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


@dataclass
class ProcessRunResult(RunResult):
    """A run with every node in its own process; also how each process did.

    ``processes``: one dict per node: ``node``, ``pid``, ``log`` (path), ``rss_mb`` (last seen
    while it ran), ``peak_rss_mb``, ``returncode`` (None while running) and ``stopped_with``
    (the last signal the runner sent: SIGINT, SIGTERM, SIGKILL; "interrupted" when Ctrl-C ended
    the run, "" if it exited by itself).
    """

    log_dir: Path | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)


class NodeProcess:
    """One node started through its entry point, its output going to ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, command: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 -- closed in `close`, after the process ended
        self.popen = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT, env=env
        )
        self.stopped_with = ""
        self.rss_mb = float("nan")
        self.peak_rss_mb = float("nan")

    def sample_memory(self) -> None:
        """Read the process's resident and peak memory while it runs."""
        if self.popen.poll() is None:
            rss, peak = memory_mb(self.popen.pid), memory_mb(self.popen.pid, peak=True)
            if np.isfinite(rss):
                self.rss_mb, self.peak_rss_mb = rss, peak

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the process's log."""
        if not self._log_file.closed:
            self._log_file.flush()
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def failure(self) -> ConfigError | NodeProcessError | None:
        """The error to raise when the process has exited without being asked to, else None."""
        code = self.popen.poll()
        if code is None or self.stopped_with:
            return None
        tail = self.tail()
        refusal = next((line for line in reversed(tail.splitlines()) if "refusing to start: " in line), None)
        if code == 2 and refusal is not None:  # run_node: a parameter is wrong
            return ConfigError(f"{self.name}: {refusal.split('refusing to start: ', 1)[1]} (log {self.log})")
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        return NodeProcessError(f"node {self.name} {how} before the run ended; the end of {self.log}:\n{tail}")

    def report(self) -> dict[str, Any]:
        """What `ProcessRunResult.processes` holds for this process."""
        return {
            "node": self.name,
            "pid": self.popen.pid,
            "log": str(self.log),
            "rss_mb": self.rss_mb,
            "peak_rss_mb": self.peak_rss_mb,
            "returncode": self.popen.poll(),
            "stopped_with": self.stopped_with,
        }

    def close(self) -> None:
        """Close the log file (the process has ended)."""
        self._log_file.close()


def stop_processes(processes: Sequence[NodeProcess], grace: float = STOP_GRACE_S) -> None:
    """End the running ones: SIGINT to all at once; SIGTERM after ``grace`` seconds; SIGKILL after another."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        running = [p for p in processes if p.popen.poll() is None]
        if not running:
            break
        for process in running:
            process.sample_memory()
            process.popen.send_signal(sig)
            process.stopped_with = sig.name
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.popen.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
    for process in processes:
        process.close()


class RunWatcher(Node):
    """What a run's summary needs from nodes in other processes, from their topics.

    The identifier's gate (``~/gate_open``), estimate (``~/parameters``), active model
    (``~/active_parameters``) and its /diagnostics (published every 0.5 s of simulated time: the
    R^2, condition number, reason and dropped samples of the summary may be that old), the last it
    published; its parameter names from its ``parameter_names`` parameter. The simulated time on
    /clock (RELIABLE, so the last stamp arrives even where the last best-effort state does not).
    """

    IDENTIFIER_STATUS = "motor_ident: identifier"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("motor_ident_run_watcher", **kwargs)
        self.gate_open = False
        self.theta: list[float] | None = None
        self.active_theta: list[float] = []
        self.reason = "no diagnostics from the identifier yet"
        self.values: dict[str, str] = {}
        self.parameter_names: list[str] = []
        self.clock = 0.0
        self._names_future: Any = None
        self.create_subscription(Clock, "/clock", self._on_clock, 10)
        self.create_subscription(Bool, "identifier/gate_open", self._on_gate, LATCHED_QOS)
        self.create_subscription(Float64MultiArray, "identifier/parameters", self._on_theta, 10)
        self.create_subscription(Float64MultiArray, "identifier/active_parameters", self._on_active, LATCHED_QOS)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._names_client = self.create_client(GetParameters, "identifier/get_parameters")

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
        """`_identifier_summary`'s keys, from what the identifier last published."""
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


def run_scenario(
    scenario: str | Path,
    *,
    duration: float,
    lockstep: bool = True,
    overrides: dict[str, dict[str, object]] | None = None,
    progress: Callable[[RunResult], None] | None = None,
    wall_timeout: float | None = None,
    keep_series: bool = True,
    processes: bool = False,
    log_dir: str | Path | None = None,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> RunResult:
    """Run every node a scenario's parameter file names until ``duration`` seconds of simulated time.

    Args:
        scenario: scenario name (``config/scenarios/<name>.yaml``) or parameter file path.
        duration: simulated seconds to run (the simulated robot's ``duration`` parameter).
        lockstep: step the simulator on each command (faster than real time) instead of in real time.
        overrides: extra parameters per node name, e.g. ``{"identifier": {"window": 300}}``.
        progress: called about twice a second with the partial result.
        wall_timeout: stop after this many wall seconds of simulation anyway (default: 20 x
            duration + 30).
        keep_series: keep every sample for plots; False keeps only counters (long runs, flat memory).
        processes: each node in its own process (a `ProcessRunResult`); else all in this one.
        log_dir: where the node processes write ``<node>.log`` (default: a new temporary directory).
        startup_timeout: wall seconds the node processes may take to come up, and then the
            simulated robot to publish its first state.

    Raises:
        ConfigError: the scenario file names an unknown node or no simulated robot, overrides
            name a node it does not start, or a parameter is invalid (the node refused to start;
            the message names it).
        NodeProcessError: a node process did not come up or exited during the run (with the end
            of its log).
    """
    default_dds_environment()
    limit_blas_threads()
    params_file = scenario_file(scenario)
    nodes = scenario_nodes(params_file)
    simulators = [name for name in nodes if name in SIMULATORS]
    if not simulators:
        raise ConfigError(
            f"scenario file {params_file} starts no simulated robot ({' or '.join(SIMULATORS)}), so nothing "
            "says when the run ends: next to a real robot, start its nodes with ros2 launch"
        )
    overrides = {name: dict(values) for name, values in (overrides or {}).items()}
    strangers = sorted(set(overrides) - set(nodes))
    if strangers:
        raise ConfigError(f"overrides for {strangers}: scenario {params_file.stem} starts only {list(nodes)}")
    for name in simulators:
        overrides.setdefault(name, {}).update({"lockstep": lockstep, "duration": float(duration)})
    robot, joints = _robot_and_joints({name: {**nodes[name], **overrides.get(name, {})} for name in nodes})
    plan = _Plan(
        params_file=params_file,
        nodes=list(nodes),
        simulators=simulators,
        overrides=overrides,
        robot=robot,
        joints=joints,
        duration=float(duration),
        wall_timeout=wall_timeout if wall_timeout is not None else 20.0 * duration + 30.0,
        keep_series=keep_series,
    )
    if processes:
        directory = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="motor_ident_run_"))
        return _run_as_processes(plan, progress, directory, startup_timeout)
    return _run_in_process(plan, progress)


@dataclass(frozen=True)
class _Plan:
    """What `run_scenario` resolved: the file, the nodes in file order, parameters, the result's labels."""

    params_file: Path
    nodes: list[str]
    simulators: list[str]
    overrides: dict[str, dict[str, object]]
    robot: str
    joints: tuple[str, ...]
    duration: float
    wall_timeout: float
    keep_series: bool


def _robot_and_joints(parameters: dict[str, dict[str, Any]]) -> tuple[str, tuple[str, ...]]:
    """The run's robot name (the identifier's robot config, else the simulator's) and joint names
    (the simulator's, in config order), from the nodes' parameters.

    Raises:
        ConfigError: a robot config cannot be loaded, or elastic_sim's ``joints`` are not given.
    """
    from motor_ident.io.robot_config import load_robot_config

    def config_of(node: str) -> Any:
        name = parameters[node].get("robot", DEFAULT_ROBOT)
        try:
            return load_robot_config(name)
        except ConfigError as exc:
            raise ConfigError(f"{node}: parameter robot = {name!r}: {exc}") from None

    if "sim_robot" in parameters:
        config = config_of("sim_robot")
        robot, joints = config.name, tuple(config.joints)
    elif "joints" in parameters["elastic_sim"]:
        robot, joints = "elastic_sim", tuple(str(j) for j in parameters["elastic_sim"]["joints"])
    else:
        raise ConfigError(
            "elastic_sim: set its parameter joints in the scenario file (the runner records those joints)"
        )
    if "identifier" in parameters:
        robot = config_of("identifier").name
    return robot, joints


def _run_in_process(plan: _Plan, progress: Callable[[RunResult], None] | None) -> RunResult:
    """Every node in this process, one executor spun in this thread."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", str(plan.params_file)], context=context)
    nodes: dict[str, Node] = {}
    recorder = None
    executor = None
    try:
        for name in plan.nodes:
            parameters = [Parameter(k, value=v) for k, v in plan.overrides.get(name, {}).items()]
            nodes[name] = node_class(name)(context=context, parameter_overrides=parameters)
        recorder = Recorder(plan.joints, keep_series=plan.keep_series, context=context)
        executor = make_executor(NODE_EXECUTOR, context)
        for node in (*nodes.values(), recorder):
            executor.add_node(node)
        identifier = nodes.get("identifier")
        start = time.monotonic()

        def result() -> RunResult:
            return RunResult(
                scenario=plan.params_file.stem,
                robot=plan.robot,
                joints=plan.joints,
                sim_time=recorder.sim_time,
                wall_time=time.monotonic() - start,
                recording=recorder.data,
                identifier_summary=_no_identifier_summary() if identifier is None else _identifier_summary(identifier),
            )

        def finished() -> bool:
            return all(nodes[name].finished for name in plan.simulators)  # type: ignore[attr-defined]

        _spin_run(context, executor, finished, plan.wall_timeout, progress, result)
        return result()
    finally:
        if executor is not None:
            executor.shutdown()
        for node in (*nodes.values(), *([recorder] if recorder is not None else [])):
            node.destroy_node()
        context.try_shutdown()


def _run_as_processes(
    plan: _Plan, progress: Callable[[RunResult], None] | None, log_dir: Path, startup_timeout: float
) -> ProcessRunResult:
    """Every node in its own process; the Recorder and a `RunWatcher` in this one."""
    import rclpy

    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RCUTILS_COLORIZED_OUTPUT": "0"}
    children: list[NodeProcess] = []

    def start(name: str) -> None:
        arguments = ["--params-file", str(plan.params_file)]
        for key, value in plan.overrides.get(name, {}).items():
            arguments += ["-p", parameter_argument(key, value)]
        children.append(NodeProcess(name, node_command(name, arguments), log_dir / f"{name}.log", env))

    context = rclpy.Context()
    rclpy.init(context=context)
    recorder = watcher = executor = None
    try:
        recorder = Recorder(plan.joints, keep_series=plan.keep_series, context=context)
        watcher = RunWatcher(context=context)
        executor = make_executor(NODE_EXECUTOR, context)
        executor.add_node(recorder)
        executor.add_node(watcher)
        others = [name for name in plan.nodes if name not in plan.simulators]
        for name in others:
            start(name)
        _spin_until(
            lambda: all(_has_topics(recorder, name) for name in others),
            executor,
            children,
            startup_timeout,
            lambda: "node processes did not come up: " + _not_up(recorder, children, others),
        )
        for name in plan.simulators:
            start(name)
        _spin_until(
            lambda: recorder.data.states > 0,
            executor,
            children,
            startup_timeout,
            lambda: "no joint_states from the simulated robot: " + _not_up(recorder, children, plan.simulators),
        )
        begin = time.monotonic()

        def result() -> ProcessRunResult:
            for child in children:
                child.sample_memory()
            return ProcessRunResult(
                scenario=plan.params_file.stem,
                robot=plan.robot,
                joints=plan.joints,
                sim_time=recorder.sim_time,
                wall_time=time.monotonic() - begin,
                recording=recorder.data,
                identifier_summary=watcher.summary() if "identifier" in plan.nodes else _no_identifier_summary(),
                log_dir=log_dir,
                processes=[child.report() for child in children],
            )

        last_state = [recorder.data.states, begin]

        def finished() -> bool:
            """The simulated time has reached the duration, or no state came for `STALL_S`."""
            if recorder.data.states != last_state[0]:
                last_state[:] = [recorder.data.states, time.monotonic()]
            stalled = time.monotonic() - last_state[1] > STALL_S
            return stalled or max(recorder.sim_time, watcher.clock) >= plan.duration

        def check() -> None:
            if context.ok():  # after Ctrl-C the nodes end on the terminal's SIGINT: no failure
                _raise_on_exit(children)
            watcher.poll_parameter_names()

        if _spin_run(context, executor, finished, plan.wall_timeout, progress, result, check):
            if "identifier" in plan.nodes:
                _spin_until(watcher.poll_parameter_names, executor, children, 2.0, None)
        else:
            for child in children:  # they got the terminal's signal too
                child.stopped_with = child.stopped_with or "interrupted"
        stop_processes(children)
        return result()
    finally:
        stop_processes(children)
        if executor is not None:
            executor.shutdown()
        for node in (recorder, watcher):
            if node is not None:
                node.destroy_node()
        context.try_shutdown()


def _spin_run(
    context: Any,
    executor: Any,
    finished: Callable[[], bool],
    wall_timeout: float,
    progress: Callable[[RunResult], None] | None,
    result: Callable[[], RunResult],
    check: Callable[[], None] | None = None,
) -> bool:
    """Spin until ``finished()`` or ``wall_timeout`` seconds, then 0.2 s more for the last messages.

    Calls ``progress(result())`` about twice a second and ``check()`` (which may raise) after
    every spin. Returns False when Ctrl-C or SIGTERM (rclpy's signal handlers shut the context
    down) ended the run early: the caller then returns what was recorded so far.
    """
    from rclpy.executors import ExternalShutdownException

    start = last_report = time.monotonic()
    try:
        while not finished() and time.monotonic() - start < wall_timeout:
            if not context.ok():
                return False
            executor.spin_once(timeout_sec=0.05)
            if check is not None:
                check()
            if progress is not None and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                progress(result())
        if context.ok():
            _spin_for(executor, 0.2)  # let the last messages arrive
    except (KeyboardInterrupt, ExternalShutdownException):
        return False
    return bool(context.ok())


def _spin_for(executor: Any, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)


def _spin_until(
    done: Callable[[], bool],
    executor: Any,
    children: Sequence[NodeProcess],
    timeout: float,
    failure: Callable[[], str] | None,
) -> None:
    """Spin until ``done()``; raise a `NodeProcessError` with ``failure()`` after ``timeout`` seconds
    (just return when ``failure`` is None), or the error of a child that exited."""
    deadline = time.monotonic() + timeout
    while not done():
        _raise_on_exit(children)
        if time.monotonic() > deadline:
            if failure is None:
                return
            raise NodeProcessError(f"{failure()} (within {timeout:g} s)")
        executor.spin_once(timeout_sec=0.05)


def _raise_on_exit(children: Sequence[NodeProcess]) -> None:
    for child in children:
        error = child.failure()
        if error is not None:
            raise error


def _has_topics(node: Node, name: str) -> bool:
    """Whether node ``name`` has created a publisher of its own (past rcl's /rosout and
    /parameter_events): its constructor, where the start-up work is, has come that far."""
    from rclpy.node import NodeNameNonExistentError

    try:
        publishers = node.get_publisher_names_and_types_by_node(name, "/")
    except NodeNameNonExistentError:
        return False
    return any(topic not in ("/rosout", "/parameter_events") for topic, _ in publishers)


def _not_up(node: Node, children: Sequence[NodeProcess], names: Sequence[str]) -> str:
    missing = [c for c in children if c.name in names and not _has_topics(node, c.name)] or [
        c for c in children if c.name in names
    ]
    return "; ".join(f"{c.name} (the end of {c.log}:\n{c.tail()})" for c in missing)


def _no_identifier_summary() -> dict[str, object]:
    """`_identifier_summary`'s keys for a scenario without an identifier."""
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
