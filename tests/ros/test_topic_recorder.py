"""`motor-ident record --topics` recording a robot's live topics (played by `motor-ident play`, a process)
into an MCAP that `identify`, the mcap tools and `play` read; bags keep their topics' QoS and `play` offers it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from motor_ident.io.bags.qos import standard_qos
from tests.conftest import REPO

pytestmark = pytest.mark.ros

TOPICS = ["/joint_states", "/identifier/gate_open"]
JOINTS = ["shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"]
LOG = REPO / "examples" / "arm_log"


def _command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "motor_ident.cli", *arguments]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two simulated seconds of the valkyrie arm: its identifier's latched gate topic."""
    from motor_ident.commands.record import record_scenario

    path = tmp_path_factory.mktemp("simulated") / "run"
    record_scenario("valkyrie_arm", path, duration=2.0)
    return path


@pytest.fixture(scope="module")
def source(simulated: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The robot's topics to play live: 3 s of the example arm's logger (jittered 8-13 ms stamps,
    by `to-bag`) and the simulated identifier's latched gate."""
    from motor_ident.cli import main
    from motor_ident.io.bags.read import raw_messages
    from motor_ident.io.bags.write import BagWriter

    logged = tmp_path_factory.mktemp("robot") / "log"
    arguments = ["to-bag", str(LOG / "identification.csv"), "--spec", str(LOG / "spec.yaml"), "--robot", "valkyrie_arm"]
    assert main([*arguments, "--keep-time", "1.5:4.5", "--out", str(logged)]) == 0
    path = logged.parent / "robot"
    states, _ = raw_messages(logged, topics=["/joint_states"])
    (gate, *_), _ = raw_messages(simulated, topics=["/identifier/gate_open"])
    with BagWriter(path) as bag:
        bag.add_topic("/joint_states", states[0].msgtype, [standard_qos("/joint_states")])
        bag.add_topic(gate.topic, gate.msgtype, [standard_qos(gate.topic)])
        bag.raw(gate.topic, states[0].time_ns, gate.data)
        for message in states:
            bag.raw(message.topic, message.time_ns, message.data)
    return path


@pytest.fixture(scope="module")
def live(source: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The recorder started first (it waits for the topics), the robot's topics played at 1 kHz by
    `motor-ident play` (which waits until they have a subscriber), then SIGINT to the recorder."""
    out = tmp_path_factory.mktemp("live")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    recorder = subprocess.Popen(
        _command(
            "record", "--topics", *TOPICS, "--out", str(out / "bag"), "--wait", "60", "--json", str(out / "r.json")
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        player = subprocess.run(
            _command("play", str(source), "--topics", *TOPICS, "--wait", "30", "--no-clock"),
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert player.returncode == 0, player.stderr
        # the recorder said it started before play could start (play waits for its subscriptions);
        # once play has exited its reliable publishers have delivered (it lingers 0.2 s for the tail)
        recorder.send_signal(signal.SIGINT)
        stdout, stderr = recorder.communicate(timeout=60)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    return {
        "bag": out / "bag",
        "returncode": recorder.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "summary": json.loads((out / "r.json").read_text()) if (out / "r.json").exists() else {},
        "played": player.stdout,
    }


def test_sigint_leaves_a_complete_bag_with_every_message(live: dict[str, object], source: Path) -> None:
    """Exit 0 on Ctrl-C with one summary line; per topic as many messages as were published (reliable:
    none lost), with the topics' real types."""
    from motor_ident.io.bags.read import raw_messages

    assert live["returncode"] == 0, live["stderr"]
    last = str(live["stdout"]).strip().splitlines()[-1]
    assert last.startswith("recorded ") and "stopped by SIGINT" in last, live["stdout"]
    assert "Traceback" not in str(live["stderr"])
    published, _ = raw_messages(source, topics=TOPICS)
    sent = {topic: sum(m.topic == topic for m in published) for topic in TOPICS}
    assert f"published {sum(sent.values())} messages" in str(live["played"])
    summary = live["summary"]
    assert isinstance(summary, dict)
    assert summary["messages"] == sent, (summary["messages"], sent)
    assert summary["types"] == {
        "/joint_states": "sensor_msgs/msg/JointState",
        "/identifier/gate_open": "std_msgs/msg/Bool",
    }
    assert not list(Path(live["bag"]).parent.glob(".bag.tmp-*")), "the temporary directory was left behind"


def test_live_bag_keeps_stamps_bytes_qos_and_reads_in_the_mcap_tools(live: dict[str, object], source: Path) -> None:
    """The mcap packages read it; messages are the published CDR bytes (header stamps unchanged); log
    times are wall-clock receive times; the latched topic's TRANSIENT_LOCAL QoS is in the metadata."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from rosbags.interfaces import QosDurability, QosReliability

    from motor_ident.io.bags.qos import recorded_qos
    from motor_ident.io.bags.read import raw_messages

    bag = Path(live["bag"])
    with open(bag / "bag.mcap", "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        decoded = list(reader.iter_decoded_messages(topics=["/joint_states"]))
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, _, _, m in decoded])
    sent, _ = raw_messages(source, topics=["/joint_states"])
    assert stamps.size == len(sent)
    np.testing.assert_allclose(stamps, [m.time_ns * 1e-9 for m in sent], atol=1e-9)  # to-bag: stamp = receive time
    recorded, _ = raw_messages(bag, topics=["/joint_states"])
    assert [m.data for m in recorded] == [m.data for m in sent]
    now = time.time_ns()
    assert all(now - 600e9 < m.time_ns <= now for m in recorded)  # received in the last 10 minutes
    qos = recorded_qos(bag)
    assert [q.durability for q in qos["/identifier/gate_open"]] == [QosDurability.TRANSIENT_LOCAL]
    assert [q.reliability for q in qos["/joint_states"]] == [QosReliability.RELIABLE]


def test_identify_fits_the_live_recording(live: dict[str, object], tmp_path: Path) -> None:
    """identify reads the recorded bag and fits every joint."""
    run = subprocess.run(
        _command(
            "identify", str(live["bag"]), "--robot", "valkyrie_arm", "--no-report", "--json", str(tmp_path / "f.json")
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    fit = json.loads((tmp_path / "f.json").read_text())
    assert fit["joints"] == JOINTS and fit["n_samples"] > 250
    assert min(fit["r2_per_joint"]) > 0.9, fit["r2_per_joint"]


def test_no_publisher_is_one_line_and_no_bag(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A topic nobody publishes: one line naming it, exit 2, nothing written; --scenario with --topics refused."""
    from motor_ident.cli import main

    out = tmp_path / "bag"
    assert main(["record", "--topics", "/nobody_publishes_this", "--out", str(out), "--wait", "0.3"]) == 2
    err = capfd.readouterr().err
    assert "/nobody_publishes_this" in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())
    with pytest.raises(SystemExit) as refused:
        main(["record", "--topics", "/joint_states", "--scenario", "icub_torso", "--out", str(out)])
    assert refused.value.code == 2 and "--scenario" in capfd.readouterr().err


def test_play_replays_a_latched_topic_latched(ros, simulated: Path) -> None:
    """The simulated bag records /identifier/gate_open as TRANSIENT_LOCAL; played, a latched subscriber
    joining after the last message (as the monitor does) still receives it."""
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Bool

    from motor_ident.ros.recording.bag_player import BagPlayer
    from motor_ident.ros.runtime.common import LATCHED_QOS
    from tests.ros.conftest import spin_replay

    player = BagPlayer(simulated, topics=["/identifier/gate_open"], publish_clock=False, rate=50.0, context=ros.context)
    ros._keep(player)
    assert spin_replay(ros.executor, player, 30.0)
    last = deserialize_message(player.messages[-1].data, Bool)
    received: list[bool] = []
    late = ros.probe("late_monitor")
    late.create_subscription(Bool, "/identifier/gate_open", lambda msg: received.append(msg.data), LATCHED_QOS)
    deadline = time.monotonic() + 10.0
    while not received and time.monotonic() < deadline:
        ros.executor.spin_once(timeout_sec=0.05)
    assert received == [last.data]


def test_simulated_bags_carry_the_nodes_qos(simulated: Path) -> None:
    """`record`'s bag keeps per topic the profile its node publishes with (ros.common's, converted):
    history, depth, reliability, durability (deadlines and liveliness are the defaults on both sides)."""
    from motor_ident.io.bags.qos import recorded_qos
    from motor_ident.ros.recording.topic_recorder import bag_qos
    from motor_ident.ros.runtime.common import COMMAND_QOS, LATCHED_QOS, STATE_QOS

    nodes = {
        "/joint_states": STATE_QOS,
        "/motor_states": STATE_QOS,
        "/effort_controller/commands": COMMAND_QOS,
        "/identifier/gate_open": LATCHED_QOS,
    }

    def policies(qos: Any) -> tuple[object, ...]:
        return qos.history, qos.depth, qos.reliability, qos.durability

    recorded = recorded_qos(simulated)
    for topic, profile in nodes.items():
        assert [policies(q) for q in recorded[topic]] == [policies(bag_qos(profile))], topic


def test_sigterm_leaves_a_complete_bag(ros, tmp_path: Path) -> None:
    """SIGTERM (systemd, containers) ends the recording like Ctrl-C: exit 0, a bag that reads, its counts printed."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.io.bags.read import raw_messages
    from motor_ident.ros.runtime.common import COMMAND_QOS
    from motor_ident.ros.wire.conversions import make_array

    publisher = ros.probe("commands").create_publisher(Float64MultiArray, "/sigterm/commands", COMMAND_QOS)
    out = tmp_path / "bag"
    recorder = subprocess.Popen(
        _command("record", "--topics", "/sigterm/commands", "--out", str(out), "--wait", "30"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            ros.executor.spin_once(timeout_sec=0.05)
        assert publisher.get_subscription_count() == 1, "the recorder did not subscribe within 30 s"
        for k in range(20):
            publisher.publish(make_array(np.full(4, float(k))))
        recorder.send_signal(signal.SIGTERM)
        stdout, stderr = recorder.communicate(timeout=30)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    assert recorder.returncode == 0, stderr
    last = stdout.strip().splitlines()[-1]
    assert "stopped by SIGTERM" in last, stdout
    messages, notes = raw_messages(out)
    assert not notes and f"/sigterm/commands {len(messages)})" in last and len(messages) <= 20
