"""The monitor node over DDS with a Foxglove protocol client: bytes forwarded unchanged, latched
topics resent to late subscribers, nothing accepted from clients unless enabled, clients of
either subprotocol name served."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.ros


def _poll(client: Any, got: dict[str, list[bytes]]) -> None:
    message = client.receive(0.01)
    if message is not None:
        got.setdefault(message.topic, []).append(message.data)


def test_forwards_serialized_bytes_and_resends_latched(ros) -> None:
    """A JointState arrives as serialized by rclpy (the same message once deserialized); a latched Bool published before
    the client subscribed reaches it on subscription; a default monitor binds 127.0.0.1 and offers
    no capability."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    from motor_ident.ros.monitor.foxglove_client import FoxgloveClient
    from motor_ident.ros.monitor.monitor_node import MonitorNode
    from motor_ident.ros.runtime.common import LATCHED_QOS, STATE_QOS

    probe = ros.probe()
    states = probe.create_publisher(JointState, "joint_states", STATE_QOS)
    gate = probe.create_publisher(Bool, "identifier/gate_open", LATCHED_QOS)
    gate.publish(Bool(data=True))
    monitor = ros.add(MonitorNode, port=0, discovery_period=0.1)
    assert monitor.url.startswith("ws://127.0.0.1:")
    msg = JointState(name=["a", "b"], position=[0.25, -1.5], effort=[3.0, 4.0])
    msg.header.stamp.sec = 7
    got: dict[str, list[bytes]] = {}
    with FoxgloveClient(monitor.url) as client:
        topics = ["/joint_states", "/identifier/gate_open"]
        assert ros.spin_until(lambda: set(topics) <= set(client.by_topic()), 20.0, each=lambda: client.receive(0.01))
        assert client.server_info["capabilities"] == []
        client.subscribe(topics)
        assert ros.spin_until(
            lambda: got.get("/joint_states") and got.get("/identifier/gate_open"),
            20.0,
            each=lambda: (states.publish(msg), _poll(client, got)),
        )
    # rclpy's serialize_message leaves padding and trailing bytes uninitialised: compare messages
    assert deserialize_message(got["/joint_states"][0], JointState) == msg
    assert deserialize_message(got["/identifier/gate_open"][0], Bool) == Bool(data=True)


@pytest.mark.parametrize(
    ("offered", "agreed"),
    [
        (["foxglove.sdk.v1"], "foxglove.sdk.v1"),  # Foxglove since the SDK, Lichtblick after 1.21
        (["foxglove.websocket.v1"], "foxglove.websocket.v1"),  # Lichtblick up to 1.21, @foxglove/ws-protocol
        (["foxglove.websocket.v1", "foxglove.sdk.v1"], "foxglove.sdk.v1"),
    ],
)
def test_clients_of_either_subprotocol_name_connect(ros, offered: list[str], agreed: str) -> None:
    """A plain WebSocket client offering ``offered`` completes the handshake with ``agreed`` and
    receives serverInfo and the advertise of /robot_description."""
    import json

    from websockets.sync.client import connect

    from motor_ident.ros.monitor.monitor_node import MonitorNode

    monitor = ros.add(MonitorNode, port=0, robot="valkyrie_arm", topics=["/none"])
    ops: list[str] = []
    advertised: list[str] = []
    with connect(monitor.url, subprotocols=offered, open_timeout=20.0) as ws:  # type: ignore[arg-type]
        assert ws.subprotocol == agreed
        while "advertise" not in ops:
            frame = json.loads(ws.recv(timeout=20.0))
            ops.append(frame["op"])
            advertised += [channel["topic"] for channel in frame.get("channels", [])]
    assert ops[0] == "serverInfo" and "/robot_description" in advertised
    assert monitor.proxy.renamed == (agreed == "foxglove.websocket.v1")


def test_aborted_and_garbage_connections_leave_the_monitor_serving(ros) -> None:
    """Clients that hang up before, during or instead of a handshake (or reset the connection)
    leave no socket held, an over-long request head gets HTTP 431, and a client connects after."""
    import os
    import socket
    import struct
    import time

    from websockets.sync.client import connect

    from motor_ident.ros.monitor.monitor_node import MonitorNode

    monitor = ros.add(MonitorNode, port=0, topics=["/none"])
    address = ("127.0.0.1", monitor.port)
    for opening in (b"", b"GET / HTTP/1.1\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n", os.urandom(5000)):
        for reset in (False, True):
            with socket.create_connection(address) as sock:
                if reset:  # close with RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.sendall(opening)
    with socket.create_connection(address, timeout=20.0) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nX: " + b"a" * 20000)
        assert sock.recv(64).startswith(b"HTTP/1.1 431")
    deadline = time.monotonic() + 20.0
    while monitor.proxy.open_connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert monitor.proxy.open_connections == 0
    with connect(monitor.url, subprotocols=["foxglove.websocket.v1"], open_timeout=20.0) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "foxglove.websocket.v1"


def test_other_subprotocols_are_refused(ros) -> None:
    """A client offering neither Foxglove name gets HTTP 400, as from the SDK's own server."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from motor_ident.ros.monitor.monitor_node import MonitorNode

    monitor = ros.add(MonitorNode, port=0, topics=["/none"])
    with pytest.raises(InvalidStatus, match="400"):
        connect(monitor.url, subprotocols=["foxglove.websocket.v2"], open_timeout=20.0)  # type: ignore[list-item]


def test_client_publishing_refused_by_default_and_forwarded_when_enabled(ros) -> None:
    """A client's advertise gets an error status and no DDS publisher by default; with
    allow_client_publish its CDR message comes out on DDS unchanged."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.monitor.foxglove_client import FoxgloveClient
    from motor_ident.ros.monitor.monitor_node import MonitorNode

    probe = ros.probe()
    received: list[Float64MultiArray] = []
    probe.create_subscription(Float64MultiArray, "from_client", received.append, 10)
    closed = ros.add(MonitorNode, port=0)
    with FoxgloveClient(closed.url) as client:
        channel = client.advertise("/from_client", "std_msgs/msg/Float64MultiArray")
        assert ros.spin_until(lambda: client.statuses, 10.0, each=lambda: client.receive(0.01))
        client.publish(channel, serialize_message(Float64MultiArray(data=[1.0])))
        ros.spin_until(lambda: False, 0.5, each=lambda: client.receive(0.01))  # a bounded look: nothing may come
    assert "clientPublish" in client.statuses[0]["message"]
    assert closed.client_publishers == {} and closed.from_clients == 0 and received == []

    ros.destroy(closed)
    open_ = ros.add(MonitorNode, port=0, allow_client_publish=True)
    payload = Float64MultiArray(data=[1.5, -2.0])
    with FoxgloveClient(open_.url) as client:
        assert ros.spin_until(lambda: client.server_info, 10.0, each=lambda: client.receive(0.01))
        assert client.server_info["capabilities"] == ["clientPublish"]
        channel = client.advertise("/from_client", "std_msgs/msg/Float64MultiArray")
        assert ros.spin_until(
            lambda: received,
            20.0,
            each=lambda: (client.publish(channel, serialize_message(payload)), client.receive(0.01)),
        )
    assert list(received[0].data) == [1.5, -2.0]


def test_parameters_refused_by_default_and_set_when_enabled(ros) -> None:
    """A default monitor answers a client's setParameters with an error and the node's value stays;
    with allow_parameters the client reads the node's parameter and sets it."""
    from motor_ident.ros.monitor.foxglove_client import FoxgloveClient
    from motor_ident.ros.monitor.monitor_node import MonitorNode

    probe = ros.probe("tuned")
    probe.declare_parameter("gain", 1.0)
    closed = ros.add(MonitorNode, port=0)
    with FoxgloveClient(closed.url) as client:
        client.set_parameters({"/tuned.gain": 2.5}, "set")
        assert ros.spin_until(lambda: client.statuses, 10.0, each=lambda: client.receive(0.01))
        ros.spin_until(lambda: False, 0.5, each=lambda: client.receive(0.01))  # a bounded look: nothing may change
    assert "parameters" in client.statuses[0]["message"].lower() and client.parameter_values == {}
    assert probe.get_parameter("gain").value == 1.0

    ros.destroy(closed)
    open_ = ros.add(MonitorNode, port=0, allow_parameters=True)
    with FoxgloveClient(open_.url) as client:
        assert ros.spin_until(lambda: client.server_info, 10.0, each=lambda: client.receive(0.01))
        assert sorted(client.server_info["capabilities"]) == ["parameters", "parametersSubscribe"]
        client.get_parameters(["/tuned.gain"], "get")
        assert ros.spin_until(lambda: "get" in client.parameter_values, 20.0, each=lambda: client.receive(0.01))
        assert client.parameter_values["get"] == [{"name": "/tuned.gain", "value": 1.0, "type": "float64"}]
        client.set_parameters({"/tuned.gain": 2}, "set")  # a whole number: still a double for the node
        assert ros.spin_until(lambda: "set" in client.parameter_values, 20.0, each=lambda: client.receive(0.01))
    assert probe.get_parameter("gain").value == 2.0
    assert client.parameter_values["set"][0]["value"] == 2.0


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path) -> None:
    """``motor-ident monitor --port P`` with P taken: one line naming the address and what to do,
    exit code 2 (the half-built node's ``destroy_node`` used to end it in an AttributeError
    traceback, exit code 1)."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(Path(sys.executable).parent / "motor-ident"), "monitor", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "RCUTILS_COLORIZED_OUTPUT": "0"},
            check=False,
        )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and f"cannot serve on 127.0.0.1:{port}" in lines[0] and "another port" in lines[0], lines
