"""monitor: a run's topics served live to Foxglove over its WebSocket protocol, without a ROS install.

Each served topic is subscribed raw (``raw=True``: rclpy hands over the CDR bytes, nothing is
deserialized) and logged unchanged on a Foxglove channel of encoding ``cdr`` whose schema is the
type's ``ros2msg`` definition from the installed message packages
(`motor_ident.ros.wire.msg_definitions`), the way foxglove_bridge serves a ROS 2 graph. The server is
the ``foxglove-sdk`` package's (``pip install motor_ident[monitor]``), on a free port of
127.0.0.1 behind `motor_ident.ros.monitor.monitor_handshake.HandshakeProxy`, which listens where the
settings say and lets clients speak either subprotocol name, ``foxglove.sdk.v1`` or
``foxglove.websocket.v1``.

- Topics: `MonitorSettings.topics` (or every topic of the graph), looked for every
  ``discovery_period``, so nodes may start after the monitor; each is advertised to clients at
  once and subscribed on DDS only while a client watches it (as foxglove_bridge does: a monitor
  nobody watches costs little). A topic whose publishers are all latched (TRANSIENT_LOCAL, e.g.
  ``~/gate_open``) is subscribed latched and its last message is sent again to each client that
  subscribes; others best effort (which matches reliable and best-effort publishers alike),
  depth 10. The subscriptions are made and dropped on the executor's thread, never the server's.
- ``robot``: the robot config's URDF on ``/robot_description`` (std_msgs/String, sent to each
  subscribing client), for Foxglove's 3D panel, which poses it from ``/joint_states``.
- Safety: the server binds ``host`` (default 127.0.0.1, this machine only) and says where it
  listens; it offers no capability to clients unless ``allow_client_publish`` (then clients may
  publish CDR messages of installed types on DDS) or ``allow_parameters`` (then clients may read
  and set the nodes' parameters through their parameter services,
  `motor_ident.ros.monitor.monitor_parameters`). Services are never offered.
- Timestamps: each message is logged with the wall-clock receive time [ns since the epoch].
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import foxglove
from foxglove.websocket import Capability, ChannelView, Client, ClientChannel, ServerListener
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from motor_ident.errors import ConfigError
from motor_ident.ros.monitor.monitor_handshake import HandshakeProxy
from motor_ident.ros.monitor.monitor_parameters import ParameterBridge
from motor_ident.ros.recording.bag_player import message_class
from motor_ident.ros.runtime.common import LATCHED_QOS, load_robot, run_node
from motor_ident.ros.runtime.parameters import declare_settings
from motor_ident.ros.wire.msg_definitions import MessageDefinitionError, ros2msg_schema
from motor_ident.scenario.monitor import MonitorSettings

SERVED_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
WATCH_PERIOD = 0.02  # [s] how often clients' (un)subscriptions are applied to DDS
STRING = "std_msgs/msg/String"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def channel_schema(msgtype: str) -> foxglove.Schema:
    """The Foxglove schema of a ROS 2 type: its name and ``ros2msg`` text (MessageDefinitionError if not installed)."""
    return foxglove.Schema(name=msgtype, encoding="ros2msg", data=ros2msg_schema(msgtype).encode())


@dataclass
class _Served:
    """One served topic: its channel, how to subscribe to it on DDS (None: the monitor's own), the
    DDS subscription while clients watch, how many do, and a latched topic's last message."""

    channel: foxglove.Channel
    subscribe: Callable[[], Any] | None
    latched: bool
    subscription: Any = None
    clients: int = 0
    last: bytes | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class MonitorNode(Node):
    """Serves the run's topics on a Foxglove WebSocket server (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("monitor", **kwargs)  # type: ignore[arg-type]
        self.settings = settings = declare_settings(self, MonitorSettings)
        self.fox = foxglove.Context()
        self.served: dict[str, _Served] = {}
        self.watch_requests: queue.Queue[tuple[str, int]] = queue.Queue()  # (topic, +1 / -1) from the server
        self.skipped: dict[str, str] = {}  # topic -> why it is not served (logged once)
        self.client_publishers: dict[tuple[int, int], Any] = {}
        self.forwarded = 0  # messages logged on channels (DDS -> Foxglove)
        self.from_clients = 0  # messages clients published on DDS
        capabilities = [Capability.ClientPublish] if settings.allow_client_publish else []
        capabilities += [Capability.Parameters] if settings.allow_parameters else []
        self.parameters = ParameterBridge(self) if settings.allow_parameters else None
        cannot_serve = (
            f"node monitor: cannot serve on {settings.host}:{settings.port}: {{}}; choose another port "
            "(parameter port, --port / --monitor-port; 0: any free port)"
        )
        try:  # the SDK's server on this machine only; clients reach it through the handshake proxy
            self.server = foxglove.start_server(
                name="motor_ident monitor",
                host="127.0.0.1",
                port=0,
                capabilities=capabilities,
                supported_encodings=["cdr"] if settings.allow_client_publish else None,
                server_listener=_Listener(self),
                context=self.fox,
            )
        except RuntimeError as exc:  # foxglove raises RuntimeError when it cannot bind
            raise ConfigError(cannot_serve.format(exc)) from None
        try:
            self.proxy = HandshakeProxy(host=settings.host, port=settings.port, upstream_port=int(self.server.port))
        except OSError as exc:
            self.server.stop()
            raise ConfigError(cannot_serve.format(exc)) from None
        self.port = self.proxy.port
        self.url = f"ws://{settings.host}:{self.port}"
        reach = (
            "this machine only; parameter host, e.g. --host 0.0.0.0 / --monitor-host 0.0.0.0, serves other machines"
            if settings.host in LOOPBACK
            else "REACHABLE FROM THE NETWORK: anyone who can connect sees the robot's data"
        )
        publish = "clients MAY publish on DDS topics" if settings.allow_client_publish else "clients cannot publish"
        parameters = "MAY set the nodes' parameters" if settings.allow_parameters else "cannot change parameters"
        self.get_logger().info(f"Foxglove WebSocket server on {self.url} ({reach}); {publish}, {parameters}")
        if settings.robot:
            self._serve_robot_description(settings.robot)
        self.create_timer(settings.discovery_period, self.discover)
        self.create_timer(WATCH_PERIOD, self.apply_watches)
        self.discover()

    # -- DDS -> Foxglove ---------------------------------------------------------------------------

    def wanted(self, topic: str) -> bool:
        """Whether ``topic`` (absolute) is one the settings ask for."""
        if self.settings.topics == ("",):
            return True
        return topic in {self.resolve_topic_name(t) for t in self.settings.topics}

    def discover(self) -> None:
        """Serve every wanted topic of the graph not served yet (one type per topic)."""
        for topic, types in self.get_topic_names_and_types():
            if topic in self.served or topic in self.skipped or not self.wanted(topic):
                continue
            if len(types) != 1:
                self._skip(topic, f"published with several types {types}")
                continue
            self._serve(topic, types[0])

    def _skip(self, topic: str, why: str) -> None:
        self.skipped[topic] = why
        self.get_logger().warning(f"{topic}: not served: {why}")

    def _serve(self, topic: str, msgtype: str) -> None:
        cls = message_class(msgtype)
        if cls is None:
            self._skip(topic, f"type {msgtype} is not installed here")
            return
        try:
            schema = channel_schema(msgtype)
        except MessageDefinitionError as exc:
            self._skip(topic, str(exc))
            return
        publishers = self.get_publishers_info_by_topic(topic)
        if not publishers:
            return  # only subscribers so far: its publishers' durability decides the QoS, next time
        latched = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers)
        channel = foxglove.Channel(topic, schema=schema, message_encoding="cdr", context=self.fox)

        def forward(data: bytes) -> None:
            if entry.latched:
                with entry.lock:
                    entry.last = data
            entry.channel.log(data, log_time=time.time_ns())
            self.forwarded += 1

        def subscribe() -> Any:
            return self.create_subscription(cls, topic, forward, LATCHED_QOS if latched else SERVED_QOS, raw=True)

        entry = _Served(channel=channel, subscribe=subscribe, latched=latched)
        self.served[topic] = entry

    def _serve_robot_description(self, robot: str) -> None:
        """Serve the robot config's URDF on /robot_description, sent to each subscribing client."""
        from rclpy.serialization import serialize_message
        from std_msgs.msg import String

        urdf = load_robot(robot).urdf.read_text()
        channel = foxglove.Channel(
            "/robot_description", schema=channel_schema(STRING), message_encoding="cdr", context=self.fox
        )
        entry = _Served(channel=channel, subscribe=None, latched=True, last=serialize_message(String(data=urdf)))
        self.served["/robot_description"] = entry

    def apply_watches(self) -> None:
        """Apply the clients' (un)subscriptions: a DDS subscription exists while a client watches
        its topic (a latched one then delivers its last message); a client joining a watched
        latched topic gets the last message again."""
        while not self.watch_requests.empty():
            topic, change = self.watch_requests.get_nowait()
            entry = self.served.get(topic)
            if entry is None:
                continue
            entry.clients = max(0, entry.clients + change)
            if entry.subscribe is None:
                if change > 0:
                    self.resend_latched(topic)
            elif change > 0 and entry.subscription is None:
                entry.subscription = entry.subscribe()
            elif change > 0:
                self.resend_latched(topic)
            elif entry.clients == 0 and entry.subscription is not None:
                self.destroy_subscription(entry.subscription)
                entry.subscription = None
                with entry.lock:
                    entry.last = None

    def resend_latched(self, topic: str) -> None:
        """Log a latched topic's last message again (a client just subscribed to it)."""
        entry = self.served.get(topic)
        if entry is None or not entry.latched:
            return
        with entry.lock:
            last = entry.last
        if last is not None:
            entry.channel.log(last, log_time=time.time_ns())

    # -- Foxglove -> DDS (only with allow_client_publish) ------------------------------------------

    def client_advertised(self, client: int, channel: ClientChannel) -> None:
        """A client advertised a channel: a DDS publisher of its type, if CDR and installed."""
        cls = message_class(channel.schema_name)
        if channel.encoding != "cdr" or cls is None:
            self.get_logger().warning(
                f"client {client}: {channel.topic} ({channel.encoding}, {channel.schema_name}) refused: "
                "only CDR messages of installed types are published"
            )
            return
        self.client_publishers[(client, channel.id)] = self.create_publisher(cls, channel.topic, 10)
        self.get_logger().info(f"client {client} publishes {channel.schema_name} on {channel.topic}")

    def client_message(self, client: int, channel_id: int, data: bytes) -> None:
        """A client's message: published unchanged on DDS when its channel was accepted."""
        publisher = self.client_publishers.get((client, channel_id))
        if publisher is not None:
            publisher.publish(data)
            self.from_clients += 1

    def client_unadvertised(self, client: int, channel_id: int) -> None:
        """A client withdrew a channel: its DDS publisher goes."""
        publisher = self.client_publishers.pop((client, channel_id), None)
        if publisher is not None:
            self.destroy_publisher(publisher)

    def destroy_node(self) -> None:
        """Stop the server (none when the constructor could not start it), then the node."""
        if "proxy" in vars(self):
            self.proxy.stop()
        if "server" in vars(self):
            self.server.stop()
        super().destroy_node()


class _Listener(ServerListener):
    """The server's callbacks (called on the server's thread), passed to the node."""

    def __init__(self, node: MonitorNode) -> None:
        self.node = node

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self.node.watch_requests.put((channel.topic, 1))

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self.node.watch_requests.put((channel.topic, -1))

    def on_client_advertise(self, client: Client, channel: ClientChannel) -> None:
        self.node.client_advertised(client.id, channel)

    def on_message_data(self, client: Client, client_channel_id: int, data: bytes) -> None:
        self.node.client_message(client.id, client_channel_id, data)

    def on_client_unadvertise(self, client: Client, client_channel_id: int) -> None:
        self.node.client_unadvertised(client.id, client_channel_id)

    def on_get_parameters(
        self, client: Client, param_names: list[str], request_id: str | None = None
    ) -> list[foxglove.Parameter]:
        bridge = self.node.parameters
        return [] if bridge is None else bridge.get(param_names)

    def on_set_parameters(
        self, client: Client, parameters: list[foxglove.Parameter], request_id: str | None = None
    ) -> list[foxglove.Parameter]:
        bridge = self.node.parameters
        return [] if bridge is None else bridge.set(parameters)


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident monitor``."""
    run_node(MonitorNode, args)


if __name__ == "__main__":
    main()
