"""A minimal client of Foxglove's WebSocket protocol (``foxglove.sdk.v1``), to check and time the monitor.

What the Foxglove app does on connecting, reduced to what the tests and ``motor-ident bench``
need: read ``serverInfo`` and the ``advertise``\\ d channels, subscribe to some, and take the
binary message frames apart (opcode 1, subscription id, receive time, payload). Optionally
advertise a channel and publish on it (the server must offer ``clientPublish``), and get and
set parameters (``parameters``). Decoding the
payload is the caller's (rclpy's ``deserialize_message`` for ``cdr``).
"""

from __future__ import annotations

import json
import struct
import time
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from motor_ident.errors import MotorIdentError

SUBPROTOCOL = "foxglove.sdk.v1"
MESSAGE_DATA = 0x01  # server binary opcode: subscription id (uint32), receive time (uint64 ns), payload
CLIENT_MESSAGE_DATA = 0x01  # client binary opcode: client channel id (uint32), payload


class FoxgloveClientError(MotorIdentError):
    """The server did not answer as the protocol says, or not in time."""


class ServerClosedError(FoxgloveClientError):
    """The server closed the connection (it stopped)."""


@dataclass(frozen=True)
class Channel:
    """An advertised channel: id, topic, message encoding, schema name, schema encoding and text."""

    id: int
    topic: str
    encoding: str
    schema_name: str
    schema_encoding: str
    schema: str


@dataclass(frozen=True)
class Message:
    """A message the server sent: its topic, receive time [ns] and payload (as served)."""

    topic: str
    log_time_ns: int
    data: bytes
    received_ns: int  # this client's wall clock when the frame arrived [ns since the epoch]


class FoxgloveClient:
    """Connects to ``url`` (retrying for up to ``timeout`` seconds while the server starts).

    Raises:
        FoxgloveClientError: no server answered within ``timeout``.
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                opened = connect(url, subprotocols=[SUBPROTOCOL], open_timeout=2.0)  # type: ignore[list-item]
                self.ws: ClientConnection = opened.__enter__()  # websockets wants its context entered
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise FoxgloveClientError(f"{url}: no Foxglove server answered in {timeout:g} s: {exc}") from None
                time.sleep(0.1)
        self.server_info: dict[str, Any] = {}
        self.channels: dict[int, Channel] = {}
        self.statuses: list[dict[str, Any]] = []
        self.parameter_values: dict[str, list[dict[str, Any]]] = {}  # request id -> parameters answered
        self._subscriptions: dict[int, int] = {}  # subscription id -> channel id
        self._next_id = 1

    def close(self) -> None:
        """Close the connection."""
        self.ws.close()

    def __enter__(self) -> FoxgloveClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def by_topic(self) -> dict[str, Channel]:
        """The advertised channels by topic."""
        return {c.topic: c for c in self.channels.values()}

    def receive(self, timeout: float) -> Message | None:
        """Read one frame (waiting at most ``timeout`` s): a message on a subscribed channel, or
        None for a control message (which updates `server_info`, `channels`, `statuses`) or none."""
        try:
            frame = self.ws.recv(timeout=timeout)
        except TimeoutError:
            return None
        except ConnectionClosed as exc:
            raise ServerClosedError(f"the server closed the connection: {exc}") from None
        now = time.time_ns()
        if isinstance(frame, str):
            self._control(json.loads(frame))
            return None
        if frame[0] != MESSAGE_DATA:
            return None
        subscription, log_time = struct.unpack_from("<IQ", frame, 1)
        channel = self.channels.get(self._subscriptions.get(subscription, -1))
        return None if channel is None else Message(channel.topic, log_time, bytes(frame[13:]), now)

    def _control(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "serverInfo":
            self.server_info = message
        elif op == "advertise":
            for c in message["channels"]:
                self.channels[c["id"]] = Channel(
                    c["id"], c["topic"], c["encoding"], c["schemaName"], c.get("schemaEncoding", ""), c["schema"]
                )
        elif op == "unadvertise":
            for channel_id in message["channelIds"]:
                self.channels.pop(channel_id, None)
        elif op == "status":
            self.statuses.append(message)
        elif op == "parameterValues":
            self.parameter_values[message.get("id", "")] = message["parameters"]

    def wait_for(self, topics: list[str], timeout: float) -> dict[str, Channel]:
        """Read control messages until every topic is advertised; the advertised channels by topic.

        Raises:
            FoxgloveClientError: some were not advertised within ``timeout`` (naming them).
        """
        deadline = time.monotonic() + timeout
        while not set(topics) <= set(self.by_topic()):
            if time.monotonic() > deadline:
                missing = sorted(set(topics) - set(self.by_topic()))
                raise FoxgloveClientError(f"not advertised within {timeout:g} s: {missing}")
            self.receive(0.1)
        return self.by_topic()

    def subscribe(self, topics: list[str]) -> None:
        """Subscribe to these advertised topics."""
        channels = self.by_topic()
        subscriptions = []
        for topic in topics:
            subscription = self._next_id
            self._next_id += 1
            self._subscriptions[subscription] = channels[topic].id
            subscriptions.append({"id": subscription, "channelId": channels[topic].id})
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))

    def advertise(self, topic: str, schema_name: str, encoding: str = "cdr") -> int:
        """Advertise a client channel (to publish on ``topic``); its id."""
        channel = self._next_id
        self._next_id += 1
        message = {"id": channel, "topic": topic, "encoding": encoding, "schemaName": schema_name}
        self.ws.send(json.dumps({"op": "advertise", "channels": [message]}))
        return channel

    def get_parameters(self, names: list[str], request_id: str) -> None:
        """Ask for parameters (``/node.name``; all with an empty list); the answer lands in
        `parameter_values` under ``request_id`` (the server must offer ``parameters``)."""
        self.ws.send(json.dumps({"op": "getParameters", "parameterNames": names, "id": request_id}))

    def set_parameters(self, values: dict[str, Any], request_id: str) -> None:
        """Set parameters; their values afterwards land in `parameter_values` under ``request_id``."""
        parameters = [{"name": name, "value": value} for name, value in values.items()]
        self.ws.send(json.dumps({"op": "setParameters", "parameters": parameters, "id": request_id}))

    def publish(self, channel: int, data: bytes) -> None:
        """Send a message on an advertised client channel."""
        self.ws.send(struct.pack("<BI", CLIENT_MESSAGE_DATA, channel) + data)
