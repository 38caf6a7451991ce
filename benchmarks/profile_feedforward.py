"""Where the feedforward node's microseconds go: pyinstrument profiles of its 1 kHz path.

    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST .venv/bin/python benchmarks/profile_feedforward.py \
        [--robot R] [--dds SECONDS] [--others]

1. The state callback alone: the real `FeedforwardNode` (configured and active) answers 20,000
   prebuilt serialized joint_states (valkyrie_arm, on the reference, as its raw subscription
   receives them) without DDS in between; prints the CPU time per state beside the bare echo's
   (rclpy's deserialization of the same bytes plus one publish of a preallocated message: what
   ``motor-ident bench`` measures as the floor) and the profile of the callback (reading the
   bytes, stamp check, law, saturation, writing the bytes, publish).
2. With ``--others``: the same for pwm_feedforward and the decoupler on icub_torso, per 1 kHz
   cycle (pwm_feedforward reads a joint state and answers a desired torque vector; the decoupler
   republishes a joint state as motor states).
3. With ``--dds SECONDS``: the whole process of ``motor-ident bench``'s same-process layout (the
   stand-in robot's 1 kHz timer and the node in one executor, over DDS), for the share of the
   executor, the robot's tick and the node's callback.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np


class RegressorLaw:
    """The former 1 kHz path, for comparison: base regressor rows per state, blend on base parameters."""

    def __init__(self, node: Any) -> None:
        from motor_ident.core.control.computed_torque import ComputedTorque, ModelBlend

        self.config = node.law.config
        self.law = ComputedTorque(node.law.regressor, node.base, self.config)
        self.blend = ModelBlend(node.base.to_base(node.theta_nominal), rate=node.blend.rate)

    def command(self, q: Any, qd: Any, q_ref: Any, qd_ref: Any, qdd_ref: Any, dt: float) -> Any:
        """``Y_base(q, qd, qdd_cmd) theta_base``."""
        rows = self.law.command_rows(q, qd, q_ref, qd_ref, qdd_ref)
        return rows @ self.blend.step(rows, dt)


def profile_callback(states: int = 20000, robot: str = "valkyrie_arm") -> None:
    """Profile `FeedforwardNode._on_state` on ``states`` prebuilt messages for ``robot``."""
    import rclpy
    from pyinstrument import Profiler
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.core.threads import limit_blas_threads
    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode
    from motor_ident.ros.runtime.common import COMMAND_QOS
    from motor_ident.ros.runtime.lifecycle import start
    from motor_ident.ros.wire.conversions import make_joint_state

    limit_blas_threads()
    context = rclpy.Context()
    rclpy.init(context=context)
    from rclpy.parameter import Parameter

    node = start(FeedforwardNode(context=context, parameter_overrides=[Parameter("robot", value=robot)]))
    try:
        n = len(node.joints)
        rng = np.random.default_rng(0)
        t0 = 1000.0
        times = t0 + 0.001 * np.arange(2 * states)
        q = 0.3 * np.sin(np.linspace(0.0, 12.0, 2 * states))[:, None] + 0.1 * np.arange(n)
        qd = np.gradient(q, 0.001, axis=0)
        qdd = np.gradient(qd, 0.001, axis=0)
        node.reference.set(times, q, qd, qdd)
        messages = [
            serialize_message(
                make_joint_state(node.joints, times[k], q[k] + 1e-3 * rng.standard_normal(n), qd[k], np.zeros(n))
            )
            for k in range(2 * states)
        ]
        for msg in messages[:1000]:  # warm up caches and the first-call paths
            node._on_state(msg)
        rnea_law, regressor_law = node.law, RegressorLaw(node)
        echo_pub = node.create_publisher(Float64MultiArray, "bench_echo/commands", COMMAND_QOS)
        echo_msg = Float64MultiArray(data=[0.0] * n)

        def echo(data: bytes) -> None:  # the floor: rclpy builds the message, one publish
            echo_msg.layout.data_offset = len(deserialize_message(data, JointState).name)
            echo_pub.publish(echo_msg)

        cpu = {"rnea": 0.0, "regressor": 0.0, "echo": 0.0}
        count = dict.fromkeys(cpu, 0)
        for k in range(1000, states, 500):  # alternate in blocks: every path sees the same load
            path = list(cpu)[(k // 500) % 3]
            node.law = regressor_law if path == "regressor" else rnea_law
            answer = echo if path == "echo" else node._on_state
            start_cpu = time.process_time()  # CPU time: the machine may be shared, wall time counts the others
            for data in messages[k : k + 500]:
                answer(data)
            cpu[path] += time.process_time() - start_cpu
            count[path] += len(messages[k : k + 500])
        node.law = rnea_law
        for path, seconds in cpu.items():
            what = "bare echo (deserialize + publish)" if path == "echo" else f"state callback, {path} law"
            print(f"{what}: {1e6 * seconds / count[path]:.1f} us of CPU per state (not profiled)")
        profiler = Profiler(interval=0.0001)
        with profiler:
            for msg in messages[states:]:
                node._on_state(msg)
        assert node.drops.total == 0 and node.mode.startswith("tracking"), node.mode
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def other_nodes_cpu(cycles: int = 20000, robot: str = "icub_torso") -> None:
    """CPU per 1 kHz cycle of pwm_feedforward (a joint state and a desired torque vector, answered
    with duty cycles) and of the decoupler (a joint state, republished as motor states) beside the
    bare echo, on ``cycles`` prebuilt serialized messages, alternating in blocks of 500; prints
    the profile of each node's cycle."""
    import rclpy
    from pyinstrument import Profiler
    from rclpy.parameter import Parameter
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.core.threads import limit_blas_threads
    from motor_ident.ros.nodes.decoupler_node import DecouplerNode
    from motor_ident.ros.nodes.pwm_feedforward_node import PwmFeedforwardNode
    from motor_ident.ros.runtime.common import COMMAND_QOS
    from motor_ident.ros.runtime.lifecycle import start
    from motor_ident.ros.wire.conversions import make_array, make_joint_state

    limit_blas_threads()
    context = rclpy.Context()
    rclpy.init(context=context)
    overrides = [Parameter("robot", value=robot)]
    pwm = start(PwmFeedforwardNode(context=context, parameter_overrides=overrides))
    decoupler = DecouplerNode(context=context, parameter_overrides=overrides)
    try:
        joints = pwm.transmission.joints
        n = len(joints)
        now = pwm.get_clock().now().nanoseconds * 1e-9
        rng = np.random.default_rng(0)
        states = [
            serialize_message(
                make_joint_state(joints, now + 1e-3 * k, rng.normal(size=n), rng.normal(size=n), rng.normal(size=n))
            )
            for k in range(cycles)
        ]
        desired = [serialize_message(make_array(rng.normal(size=n))) for _ in range(cycles)]
        echo_pub = pwm.create_publisher(Float64MultiArray, "bench_echo/commands", COMMAND_QOS)
        echo_msg = Float64MultiArray(data=[0.0] * n)

        def echo(k: int) -> None:  # the floor: rclpy builds the message, one publish
            echo_msg.layout.data_offset = len(deserialize_message(states[k], JointState).name)
            echo_pub.publish(echo_msg)

        def pwm_cycle(k: int) -> None:
            pwm._on_state(states[k])
            pwm._on_desired(desired[k])

        def decoupler_cycle(k: int) -> None:
            decoupler._on_joint_states(states[k])

        paths = {"echo": echo, "pwm_feedforward": pwm_cycle, "decoupler": decoupler_cycle}
        for k in range(1000):  # warm up
            for path in paths.values():
                path(k)
        cpu = dict.fromkeys(paths, 0.0)
        count = dict.fromkeys(paths, 0)
        for block, k in enumerate(range(1000, cycles, 500)):
            name = list(paths)[block % 3]
            answer = paths[name]
            start_cpu = time.process_time()
            for j in range(k, min(k + 500, cycles)):
                answer(j)
            cpu[name] += time.process_time() - start_cpu
            count[name] += min(k + 500, cycles) - k
        for name in paths:
            print(f"{name} ({robot}): {1e6 * cpu[name] / count[name]:.1f} us of CPU per cycle (not profiled)")
        assert pwm.dropped == 0 and decoupler.dropped == 0
        for name in ("pwm_feedforward", "decoupler"):
            profiler = Profiler(interval=0.0001)
            with profiler:
                for j in range(cycles):
                    paths[name](j)
            print(profiler.output_text(unicode=False, color=False, show_all=False))
    finally:
        pwm.destroy_node()
        decoupler.destroy_node()
        rclpy.shutdown(context=context)


def profile_dds(seconds: float) -> None:
    """Profile the same-process latency layout of ``motor-ident bench`` for ``seconds``."""
    from pyinstrument import Profiler

    from motor_ident.ros.bench.latency import measure_feedforward_latency

    profiler = Profiler(interval=0.0002)
    with profiler:
        figures = measure_feedforward_latency(seconds, same_process=True)
    print({k: figures[k] for k in ("latency_p50_ms", "latency_p99_ms", "missed_cycles", "cycles", "cpu_share")})
    print(profiler.output_text(unicode=False, color=False, show_all=False))


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dds", type=float, default=0.0, help="also profile a DDS run of this many seconds")
    parser.add_argument("--robot", default="valkyrie_arm", help="robot config (e.g. panda_arm, 7 DoF)")
    parser.add_argument("--others", action="store_true", help="pwm_feedforward and the decoupler (icub_torso) instead")
    args = parser.parse_args()
    if args.others:
        other_nodes_cpu()
        return
    profile_callback(robot=args.robot)
    if args.dds > 0.0:
        profile_dds(args.dds)


if __name__ == "__main__":
    main()
