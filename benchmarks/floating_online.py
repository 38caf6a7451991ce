"""floating_identifier over DDS on a simulated recording: time to the gate opening, total mass and CoM
error per refit against the simulator's truth, CPU per refit, dropped messages.

    motor-ident synth --robot icub --floating-base --duration 20 --out icub_bag --json icub_truth.json
    python benchmarks/floating_online.py icub icub_bag icub_truth.json [--rate 1.0] [-p chunk_s:=2.0 ...]

The bag is replayed by ``motor-ident play`` in its own process (as on a robot, the publishers
are other processes) into the node, which runs here on an EventsExecutor, on the bag's /clock.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> None:
    """Replay, then print one line per refit and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot")
    parser.add_argument("bag")
    parser.add_argument("truth", help="the --json of synth --floating-base (theta_true)")
    parser.add_argument("--rate", type=float, default=1.0, help="replay speed (1 = real time)")
    parser.add_argument("-p", action="append", default=[], help="node parameter name:=value (float)")
    args = parser.parse_args()

    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter

    from motor_ident.core.floating_base.identification import centre_of_mass
    from motor_ident.core.threads import limit_blas_threads
    from motor_ident.ros.nodes.floating_identifier_node import FloatingIdentifierNode
    from motor_ident.ros.runtime.lifecycle import start

    limit_blas_threads()
    theta_true = np.asarray(json.loads(open(args.truth).read())["theta_true"])
    overrides = {"robot": args.robot, "use_sim_time": True}
    for item in args.p:
        name, _, value = item.partition(":=")
        overrides[name] = float(value)
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list[Any] = []
    executor = EventsExecutor(context=context)
    try:
        started = time.monotonic()
        node = FloatingIdentifierNode(
            context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
        )
        nodes.append(node)
        start(node)
        print(f"configure (model, base parameters in stance): {time.monotonic() - started:.1f} s")
        core = node.core
        refits: list[tuple[float, float, np.ndarray, np.ndarray, np.ndarray, float, bool, str]] = []
        add = node._add_sample

        def watched(t: float, item: Any) -> None:
            before = core.refits
            add(t, item)
            estimate = core.estimate
            if core.refits != before and estimate is not None:
                zero = np.zeros((core.base.n_base, core.base.n_base))
                truth = centre_of_mass(core.regressor, estimate.q_reference, core.base, zero, theta_true)
                refits.append(
                    (
                        estimate.t,
                        float(estimate.mass.value),
                        np.array([estimate.mass.std, estimate.mass_white.std]),
                        estimate.com.value - truth.value,
                        np.stack([estimate.com.std, estimate.com_white.std]),
                        estimate.cpu_s,
                        core.gate_open,
                        core.gate.reason,
                    )
                )

        node._add_sample = watched  # type: ignore[method-assign]  # a probe on the refit path
        for each in nodes:
            executor.add_node(each)
        play = Path(sys.executable).parent / "motor-ident"
        player = subprocess.Popen([str(play), "play", args.bag, "--rate", str(args.rate), "--wait", "20"])
        while player.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        settle = time.monotonic()
        while time.monotonic() - settle < 0.5:
            executor.spin_once(timeout_sec=0.02)
        mass_true = float(theta_true[0::10].sum())
        print(f"true mass {mass_true:.3f} kg, URDF {core.nominal_mass:.3f} kg")
        for t, mass, std, com_error, com_std, cpu, gate, reason in refits:
            com_stds = " / ".join(" ".join(f"{1e3 * x:.2f}" for x in row) for row in com_std)
            print(
                f"t {t:6.2f} s  mass error {1e3 * (mass - mass_true):+.1f} g (std {1e3 * std[0]:.1f} / "
                f"{1e3 * std[1]:.1f})  CoM error {1e3 * com_error[0]:+.2f} {1e3 * com_error[1]:+.2f} "
                f"{1e3 * com_error[2]:+.1f} mm (std {com_stds})  CPU {1e3 * cpu:.0f} ms  "
                f"gate {'open' if gate else 'closed'}: {reason}"
            )
        print("std: residual-based (published) / white-noise (in /diagnostics)")
        first = next((r[0] for r in refits if r[6]), None)
        print(f"gate first open at t = {first} s (bag time)" if first is not None else "gate never opened")
        print(f"dropped: {node.drops.diagnostic_values()}")
        print(f"samples interpolated {core.filled}, buffer restarts {core.gaps}, chunks refused {core.skipped}")
    finally:
        executor.shutdown()
        for each in reversed(nodes):
            each.destroy_node()
        rclpy.shutdown(context=context)


if __name__ == "__main__":
    main()
