"""Small pieces shared by the nodes: parameters with descriptions, QoS choices, config loading,
the executor and the BLAS thread cap every node process runs with."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from motor_ident.core.threads import limit_blas_threads, settle_heap
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.ros.runtime import shutdown
from motor_ident.ros.runtime.lifecycle import ManagedNode, autostart, managing
from motor_ident.ros.runtime.realtime import claim_for

# joint_states / motor_states: latest sample matters, loss is tolerable (ros2/demos convention).
STATE_QOS = qos_profile_sensor_data
# The identifier uses every sample: a deep reader queue (0.5 s at 1 kHz) rides out its refits and
# physical-consistency checks (an SDP, 20-60 ms) without losing states. Best effort, so it matches
# any publisher.
IDENTIFIER_STATE_QOS = QoSProfile(depth=500, reliability=ReliabilityPolicy.BEST_EFFORT)
# ros2_controllers' forward command controllers subscribe RELIABLE: a best-effort publisher
# would never be matched, so commands are RELIABLE, shallow.
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# Model parameters: late joiners must get the current model at once.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def declare(node: Node, name: str, default: Any, description: str, *, read_only: bool = False) -> Any:
    """Declare a parameter with a description and return its value."""
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    return node.declare_parameter(name, default, descriptor).value


def load_robot(name: str) -> RobotConfig:
    """The robot config a node's ``robot`` parameter names.

    Raises:
        ConfigError: naming the parameter and its value when the config cannot be loaded.
    """
    try:
        return load_robot_config(name)
    except ConfigError as exc:
        raise ConfigError(f"parameter robot = {name!r}: {exc}") from None


def steady_timer(node: Node, period: float, callback: Callable[[], None]) -> Any:
    """A timer of ``period`` [s] on the steady (wall) clock, whatever the node's clock is.

    A node's own timers run on its ROS clock: with ``use_sim_time`` that is /clock, which stops
    when the simulator or the bag player stops; watchdogs and /diagnostics must go on then.
    """
    from rclpy.clock import Clock, ClockType

    return node.create_timer(period, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


class ClockWatch:
    """Whether a node's ROS clock still advances, judged on wall time (steady clock).

    With ``use_sim_time`` the ROS clock is /clock; without, it is the system clock and never stops.
    """

    def __init__(self, node: Node) -> None:
        self.node = node
        self.sim_time = bool(node.get_parameter("use_sim_time").value)
        self._last = node.get_clock().now().nanoseconds
        self._moved = time.monotonic()

    def stopped_for(self) -> float:
        """Wall seconds since the ROS clock last advanced (0 without ``use_sim_time``)."""
        now, wall = self.node.get_clock().now().nanoseconds, time.monotonic()
        if now != self._last or not self.sim_time:
            self._last, self._moved = now, wall
        return wall - self._moved

    def why(self, timeout: float) -> str:
        """ "/clock stopped N s ago" when it has not advanced for ``timeout`` wall seconds, else ""."""
        stopped = self.stopped_for()
        return f"/clock stopped {stopped:.1f} s ago (use_sim_time)" if stopped > timeout else ""


ExecutorKind = Literal["events", "single_threaded"]
# Executor of every node process (`run_node`) and of the runner; see run_node for the measurement.
NODE_EXECUTOR: ExecutorKind = "events"


def make_executor(kind: ExecutorKind, context: Any = None) -> Any:
    """A new rclpy executor: ``events`` (rclpy's EventsExecutor, C++) or ``single_threaded``.

    Spin either with a ``spin_once`` loop: with the PyPI rclpy wheels ``EventsExecutor.spin()``
    runs no callbacks.

    Raises:
        ConfigError: an unknown ``kind``.
    """
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor

    if kind == "events":
        return EventsExecutor(context=context)
    if kind == "single_threaded":
        return SingleThreadedExecutor(context=context)
    raise ConfigError(f"executor = {kind!r}: expected 'events' or 'single_threaded'")


def run_node(node_class: Callable[..., Node], args: list[str] | None = None) -> None:
    """``main()`` body of a node: init, spin until SIGINT / SIGTERM, clean shutdown, exit code 0.

    A managed node (`motor_ident.ros.runtime.lifecycle`) starts unconfigured: launch's ``LifecycleNode``
    actions, ``motor-ident run`` or the robot's lifecycle manager configure and activate it
    through its lifecycle services, or it does so itself with ``-p autostart:=true``. An
    exception in one of its callbacks sends its safe output and leaves it unconfigured
    (`ManagedNode.fail`); the process goes on.

    Stopping (`motor_ident.ros.runtime.shutdown`): a signal while the node starts abandons the start and
    the process exits 0; while it runs, SIGINT, SIGTERM or SIGHUP is recorded (a Python handler; rclpy's
    own handlers are not installed), the loop sees it within one ``spin_once`` timeout (0.1 s) and
    tears down in order: a lifecycle node's deactivation (its safe output), executor, node (its DDS
    entities), context. A SIGTERM after the first request abandons the step that blocks; a
    watchdog, started by the signal itself (even while a callback holds the main thread in C
    code), dumps the stacks and ends the process before ``ros2 launch`` escalates. rclpy's
    handlers would shut the context down under a running callback ("publisher's context is
    invalid" logged as FATAL) and raise KeyboardInterrupt inside rclpy's C++ argument conversion
    (exit status 1). A configuration error stops the node at start with one log line naming the
    parameter and exit code 2. A node with real-time settings claims its priority, memory and
    CPUs once built (`motor_ident.ros.runtime.realtime`). BLAS runs on one thread
    (`limit_blas_threads`); the objects of the built node are frozen out of the garbage
    collector's passes (`settle_heap`; a managed node's after each configure).

    The loop calls ``spin_once``: with the PyPI rclpy wheels ``EventsExecutor.spin()`` runs no
    callbacks and ignores signals.

    Executor (`NODE_EXECUTOR`): rclpy's EventsExecutor, measured against the SingleThreadedExecutor
    on the 1 kHz path in the process layout of a robot: the feedforward node in one process, a
    stand-in robot publishing joint_states at 1 kHz in another (`motor_ident.ros.bench.latency`; 4
    alternating 20 s runs each on 2 shared cores). EventsExecutor: state-to-command latency p50
    0.63-0.99 ms, p99 5.4-6.3 ms, 1551-2910 missed cycles of ~18,500, 37-48 % of a core;
    SingleThreadedExecutor: p50 1.06-1.49 ms, p99 6.5-8.6 ms, 2177-4821 missed, 56-68 % of a core.
    The SingleThreadedExecutor rebuilds its wait set in Python on every ``spin_once``; the
    EventsExecutor dispatches from C++, which leaves the core to the node's own work.
    """
    import gc

    import rclpy
    from rclpy.signals import SignalHandlerOptions

    stop = shutdown.install()
    node = None
    executor = None
    refused: ConfigError | None = None
    logger = rclpy.logging.get_logger(getattr(node_class, "__name__", "node"))
    try:
        limit_blas_threads()
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = node_class()
        limit_blas_threads()  # pools of libraries the node loaded while starting (cvxpy's solvers)
        if isinstance(node, ManagedNode):
            node.settle_heap_after_configure = True  # built at configure
        else:
            settle_heap()
        executor = make_executor(NODE_EXECUTOR)
        executor.add_node(node)
        for warning in claim_for(node):  # real-time priority, locked memory, CPU affinity
            logger.warning(warning)
        autostart(node)  # a managed node started on its own with autostart:=true
        stop.running()
        while rclpy.ok() and not stop.requests:
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception as exc:  # a managed node's callback: safe output, unconfigured, process lives on
                failed = managing(exc)
                if failed is None:
                    raise
                failed.fail(exc)
    except ConfigError as exc:
        refused = exc
    except shutdown.StopRequested as request:
        logger.info(f"stopping ({request} while {stop.phase})")
    finally:
        stop.stopping()
        if refused is not None:
            stop.step("log", lambda: logger.fatal(f"refusing to start: {refused}"))
        if node is not None and hasattr(node, "stop_commanding"):
            stop.step("safe output", node.stop_commanding)
        if executor is not None:
            stop.step("executor shutdown", executor.shutdown)
        if node is not None:
            stop.step("destroy_node", node.destroy_node)
            if stop.interrupted:  # rclpy's own destroy_node: the DDS entities, without the node's extra steps
                stop.step("destroy the node's DDS entities", lambda: Node.destroy_node(node))
        stop.step("rclpy shutdown", lambda: rclpy.try_shutdown())
        if stop.interrupted:
            stop.step("log", lambda: logger.warning(f"teardown steps abandoned on a signal: {stop.interrupted}"))
        # The process ends next. Python's final garbage collection walks every object of the
        # ~1200 modules a node loads: the identifier (cvxpy) took 2.5-4.8 s to exit on a loaded
        # machine, near the 5 s ros2 launch waits before SIGTERM; with the objects frozen, 0.2 s.
        gc.freeze()
        stop.finished()
    if refused is not None:
        raise SystemExit(2)
