"""A bag from ``motor-ident record`` opens in third-party MCAP readers (the ``mcap`` and
``mcap-ros2-support`` packages, what Foxglove and PlotJuggler rely on), not only in rosbags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from motor_ident.ros.wire.msg_definitions import ros2msg_schema

TOPICS = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/motor_states": "sensor_msgs/msg/JointState",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/identifier/gate_open": "std_msgs/msg/Bool",
    "/identifier/r2": "std_msgs/msg/Float64MultiArray",
}


def _fields(schema_text: str) -> list[tuple[str, str]]:
    """(type without package, name) of every field of every message in a ros2msg text (no comments, constants)."""
    pairs = []
    for line in schema_text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and not line.startswith("MSG:") and "=" not in words[1] and not line.startswith("==="):
            pairs.append((words[0].rsplit("/", 1)[-1], words[1]))  # a type may be package-relative
    return pairs


def test_record_mcap_reads_with_mcap_and_mcap_ros2(tmp_path: Path) -> None:
    """Every channel of a recorded MCAP has a ros2msg schema with the installed types' fields, the
    file has its summary (index, statistics), and every message decodes with mcap-ros2-support to
    the same values rclpy's deserializer gives."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    bag = tmp_path / "run"
    subprocess.run(
        [sys.executable, "-m", "motor_ident.cli", "record", "--scenario", "valkyrie_arm", "--out", str(bag),
         "--duration", "0.3"],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    (mcap_file,) = bag.glob("*.mcap")
    with mcap_file.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None, "no summary: readers must scan the file"
        channels = {c.topic: c for c in summary.channels.values()}
        assert sorted(channels) == sorted(TOPICS)
        for topic, msgtype in TOPICS.items():
            schema = summary.schemas[channels[topic].schema_id]
            assert (channels[topic].message_encoding, schema.name, schema.encoding) == ("cdr", msgtype, "ros2msg")
            assert _fields(schema.data.decode()) == _fields(ros2msg_schema(msgtype)), f"{topic}: fields differ"
        counts: dict[str, int] = {}
        for _, channel, message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/joint_states":
                reference = deserialize_message(message.data, JointState)
                assert list(decoded.name) == list(reference.name)
                np.testing.assert_array_equal(decoded.position, reference.position)
                np.testing.assert_array_equal(decoded.effort, reference.effort)
    assert (
        counts["/joint_states"]
        == 300
        == summary.statistics.message_count - sum(n for t, n in counts.items() if t != "/joint_states")
    )
    assert counts["/identifier/gate_open"] >= 1
