"""Feedforward latency through DDS at 1 kHz (used by ``motor-ident bench``).

A stand-in robot publishes ``joint_states`` from a 1 kHz wall timer and times the
``effort_controller/commands`` the real `FeedforwardNode` answers with. Latency is from the
state's publish call to the command's arrival callback, over DDS both ways. Each state carries a
sequence number (``header.frame_id``) that the measured node copies into its command's
``layout.data_offset``, so a state the node skips (it answers the newest one) is counted as
unanswered instead of shifting every later pairing.

The stand-in robot runs in its own process, as a ros2_control hardware interface does on a robot,
so the figures hold the feedforward node's cost and the DDS hops, not the stand-in's own work; the
CPU share is the feedforward process's. ``same_process=True`` puts both in one process and one
executor (then one Python thread does both jobs at 1 kHz).

``node="echo"`` measures the floor instead: a bare rclpy node with the same message types, topics
and QoS that answers each state with a preallocated command carrying its sequence number and
nothing else — what DDS and rclpy cost without any of motor_ident's work.

The measured process is set up as a node process is (`run_node`): BLAS on one thread, and the
objects alive once the node is built frozen out of the garbage collector (`settle_heap`), the
echo's as the node's. With ``priority`` > 0 every thread of the measured process and of the
stand-in robot's runs at SCHED_FIFO with that priority for the run, as a node with
``thread_priority`` runs (`motor_ident.ros.runtime.realtime`), the echo's as the node's: the floor and
the node are compared at the same priority.
"""

from __future__ import annotations

import gc
import multiprocessing
import struct
import time
from multiprocessing.connection import Connection
from typing import Any, Literal

import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.core.threads import limit_blas_threads, settle_heap
from motor_ident.ros.runtime.common import (
    COMMAND_QOS,
    NODE_EXECUTOR,
    STATE_QOS,
    ExecutorKind,
    load_robot,
    make_executor,
)
from motor_ident.ros.runtime.realtime import set_priority
from motor_ident.ros.wire.conversions import make_joint_state

WARMUP_S = 1.0
DISCOVERY_TIMEOUT_S = 15.0  # the robot's process discovers the node's, which may take seconds on a busy machine
LATE_TICK_S = 0.0015  # a 1 kHz tick later than this counts as a missed cycle


MeasuredNode = Literal["feedforward", "echo", "pwm_feedforward", "decoupler"]
OUTPUT: dict[str, tuple[str, type, Any]] = {
    "feedforward": ("effort_controller/commands", Float64MultiArray, COMMAND_QOS),
    "echo": ("effort_controller/commands", Float64MultiArray, COMMAND_QOS),
    "pwm_feedforward": ("pwm_controller/commands", Float64MultiArray, COMMAND_QOS),
    "decoupler": ("decoupler/motor_states", JointState, STATE_QOS),
}
"""What each measured node answers a state on. A command array names the state it answers by its
``layout.data_offset`` (the measured node copies the state's sequence number there), a
republished state by its stamp; each with the QoS the node publishes it with."""


class _BenchRobot(Node):
    def __init__(self, joints: tuple[str, ...], q: np.ndarray, node: MeasuredNode, **kwargs: Any) -> None:
        super().__init__("bench_robot", **kwargs)
        self.joints, self.q = joints, q
        self.pub = self.create_publisher(JointState, "joint_states", STATE_QOS)
        # pwm_feedforward answers the desired torques that come with each state
        self.desired_pub = (
            self.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
            if node == "pwm_feedforward"
            else None
        )
        self.desired = Float64MultiArray(data=[0.0] * len(joints))
        topic, msg_type, qos = OUTPUT[node]
        self.create_subscription(msg_type, topic, self._on_answer, qos)
        self.sent: dict[int, float] = {}
        self.seq_of_stamp: dict[tuple[int, int], int] = {}
        self.seq = 0
        self.latencies: list[float] = []
        self.ticks: list[float] = []
        self.timer = self.create_timer(0.001, self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.ticks.append(now)
        t = self.get_clock().now().nanoseconds * 1e-9
        self.seq += 1
        msg = make_joint_state(self.joints, t, self.q, np.zeros_like(self.q), np.zeros_like(self.q))
        msg.header.frame_id = str(self.seq)
        self.sent[self.seq] = now
        self.seq_of_stamp[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = self.seq
        self.pub.publish(msg)
        if self.desired_pub is not None:
            self.desired.layout.data_offset = self.seq
            self.desired_pub.publish(self.desired)

    def _on_answer(self, msg: Float64MultiArray | JointState) -> None:
        if isinstance(msg, JointState):
            seq = self.seq_of_stamp.pop((msg.header.stamp.sec, msg.header.stamp.nanosec), -1)
        else:
            seq = msg.layout.data_offset
        sent = self.sent.pop(seq, None)
        if sent is not None:
            self.latencies.append(time.perf_counter() - sent)

    def restart(self) -> None:
        """Forget the warm-up."""
        self.latencies.clear()
        self.ticks.clear()
        self.sent.clear()
        self.seq_of_stamp.clear()

    def figures(self, wall: float) -> dict[str, Any]:
        """Latency percentiles [ms] and missed cycles since `restart`, over ``wall`` seconds."""
        lat = np.array(self.latencies) * 1e3
        late = int(np.sum(np.diff(np.array(self.ticks)) > LATE_TICK_S))
        unanswered = max(len(self.ticks) - len(self.latencies) - 1, 0)  # the last may be in flight
        percentile = (lambda p: float(np.percentile(lat, p))) if lat.size else (lambda p: float("nan"))
        return {
            "cycles": len(self.ticks),
            "expected_cycles": int(round(wall * 1000.0)),
            "latency_p50_ms": percentile(50),
            "latency_p99_ms": percentile(99),
            "latency_max_ms": percentile(100),
            "late_timer_ticks": late,
            "unanswered_states": unanswered,
            "missed_cycles": late + unanswered,
        }


def _frame_id_number(data: bytes) -> int:
    """The sequence number a bench state carries as its frame id, read from its CDR bytes (the
    frame id follows the 4-byte header and the 8-byte stamp)."""
    (length,) = struct.unpack_from("<I", data, 12)
    text = data[16 : 16 + length - 1]
    return int(text) if text.isdigit() else 0


def _timed_feedforward(**kwargs: Any) -> Any:
    """The real `FeedforwardNode`, copying each state's sequence number into the command it answers with."""
    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode

    class TimedFeedforward(FeedforwardNode):
        def _on_state(self, data: bytes) -> None:
            self.command_out.set_data_offset(_frame_id_number(data))
            super()._on_state(data)

    return TimedFeedforward(**kwargs)


def _timed_pwm_feedforward(**kwargs: Any) -> Any:
    """The real `PwmFeedforwardNode`, copying each desired torque's sequence number (its
    ``layout.data_offset``, after the empty ``dim`` sequence) into the duty cycles it answers with."""
    from motor_ident.ros.nodes.pwm_feedforward_node import PwmFeedforwardNode

    class TimedPwmFeedforward(PwmFeedforwardNode):
        def _on_desired(self, data: bytes) -> None:
            self.duty_out.set_data_offset(struct.unpack_from("<I", data, 8)[0])
            super()._on_desired(data)

    return TimedPwmFeedforward(**kwargs)


def _measured_node(node: MeasuredNode, robot: str, seconds: float, context: Any) -> tuple[Any, tuple[str, ...]]:
    """The node to measure, ready to answer states (a managed node configured and active, as launch
    starts it), and the joint names the stand-in robot must publish."""
    from motor_ident.ros.runtime.lifecycle import start

    overrides = [Parameter("robot", value=robot)]
    if node == "echo":
        echo = _EchoNode(load_robot(robot).joints, context=context)
        return echo, echo.joints
    if node == "decoupler":
        from motor_ident.ros.nodes.decoupler_node import DecouplerNode

        decoupler = DecouplerNode(context=context, parameter_overrides=overrides)
        return decoupler, decoupler.transmission.joints
    if node == "pwm_feedforward":
        pwm = start(_timed_pwm_feedforward(context=context, parameter_overrides=overrides))
        return pwm, pwm.transmission.joints
    ff = start(_timed_feedforward(context=context, parameter_overrides=overrides))  # configured, active
    n = len(ff.joints)
    now = ff.get_clock().now().nanoseconds * 1e-9
    t = np.array([now - 1.0, now + seconds + 30.0])
    q = np.full(n, 0.1)
    ff.reference.set(t, np.stack([q, q]), np.zeros((2, n)), np.zeros((2, n)))
    return ff, ff.joints


class _EchoNode(Node):
    """The floor: subscribes ``joint_states``, answers each with a preallocated command (no work)."""

    def __init__(self, joints: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__("bench_echo", **kwargs)
        self.joints = joints
        self.nonfinite_commands = 0
        self.command = Float64MultiArray()
        self.command.data = [0.0] * len(joints)
        self.pub = self.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
        self.create_subscription(JointState, "joint_states", self._on_state, STATE_QOS)

    def _on_state(self, msg: JointState) -> None:
        self.command.layout.data_offset = int(msg.header.frame_id or 0)
        self.pub.publish(self.command)


BackgroundKind = Literal["cpu", "alloc"]


def _busy(kind: BackgroundKind) -> None:
    """A background process's work until terminated: a CPU-bound loop, or one that also
    allocates and frees memory (the allocator and caches under pressure)."""
    if kind == "alloc":
        while True:
            blocks = [bytearray(4096) for _ in range(256)]  # 1 MB in 4 kB blocks, freed each round
            del blocks
    x = 0
    while True:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF


class BackgroundLoad:
    """``count`` busy processes of a ``kind`` for the duration of a ``with`` block: the other work
    a robot computer runs beside the control path (perception, logging). They use no DDS and are
    terminated on exit."""

    def __init__(self, count: int, kind: BackgroundKind = "cpu") -> None:
        self.count, self.kind = int(count), kind
        self._processes: list[Any] = []

    def __enter__(self) -> BackgroundLoad:
        mp = multiprocessing.get_context("spawn")
        for _ in range(self.count):
            process = mp.Process(target=_busy, args=(self.kind,), daemon=True)
            process.start()
            self._processes.append(process)
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            process.join(timeout=10.0)
        self._processes.clear()


def _spin_for(executor: Any, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        executor.spin_once(timeout_sec=0.01)


def _warm_up(executor: Any, robot: _BenchRobot) -> None:
    """Spin until commands flow (discovery done, 100 answered) or `DISCOVERY_TIMEOUT_S`, at least `WARMUP_S`."""
    _spin_for(executor, WARMUP_S)
    end = time.perf_counter() + DISCOVERY_TIMEOUT_S
    while len(robot.latencies) < 100 and time.perf_counter() < end:
        executor.spin_once(timeout_sec=0.01)
    robot.restart()


def _robot_process(
    joints: tuple[str, ...], q: np.ndarray, node: MeasuredNode, seconds: float, conn: Connection, priority: int
) -> None:
    """The stand-in robot's process: warm up, tell the parent, measure, send the figures back."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    robot = _BenchRobot(joints, q, node, context=context)
    executor = make_executor("events", context)
    executor.add_node(robot)
    if priority > 0:
        set_priority(priority)  # refused: the parent's own attempt has reported it already
    try:
        _warm_up(executor, robot)
        conn.send("start")
        wall0 = time.perf_counter()
        _spin_for(executor, seconds)
        conn.send(robot.figures(time.perf_counter() - wall0))
    finally:
        executor.shutdown()
        robot.destroy_node()
        rclpy.shutdown(context=context)


def measure_feedforward_latency(
    seconds: float,
    robot: str = "valkyrie_arm",
    *,
    same_process: bool = False,
    executor: ExecutorKind = NODE_EXECUTOR,
    node: MeasuredNode = "feedforward",
    priority: int = 0,
) -> dict[str, Any]:
    """Run the feedforward node (or the bare echo, ``node="echo"``, or another node on the 1 kHz
    path: ``pwm_feedforward``, ``decoupler``) against a 1 kHz state stream for ``seconds``; return
    the figures. ``robot``: the robot config the node and the stand-in robot use.

    ``executor``: what spins the measured node (a ``spin_once`` loop, as in `run_node`); the
    stand-in robot always spins rclpy's EventsExecutor. ``priority`` > 0: both processes' threads
    at SCHED_FIFO with it for the run (normal scheduling again afterwards); where that is not
    permitted the run goes on at normal priority and ``realtime_warning`` says why.

    Keys: ``latency_p50_ms``, ``latency_p99_ms``, ``latency_max_ms``, ``missed_cycles`` (late
    timer ticks + unanswered states), ``cpu_share`` (of one core, the measured node's process),
    ``cpu_us_per_message`` (that process's CPU time over the run per answered state [us]; with
    ``same_process`` it includes the stand-in robot's work),
    ``nonfinite_commands``, ``cycles``, ``expected_cycles``, ``robot_process``, ``executor``, ``node``,
    ``thread_priority`` (0: normal scheduling), ``realtime_warning``.
    """
    import rclpy

    from motor_ident.ros.runtime.runner import default_dds_environment

    default_dds_environment()  # inherited by the robot's process
    limit_blas_threads()  # as in a node process; inherited too
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list[Node] = []
    spinner = None
    child = None
    warning = ""
    try:
        ff, joints = _measured_node(node, robot, seconds, context)
        nodes.append(ff)
        settle_heap()  # as a node process does once its node is built (the echo's too)
        q = np.full(len(joints), 0.1)
        spinner = make_executor(executor, context)
        spinner.add_node(ff)
        if same_process:
            bench = _BenchRobot(joints, q, node, context=context)
            nodes.append(bench)
            spinner.add_node(bench)
        if priority > 0:  # every thread built so far: the node's, the middleware's
            warning = set_priority(priority)
        if same_process:
            _warm_up(spinner, bench)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            _spin_for(spinner, seconds)
            wall = time.perf_counter() - wall0
            figures = bench.figures(wall)
        else:
            mp = multiprocessing.get_context("spawn")
            parent_conn, child_conn = mp.Pipe()
            process = mp.Process(
                target=_robot_process, args=(joints, q, node, seconds, child_conn, priority), daemon=True
            )
            process.start()
            child = process  # joined on the way out only once started
            deadline = time.perf_counter() + WARMUP_S + DISCOVERY_TIMEOUT_S + seconds + 60.0
            while not parent_conn.poll() and time.perf_counter() < deadline:
                spinner.spin_once(timeout_sec=0.01)
            if not parent_conn.poll() or parent_conn.recv() != "start":
                raise RuntimeError("the stand-in robot process did not start")
            cpu0, wall0 = time.process_time(), time.perf_counter()
            while not parent_conn.poll() and time.perf_counter() < deadline:
                spinner.spin_once(timeout_sec=0.01)
            wall = time.perf_counter() - wall0
            if not parent_conn.poll():
                raise RuntimeError("the stand-in robot process did not report")
            figures = parent_conn.recv()
        cpu = time.process_time() - cpu0
        answered = max(figures["cycles"] - figures["unanswered_states"], 1)
        return {
            "seconds": seconds,
            **figures,
            "cpu_share": cpu / wall,
            "cpu_us_per_message": 1e6 * cpu / answered,
            "nonfinite_commands": int(getattr(ff, "nonfinite_commands", 0)),
            "robot_process": "same" if same_process else "separate",
            "executor": executor,
            "node": node,
            "thread_priority": 0 if warning else priority,
            "realtime_warning": warning,
        }
    finally:
        if priority > 0:
            set_priority(0)
        gc.unfreeze()  # the next run's nodes replace these
        if child is not None:
            child.join(timeout=10.0)
            if child.is_alive():
                child.terminate()
        if spinner is not None:
            spinner.shutdown()
        for made in nodes:
            made.destroy_node()
        rclpy.shutdown(context=context)
