"""The monitor in a live run, and every shipped monitoring config checked against that run.

One valkyrie_arm run (lockstep, in process) with ``monitor`` enabled serving every topic of the
graph; a client speaking Foxglove's WebSocket protocol (`motor_ident.ros.monitor.foxglove_client`)
subscribes to every channel as it is advertised and keeps what arrives. The messages are decoded
with rclpy's deserializer and compared with what the run's own Recorder received over DDS. Then
the topic and field paths of config/rviz, config/rqt and config/foxglove are resolved in the
received messages.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.ros

SCENARIO = "valkyrie_arm"
EXPECTED_TYPES = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/identifier/gate_open": "std_msgs/msg/Bool",
    "/identifier/r2": "std_msgs/msg/Float64MultiArray",
    "/identifier/predicted_effort": "sensor_msgs/msg/JointState",
    "/feedforward/tracking_error": "std_msgs/msg/Float64MultiArray",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/robot_description": "std_msgs/msg/String",
}

# Not subscribed: 1 kHz like /joint_states, it would double what this test's client (a Python
# thread sharing the GIL with the run's executor) has to read while the run goes faster than real
# time; the server drops the oldest messages of a client that falls behind.
UNSUBSCRIBED = ("/effort_controller/commands",)


@dataclass
class Seen:
    """What the client saw: channels by topic, and per topic the payloads received (in order)."""

    channels: dict[str, Any] = field(default_factory=dict)
    payloads: dict[str, list[bytes]] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _watch(url: str, seen: Seen, stop: threading.Event) -> None:
    """Subscribe to every channel as it is advertised and keep the payloads, until ``stop`` or the
    server stops with the run."""
    from motor_ident.ros.monitor.foxglove_client import FoxgloveClient, ServerClosedError

    try:
        with FoxgloveClient(url, timeout=120.0) as client:
            subscribed: set[str] = set()
            try:
                while not stop.is_set():
                    message = client.receive(0.05)
                    if message is not None:
                        seen.payloads.setdefault(message.topic, []).append(message.data)
                    seen.channels, seen.server_info = client.by_topic(), client.server_info
                    new = sorted(set(seen.channels) - subscribed - set(UNSUBSCRIBED))
                    if new:
                        client.subscribe(new)
                        subscribed.update(new)
            except ServerClosedError:
                pass
    except BaseException as exc:  # reported by the test, not lost in the thread
        seen.error = exc


@pytest.fixture(scope="module")
def monitored_run() -> tuple[Any, Seen]:
    """Eight simulated seconds of the scenario (the gate opens at about 5 s, later on a loaded
    machine) with the monitor serving every topic, and what a client saw."""
    from motor_ident.ros.runtime.runner import run_scenario

    port = _free_port()
    seen, stop = Seen(), threading.Event()
    thread = threading.Thread(target=_watch, args=(f"ws://127.0.0.1:{port}", seen, stop), daemon=True)
    thread.start()
    overrides = {"monitor": {"enabled": True, "port": port, "topics": [""]}}
    try:
        result = run_scenario(SCENARIO, duration=8.0, lockstep=True, overrides=overrides)
    finally:
        stop.set()
        thread.join(timeout=30.0)
    if seen.error is not None:
        raise seen.error
    assert result.recording.gate, "the gate never opened, so ~/gate_open was never published"
    return result, seen


def _decode(topic: str, data: bytes, seen: Seen) -> Any:
    from rclpy.serialization import deserialize_message

    from motor_ident.ros.recording.bag_player import message_class

    return deserialize_message(data, message_class(seen.channels[topic].schema_name))


def test_channels_carry_ros2msg_schemas_of_the_installed_types(monitored_run) -> None:
    """Every run topic is advertised as CDR with its type and the installed .msg text as ros2msg."""
    from motor_ident.ros.wire.msg_definitions import ros2msg_schema

    _, seen = monitored_run
    assert seen.server_info.get("capabilities") == [], "a default monitor offers clients nothing"
    for topic, msgtype in EXPECTED_TYPES.items():
        channel = seen.channels.get(topic)
        assert channel is not None, f"{topic} not advertised; advertised: {sorted(seen.channels)}"
        assert (channel.schema_name, channel.encoding, channel.schema_encoding) == (msgtype, "cdr", "ros2msg")
        assert channel.schema == ros2msg_schema(msgtype)
        assert topic in UNSUBSCRIBED or seen.payloads.get(topic), f"no message on {topic}"


def test_decoded_messages_carry_the_runs_live_values(monitored_run) -> None:
    """The joint states, R^2 and predictions the client decodes are the ones the run's Recorder got."""
    result, seen = monitored_run
    recorded = {round(t, 6): q for t, q, _ in result.recording.state}
    matched = 0
    for data in seen.payloads["/joint_states"]:
        msg = _decode("/joint_states", data, seen)
        assert list(msg.name) == list(result.joints)
        t = round(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, 6)
        if t in recorded:
            np.testing.assert_array_equal(np.asarray(msg.position), recorded[t], err_msg=f"state at t = {t}")
            matched += 1
    # a client that falls behind loses the oldest messages (the server's backlog): not every state
    assert matched >= 100, f"{matched} of {len(recorded)} recorded states seen by the client"
    r2_client = [tuple(_decode("/identifier/r2", d, seen).data) for d in seen.payloads["/identifier/r2"]]
    r2_recorded = [tuple(v) for _, v in result.recording.r2]
    assert r2_recorded and set(r2_recorded) & set(r2_client), "no R^2 vector the client got equals the Recorder's"
    gates = [_decode("/identifier/gate_open", d, seen).data for d in seen.payloads["/identifier/gate_open"]]
    assert gates[-1] == result.identifier_summary["gate_open"]
    urdf = _decode("/robot_description", seen.payloads["/robot_description"][0], seen).data
    assert ET.fromstring(urdf).get("name"), "the served robot description is a URDF"


# -- the shipped configs --------------------------------------------------------------------------


def resolve(msg: Any, path: str) -> Any:
    """The value at ``path`` (``a.b[2].c`` or ``a/b[2]/c``) in a deserialized rclpy message.

    Raises:
        AssertionError: a field does not exist or an index is out of range (naming which).
    """
    value = msg
    for part in filter(None, re.split(r"[./]", path)):
        match = re.fullmatch(r"(\w+)((?:\[\d+\])*)", part)
        assert match is not None, f"{path}: cannot read {part!r}"
        assert hasattr(value, match.group(1)), f"{path}: {type(value).__name__} has no field {match.group(1)!r}"
        value = getattr(value, match.group(1))
        for index in re.findall(r"\[(\d+)\]", match.group(2)):
            assert int(index) < len(value), f"{path}: index {index} out of range (length {len(value)})"
            value = value[int(index)]
    return value


def _check_path(topic: str, fields: str, seen: Seen, where: str) -> None:
    assert topic in EXPECTED_TYPES, f"{where}: {topic} is not a topic of the run's monitoring"
    channel = seen.channels.get(topic)
    assert channel is not None, f"{where}: {topic} does not exist in the run"
    assert channel.schema_name == EXPECTED_TYPES[topic], f"{where}: {topic} is {channel.schema_name}"
    value = resolve(_decode(topic, seen.payloads[topic][-1], seen), fields)
    assert isinstance(value, bool | int | float | np.floating), f"{where}: {topic}/{fields} is no number: {value!r}"


def rqt_plot_paths() -> list[str]:
    """The topic paths the shipped rqt script plots."""
    text = (REPO / "config" / "rqt" / "valkyrie_arm_plots.sh").read_text().replace("\\\n", " ")
    paths = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:4] == ["ros2", "run", "rqt_plot", "rqt_plot"]:
            paths += [w for w in words[4:] if w.startswith("/")]
    return paths


def test_rqt_plot_paths_resolve(monitored_run) -> None:
    """Every rqt_plot path of config/rqt names a run topic of the right type and a numeric field."""
    _, seen = monitored_run
    paths = rqt_plot_paths()
    assert len(paths) == 8, paths
    for path in paths:
        topic = max((t for t in EXPECTED_TYPES if path.startswith(t + "/")), key=len, default=None)
        assert topic is not None, f"config/rqt: {path} starts with no topic of the run"
        _check_path(topic, path[len(topic) :], seen, f"config/rqt {path}")


def _strings_under(node: Any, keys: tuple[str, ...]) -> list[str]:
    """Every string value of a key in ``keys`` anywhere in a JSON document."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, str):
                found.append(value)
            else:
                found += _strings_under(value, keys)
    elif isinstance(node, list):
        for item in node:
            found += _strings_under(item, keys)
    return found


def foxglove_paths(layout: Any) -> list[str]:
    """Every message path in a Foxglove layout (plot series, state transitions, indicators)."""
    return [p for p in _strings_under(layout, ("value", "path")) if p.startswith("/")]


def foxglove_topics(layout: Any) -> list[str]:
    """Every topic a Foxglove layout names outside message paths (3D layers' sources)."""
    return _strings_under(layout, ("topic", "jointStatesTopic"))


def test_foxglove_layout_paths_resolve(monitored_run) -> None:
    """Every path of config/foxglove names a run topic the monitor serves by default, with a numeric
    field; the 3D panel's topics exist with their types; the shipped file is what the generator makes."""
    from motor_ident.ros.monitor.monitor_layout import scenario_layout
    from motor_ident.scenario.monitor import MONITOR_TOPICS

    _, seen = monitored_run
    shipped = json.loads((REPO / "config" / "foxglove" / f"{SCENARIO}.json").read_text())
    assert shipped == json.loads(scenario_layout(SCENARIO).to_json()), "regenerate config/foxglove (module docstring)"
    paths = foxglove_paths(shipped)
    assert len(paths) == 17, paths  # 4 x 2 torques, 4 R^2, the gate, 4 tracking errors
    for path in paths:
        topic, _, fields = path.partition(".")
        assert topic in MONITOR_TOPICS, f"config/foxglove: {topic} is not served by default"
        _check_path(topic, fields, seen, f"config/foxglove {path}")
    topics = foxglove_topics(shipped)
    assert sorted(topics) == ["/joint_states", "/robot_description"]
    for topic in topics:
        assert seen.channels[topic].schema_name == EXPECTED_TYPES[topic]


def test_rviz_config_matches_the_run(monitored_run) -> None:
    """config/rviz: the robot description topic exists as a String holding the URDF, the fixed
    frame is the URDF's root link, and /joint_states names every movable joint of the URDF (what
    robot_state_publisher needs to publish the TF the view draws)."""
    result, seen = monitored_run
    rviz = yaml.safe_load((REPO / "config" / "rviz" / f"{SCENARIO}.rviz").read_text())
    displays = {d["Class"]: d for d in rviz["Visualization Manager"]["Displays"]}
    topic = displays["rviz_default_plugins/RobotModel"]["Description Topic"]["Value"]
    assert seen.channels[topic].schema_name == EXPECTED_TYPES[topic]
    urdf = ET.fromstring(_decode(topic, seen.payloads[topic][0], seen).data)
    children = {j.find("child").get("link") for j in urdf.iter("joint")}  # type: ignore[union-attr]
    roots = [link.get("name") for link in urdf.iter("link") if link.get("name") not in children]
    assert roots == [rviz["Visualization Manager"]["Global Options"]["Fixed Frame"]]
    movable = {j.get("name") for j in urdf.iter("joint") if j.get("type") != "fixed"}
    names = set(_decode("/joint_states", seen.payloads["/joint_states"][-1], seen).name)
    assert movable <= names, f"joint_states lacks {sorted(movable - names)}"
