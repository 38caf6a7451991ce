"""Scenario runner: a scenario's nodes over DDS, for machines without ``ros2 launch``.

A scenario's parameter file (``config/scenarios/<name>.yaml``) has one top-level key per node,
the nodes its launch file starts; `run_scenario` starts every node the file names (`NODES` maps a
name to its class; setup.py's ``NODES`` maps it to its ``ros2 run`` entry point) with that file,
plus a `Recorder` node (`motor_ident.ros.runtime.recorder`) that listens to their topics over DDS like
rqt would, and runs them until the simulated robot's ``duration`` has passed. Two layouts:

- in process (default): every node in the calling process, spun by one executor in the calling
  (main) thread. Nothing crosses a process boundary but DDS itself.
- as processes (``processes=True``; ``motor-ident run --processes``): each node is its own process
  (`motor_ident.ros.runtime.processes`: how they are started, watched and stopped); only the `Recorder`
  stays in the calling process. This is the layout on a robot, where the ros2_control hardware
  interface is another process too. The simulated robot starts last, once every other node has
  created its topics, so lockstep begins with every node listening. Ctrl-C, SIGTERM or SIGHUP
  ends the run early with what was recorded: the runner sends its nodes the same signal and waits
  for them to stop (each with its safe output); before the run is under way it stops them and
  raises `motor_ident.ros.runtime.processes.RunInterrupted`. A node never outlives the runner, even one
  killed by SIGKILL (`motor_ident.ros.runtime.processes`). In lockstep the simulated robot waits for the
  feedforward's command only: the identifier, not in that loop, has to keep up with the simulated
  rate on its own (its deep state queue rides out its refits).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from motor_ident.core.threads import limit_blas_threads
from motor_ident.errors import ConfigError
from motor_ident.io.demo_report import RunResult
from motor_ident.ros.runtime.common import NODE_EXECUTOR, make_executor
from motor_ident.ros.runtime.lifecycle import ManagedNode, activate, configure, managing
from motor_ident.ros.runtime.lockstep import node_counts
from motor_ident.ros.runtime.processes import (
    Forwarding,
    NodeProcess,
    ProcessRunResult,
    change_states,
    has_topics,
    not_up,
    parameter_argument,
    raise_on_exit,
    spin_until,
    stop_processes,
)
from motor_ident.ros.runtime.realtime import requested
from motor_ident.ros.runtime.recorder import (
    Recorder,
    RunWatcher,
    controller_commands,
    identifier_summary,
    no_identifier_summary,
)
from motor_ident.scenario.loader import find_scenario, load_scenario
from motor_ident.schema import flatten

# Node name -> its class, "module:Class". The module's ``main`` runs the node; setup.py's NODES
# lists its entry point under the same name (`motor_ident.ros.runtime.entry_points`, which calls that
# ``main``; tests/ros/test_node_processes.py checks they agree).
NODES: dict[str, str] = {
    "sim_robot": "motor_ident.ros.nodes.sim_robot_node:SimRobotNode",
    "identifier": "motor_ident.ros.nodes.identifier_node:IdentifierNode",
    "floating_identifier": "motor_ident.ros.nodes.floating_identifier_node:FloatingIdentifierNode",
    "feedforward": "motor_ident.ros.nodes.feedforward_node:FeedforwardNode",
    "excitation": "motor_ident.ros.nodes.excitation_node:ExcitationNode",
    "decoupler": "motor_ident.ros.nodes.decoupler_node:DecouplerNode",
    "pwm_feedforward": "motor_ident.ros.nodes.pwm_feedforward_node:PwmFeedforwardNode",
    "vrec_controller": "motor_ident.ros.nodes.vrec_controller_node:VrecControllerNode",
    "elastic_sim": "motor_ident.ros.nodes.elastic_sim_node:ElasticSimNode",
    "monitor": "motor_ident.ros.monitor.monitor_node:MonitorNode",
}
# The simulated robots: a run lasts their ``duration`` parameter of simulated time.
SIMULATORS = ("sim_robot", "elastic_sim")
# Started when its settings say ``enabled`` (the file's section or an override), whether or not the
# file names it; it publishes nothing, so the process layout does not wait for its topics.
MONITOR = "monitor"

STARTUP_TIMEOUT_S = 60.0  # node processes import pinocchio / cvxpy and compile an SDP: seconds each, more when loaded
STALL_S = 10.0  # no new state for this long (wall): the simulated robot has stopped; end the run


def scenario_nodes(scenario: str | Path) -> tuple[str, ...]:
    """The nodes a scenario file names (its launch file starts them), in file order.

    Raises:
        ConfigError: the file is not a ROS 2 parameter file, names a node motor_ident does not
            have, or names none.
    """
    loaded = load_scenario(scenario)
    unknown = [name for name in loaded.named if name not in NODES]
    if unknown:
        raise ConfigError(
            f"scenario file {loaded.path} names {unknown}: motor_ident has no such node; its nodes are {sorted(NODES)}"
        )
    if not loaded.named:
        raise ConfigError(f"scenario file {loaded.path} names no node: expected one 'node_name: ros__parameters:' each")
    return loaded.named


def node_class(name: str) -> Callable[..., Node]:
    """The class of node ``name`` (a key of `NODES`)."""
    module, cls = NODES[name].split(":")
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def is_managed(name: str) -> bool:
    """Whether node ``name`` is a lifecycle node (`motor_ident.ros.runtime.lifecycle.ManagedNode`)."""
    return issubclass(node_class(name), ManagedNode)  # type: ignore[arg-type]


def node_command(name: str, ros_arguments: Sequence[str]) -> list[str]:
    """Command line starting node ``name`` as ``ros2 run motor_ident <name>`` does.

    Its entry point script next to this Python (a virtual environment's or a pip install's
    ``bin/``), else ``python -m motor_ident.ros.runtime.entry_points <name>`` (the same function), then
    ``--ros-args`` and ``ros_arguments``.
    """
    script = Path(sys.executable).parent / name
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "motor_ident.ros.runtime.entry_points", name]
    return [*head, "--ros-args", *ros_arguments]


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
    processes: bool = False,
    log_dir: str | Path | None = None,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> RunResult:
    """Run every node a scenario's parameter file names until ``duration`` seconds of simulated time.

    Args:
        scenario: scenario name (``config/scenarios/<name>.yaml``) or parameter file path.
        duration: simulated seconds to run (the simulated robot's ``duration`` parameter).
        lockstep: step the simulator on each command (faster than real time) instead of in real time.
        overrides: extra parameters per node name, e.g. ``{"identifier": {"window_duration": 3.0}}``.
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
            name a node it does not start, or a parameter is unknown, of the wrong type or out of
            range (`motor_ident.scenario.loader.load_scenario`'s message, before any node starts);
            real-time settings without ``processes`` (one process for every node).
        NodeProcessError: a node process did not come up or exited during the run (with the end
            of its log).
        RunInterrupted: (``processes``) SIGINT, SIGTERM or SIGHUP before the run was under way;
            every node process has been stopped.
    """
    default_dds_environment()
    limit_blas_threads()
    params_file = find_scenario(scenario)
    nodes = scenario_nodes(params_file)  # bad values fail here, before any node starts
    simulators = [name for name in nodes if name in SIMULATORS]
    if not simulators:
        raise ConfigError(
            f"scenario file {params_file} starts no simulated robot ({' or '.join(SIMULATORS)}), so nothing "
            "says when the run ends: next to a real robot, start its nodes with ros2 launch"
        )
    overrides = {name: dict(values) for name, values in (overrides or {}).items()}
    strangers = sorted(set(overrides) - set(nodes) - {MONITOR})
    if strangers:
        raise ConfigError(f"overrides for {strangers}: scenario {params_file.stem} starts only {list(nodes)}")
    for name in simulators:
        overrides.setdefault(name, {}).update({"lockstep": lockstep, "duration": float(duration)})
    loaded = load_scenario(params_file, overrides)  # and bad overrides here
    nodes = tuple(name for name in nodes if name != MONITOR) + ((MONITOR,) if loaded.nodes[MONITOR].enabled else ())
    if MONITOR in nodes and not loaded.nodes[MONITOR].robot and "sim_robot" in nodes:
        # the 3D panel's robot: the simulated one's URDF
        overrides.setdefault(MONITOR, {})["robot"] = loaded.nodes["sim_robot"].robot
    robot, joints = _robot_and_joints({name: loaded.nodes[name] for name in nodes})
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
        settings={name: flatten(loaded.nodes[name]) for name in nodes},
    )
    claiming = [name for name in nodes if requested(getattr(loaded.nodes[name], "realtime", None))]
    if claiming and not processes:
        raise ConfigError(
            f"{', '.join(claiming)}: thread_priority, lock_memory and cpu_affinity apply to a node's own "
            "process: run with --processes"
        )
    if processes:
        directory = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="motor_ident_run_"))
        return _run_as_processes(plan, progress, directory, startup_timeout)
    return _run_in_process(plan, progress)


@dataclass(frozen=True)
class _Plan:
    """What `run_scenario` resolved: the file, the nodes in file order, parameters, the result's labels.

    ``settings``: node -> its checked settings (`motor_ident.schema.flatten`), for the report.
    """

    params_file: Path
    nodes: list[str]
    simulators: list[str]
    overrides: dict[str, dict[str, object]]
    robot: str
    joints: tuple[str, ...]
    duration: float
    wall_timeout: float
    keep_series: bool
    settings: dict[str, dict[str, Any]]


def _robot_and_joints(settings: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The run's robot name (the identifier's robot config, else the simulator's) and joint names
    (the simulator's, in config order), from the started nodes' settings objects.

    Raises:
        ConfigError: a robot config cannot be loaded.
    """
    from motor_ident.io.robot_config import load_robot_config

    def config_of(node: str) -> Any:
        name = settings[node].robot
        try:
            return load_robot_config(name)
        except ConfigError as exc:
            raise ConfigError(f"{node}: parameter robot = {name!r}: {exc}") from None

    if "sim_robot" in settings:
        config = config_of("sim_robot")
        robot, joints = config.name, tuple(config.joints)
    else:
        robot, joints = "elastic_sim", tuple(settings["elastic_sim"].joints)
    if "identifier" in settings:
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
        for name in plan.nodes:  # managed nodes: configure every one, then activate (as the launch files do)
            configure(nodes[name])
        for name in plan.nodes:
            activate(nodes[name])
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
                identifier_summary=no_identifier_summary() if identifier is None else identifier_summary(identifier),
                settings=plan.settings,
                lockstep={n: c for n in plan.simulators if (c := node_counts(nodes[n])) is not None},
                commands_published=controller_commands(nodes),
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
    forwarding = Forwarding().install()  # before the first node starts; restored once the last has ended
    try:
        recorder = Recorder(plan.joints, keep_series=plan.keep_series, context=context)
        watcher = RunWatcher(context=context)
        executor = make_executor(NODE_EXECUTOR, context)
        executor.add_node(recorder)
        executor.add_node(watcher)
        others = [name for name in plan.nodes if name not in plan.simulators]
        for name in others:
            start(name)
        others = [name for name in others if name != MONITOR]
        spin_until(
            lambda: all(has_topics(recorder, name) for name in others),
            executor,
            children,
            startup_timeout,
            lambda: "node processes did not come up: " + not_up(recorder, children, others),
            forwarding,
        )
        managed = [(f"/{child.name}", child) for child in children if is_managed(child.name)]
        for transition in ("configure", "activate"):  # as the launch files do: every one configured first
            change_states(recorder, executor, children, managed, transition, startup_timeout, forwarding)
        forwarding.check()
        for name in plan.simulators:
            start(name)
        spin_until(
            lambda: recorder.data.states > 0,
            executor,
            children,
            startup_timeout,
            lambda: "no joint_states from the simulated robot: " + not_up(recorder, children, plan.simulators),
            forwarding,
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
                identifier_summary=watcher.summary() if "identifier" in plan.nodes else no_identifier_summary(),
                settings=plan.settings,
                lockstep=dict(watcher.lockstep),
                commands_published=sum(watcher.controller_commands.values()) if watcher.controller_commands else None,
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
            forwarding.check()  # before a node's exit is taken for a failure: a terminal's Ctrl-C reaches it too
            raise_on_exit(children)
            watcher.poll_parameter_names()

        if _spin_run(context, executor, finished, plan.wall_timeout, progress, result, check):
            if "identifier" in plan.nodes:
                spin_until(watcher.poll_parameter_names, executor, children, 2.0, None)
            reports = watcher.controller_reports  # the controllers' counts as the run ends: their next report
            spin_until(lambda: watcher.controller_reports > reports, executor, children, 2.0, None)
        else:
            for child in children:  # stopped on a signal to the runner (or the terminal's, which they got too)
                child.stopped_with = child.stopped_with or "interrupted"
        stop_processes(children, first=forwarding.first or signal.SIGINT)
        return result()
    finally:
        stop_processes(children, first=forwarding.first or signal.SIGINT)
        forwarding.restore()
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
    every spin. Returns False when Ctrl-C (KeyboardInterrupt), a signal ``check`` reports
    (`motor_ident.ros.runtime.processes.RunInterrupted`) or a context shut down ended the run early: the
    caller then returns what was recorded so far.
    """
    from rclpy.executors import ExternalShutdownException

    start = last_report = time.monotonic()
    try:
        while not finished() and time.monotonic() - start < wall_timeout:
            if not context.ok():
                return False
            try:
                executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # a managed node's callback: safe output, unconfigured, the run goes on
                failed = managing(exc)
                if failed is None:
                    raise
                failed.fail(exc)
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
