"""xin_bench over real DDS in lockstep: elastic_sim + vrec_controller from the scenario file damp the ripple."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.ros

REFERENCE = 0.137  # rad/s: cogging near the resonance (as motor-ident reproduce xin)
STEPS = 2000


def _closed_loop() -> tuple[float, float, int, int]:
    """Run the scenario's loop for STEPS samples; returns (link velocity std and mean over the last second,
    commands published, non-finite commands)."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.nodes.elastic_sim_node import ElasticSimNode
    from motor_ident.ros.nodes.vrec_controller_node import VrecControllerNode
    from motor_ident.ros.runtime.common import COMMAND_QOS
    from tests.conftest import REPO
    from tests.ros.conftest import Ros

    with Ros(args=["--ros-args", "--params-file", str(REPO / "config/scenarios/xin_bench.yaml")]) as ros:
        # a generous lockstep_timeout: on a loaded machine the loop stays one command per step
        sim = ros.add(ElasticSimNode, lockstep=True, lockstep_timeout=5.0, duration=STEPS / 1000.0)
        # lockstep runs faster or slower than real time: staleness is judged per step, not by the wall clock
        controller = ros.add(VrecControllerNode, stale_timeout=1.0)
        probe = ros.probe()
        reference = probe.create_publisher(Float64MultiArray, "vrec_controller/velocity_reference", COMMAND_QOS)
        commands: list[list[float]] = []
        probe.create_subscription(
            Float64MultiArray, "effort_controller/commands", lambda m: commands.append(list(m.data)), COMMAND_QOS
        )
        ros.spin_until(
            lambda: controller.reference[0] == REFERENCE,
            10.0,
            each=lambda: reference.publish(Float64MultiArray(data=[REFERENCE])),
            period=0.02,
        )
        assert controller.reference[0] == REFERENCE
        ros.spin_until(lambda: sim.finished, 120.0)
        assert sim.finished, f"only {sim.counts['steps']} steps"
        tail = np.array(sim.link_velocity[-1000:])
        nonfinite = sum(not np.all(np.isfinite(c)) for c in commands)
        return float(tail.std()), float(tail.mean()), len(commands), nonfinite


def _core_loop(gain: float) -> float:
    """The same bench and loop without ROS (as motor-ident reproduce xin): link velocity std over the last second."""
    from motor_ident.core.control.vrec import VrecConfig, VrecController
    from motor_ident.papers.xin.bench import XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
    from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig, run_velocity_loop

    plant = xin_bench_parameters()
    controller = VrecController(plant, VrecConfig("motor", XIN_MOTOR_KP, XIN_MOTOR_KI, gain, 272.0), 1000.0)
    bench = ElasticJointBench(plant, encoders=EncoderConfig(ripple_amplitude=5.0))
    return float(run_velocity_loop(bench, controller, np.full(STEPS, REFERENCE)).link_velocity[-1000:].std())


def test_xin_bench_scenario_over_dds_damps_the_ripple() -> None:
    """The DDS loop tracks 0.137 rad/s with the ripple of the in-process VREC loop, well below pure PI's; no NaN."""
    std, mean, published, nonfinite = _closed_loop()
    assert nonfinite == 0 and published > STEPS // 2
    assert abs(mean / REFERENCE - 1.0) < 0.05
    pure_pi = _core_loop(0.0)
    assert std < 0.6 * pure_pi, (std, pure_pi)


def test_lockstep_steps_with_the_held_command_when_one_is_lost() -> None:
    """In lockstep, elastic_sim republishes until the first command; after that a lost command
    costs ``lockstep_timeout`` of wall time, then the bench steps with the held torque."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.nodes.elastic_sim_node import ElasticSimNode
    from tests.ros.conftest import Ros

    with Ros() as ros:
        sim = ros.add(ElasticSimNode, lockstep=True, lockstep_timeout=0.05)
        sim._lockstep_watchdog()
        assert sim.counts["steps"] == 0  # no command yet: states republished, no step
        sim._on_command(Float64MultiArray(data=[3.0]))
        assert sim.counts["steps"] == 1
        sim._lockstep_watchdog()  # within the timeout: still waiting
        assert sim.counts["steps"] == 1
        assert ros.spin_until(lambda: sim.counts["steps"] == 2, 10.0)  # the next command is lost
        assert sim.torque[0] == 3.0 and sim.wait.counts().timeout_steps == 1
