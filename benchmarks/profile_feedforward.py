"""Where the feedforward node's microseconds go: pyinstrument profiles of its 1 kHz path.

    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST .venv/bin/python benchmarks/profile_feedforward.py [--dds SECONDS]

1. The state callback alone: the real `FeedforwardNode` answers 20,000 prebuilt joint_states
   (valkyrie_arm, on the reference) without DDS in between; prints the time per state and the
   profile of the callback (conversion, stamp check, law, saturation, message, publish).
2. With ``--dds SECONDS``: the whole process of ``motor-ident bench``'s same-process layout (the
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


def profile_callback(states: int = 20000) -> None:
    """Profile `FeedforwardNode._on_state` on ``states`` prebuilt messages."""
    import rclpy
    from pyinstrument import Profiler

    from motor_ident.core.threads import limit_blas_threads
    from motor_ident.ros.conversions import make_joint_state
    from motor_ident.ros.feedforward_node import FeedforwardNode

    limit_blas_threads()
    context = rclpy.Context()
    rclpy.init(context=context)
    node = FeedforwardNode(context=context)
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
            make_joint_state(node.joints, times[k], q[k] + 1e-3 * rng.standard_normal(n), qd[k], np.zeros(n))
            for k in range(2 * states)
        ]
        for msg in messages[:1000]:  # warm up caches and the first-call paths
            node._on_state(msg)
        rnea_law, regressor_law = node.law, RegressorLaw(node)
        half = (states - 1000) // 2
        cpu = {"rnea": 0.0, "regressor": 0.0}
        for k in range(1000, states, 500):  # alternate in blocks: both paths see the same load
            law = "rnea" if (k // 500) % 2 == 0 else "regressor"
            node.law = rnea_law if law == "rnea" else regressor_law
            start = time.process_time()  # CPU time: the machine may be shared, wall time counts the others
            for msg in messages[k : k + 500]:
                node._on_state(msg)
            cpu[law] += time.process_time() - start
        node.law = rnea_law
        for law, seconds in cpu.items():
            print(f"state callback, {law} law: {1e6 * seconds / half:.1f} us of CPU per state (not profiled)")
        profiler = Profiler(interval=0.0001)
        with profiler:
            for msg in messages[states:]:
                node._on_state(msg)
        assert node.drops.total == 0 and node.mode.startswith("tracking"), node.mode
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def profile_dds(seconds: float) -> None:
    """Profile the same-process latency layout of ``motor-ident bench`` for ``seconds``."""
    from pyinstrument import Profiler

    from motor_ident.ros.latency import measure_feedforward_latency

    profiler = Profiler(interval=0.0002)
    with profiler:
        figures = measure_feedforward_latency(seconds, same_process=True)
    print({k: figures[k] for k in ("latency_p50_ms", "latency_p99_ms", "missed_cycles", "cycles", "cpu_share")})
    print(profiler.output_text(unicode=False, color=False, show_all=False))


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dds", type=float, default=0.0, help="also profile a DDS run of this many seconds")
    args = parser.parse_args()
    profile_callback()
    if args.dds > 0.0:
        profile_dds(args.dds)


if __name__ == "__main__":
    main()
