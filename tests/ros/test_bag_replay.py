"""A recorded bag replayed over DDS into the identifier node, looping: same estimate as offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.ros.conftest import spin_replay

pytestmark = pytest.mark.ros

WINDOW = 150  # rows of 10 ms: the last 1.5 s of each pass


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three simulated seconds of the valkyrie arm under excitation."""
    from motor_ident.commands.record import record_scenario

    path = tmp_path_factory.mktemp("replay") / "run"
    record_scenario("valkyrie_arm", path, duration=3.0)
    return path


def _offline(node, record, start: int):
    """The node's own estimator (same core, same settings) fed the bag's joint states from ``start``."""
    from motor_ident.core.estimation.online import OnlineIdentifier

    core = OnlineIdentifier(node.regressor, node.base, node.base.to_full(node.core.theta_nominal), node.core.config)
    for k in range(start, record.t.size):
        core.add_sample(record.t[k], record.q[k], record.qd[k], record.tau[k])
    return core


def test_replayed_bag_gives_the_offline_estimate_and_a_loop_resets_cleanly(bag: Path) -> None:
    """Two passes at rate 1 over DDS: monitoring topics flow, one clean buffer reset, the offline estimate."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64MultiArray

    from motor_ident.core.estimation.identification import identify
    from motor_ident.io.bags.read import read_bag
    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.recording.bag_player import BagPlayer
    from motor_ident.ros.runtime.common import LATCHED_QOS
    from motor_ident.ros.runtime.lifecycle import start

    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []
    executor = None
    try:
        identifier = IdentifierNode(
            context=context,
            parameter_overrides=[
                Parameter("robot", value="valkyrie_arm"),
                Parameter("window_duration", value=WINDOW / 100.0),
                Parameter("use_sim_time", value=True),
                Parameter("nominal_inertia_scale", value=1.3),
            ],
        )
        nodes.append(identifier)
        start(identifier)  # configured and active, as launch starts it
        player = BagPlayer(
            bag, rate=1.0, loop=True, loops=2, topics=["/joint_states"], wait_for_subscribers=10.0, context=context
        )
        nodes.append(player)
        # What rqt_plot / rqt_robot_monitor would show during the replay (docs/monitoring.md).
        watcher = rclpy.create_node("watcher", context=context)
        nodes.append(watcher)
        seen = {"predicted": 0, "r2": 0, "gate": 0, "diagnostics": 0}

        def count(key: str):
            return lambda msg: seen.__setitem__(key, seen[key] + 1)

        watcher.create_subscription(JointState, "identifier/predicted_effort", count("predicted"), 10)
        watcher.create_subscription(Float64MultiArray, "identifier/r2", count("r2"), 10)
        watcher.create_subscription(Bool, "identifier/gate_open", count("gate"), LATCHED_QOS)
        watcher.create_subscription(DiagnosticArray, "/diagnostics", count("diagnostics"), 10)
        executor = EventsExecutor(context=context)
        for node in nodes:
            executor.add_node(node)
        # 2 passes of 3 s at rate 1: about 6 s of wall time
        assert spin_replay(executor, player, 60.0), "replay did not finish within 60 s"
        core = identifier.core
        record = read_bag(bag).joint_record(identifier.config.joints)
        N = record.t.size
        # The monitoring topics flowed; /diagnostics runs on a sim-time timer, so /clock drove it.
        assert all(seen.values()), seen
        # The loop: exactly one reset, the first sample after it refused as "clock went backwards".
        assert core.resets == 1 and "backwards" in identifier.last_reject_reason
        received = core.samples_seen + identifier.rejected + core.dropped - 1  # -1: dropped counted twice
        assert received >= 0.99 * 2 * N, (received, 2 * N)
        # Same estimate as the node's estimator run offline on the second pass (it starts at sample 1).
        offline = _offline(identifier, record, start=1)
        assert core.fit is not None and offline.fit is not None
        Y, tau = offline.window.window_data()
        Y2 = Y.reshape(-1, Y.shape[-1])
        scale = np.sqrt(np.mean((Y2 @ offline.fit.theta) ** 2))
        difference = np.sqrt(np.mean((Y2 @ (core.fit.theta - offline.fit.theta)) ** 2))
        assert difference < 0.03 * scale, (difference, scale)
        np.testing.assert_allclose(core.fit.r2_uncentred, offline.fit.r2_uncentred, atol=1e-2)
        # And the batch path of `motor-ident identify` on the whole bag predicts the window alike.
        full = record.with_derivatives()
        batch = identify(identifier.regressor, full.q, full.qd, full.qdd, full.tau)
        batch_rows = identifier.base.base_regressor(
            identifier.regressor.rows(full.q[-WINDOW * 10 :], full.qd[-WINDOW * 10 :], full.qdd[-WINDOW * 10 :])
        )
        node_rows = batch_rows @ core.fit.theta
        rms = np.sqrt(np.mean((batch_rows @ batch.fit.theta - node_rows) ** 2, axis=0))
        assert np.all(rms < 0.15), rms  # torque noise std in the recording: 0.1 N m
    finally:
        if executor is not None:
            executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)


def test_play_command_publishes_the_bag(bag: Path, capfd) -> None:
    """motor-ident play BAG: every joint state published once (fast rate, no waiting), exit 0; no bag: exit 2."""
    from motor_ident.cli import main

    assert main(["play", str(bag), "--rate", "20", "--wait", "0", "--topics", "/joint_states"]) == 0
    assert "published 3000 messages" in capfd.readouterr().out
    assert main(["play", str(bag.parent / "absent")]) == 2
    assert "does not exist" in capfd.readouterr().err
