"""``motor-ident play``: publish a rosbag2's messages with their original timing, and /clock.

The messages go out as recorded (CDR bytes straight from the bag, no conversion), each at
``(t - t_first) / rate`` after the start, and ``/clock`` follows the bag's receive time, so nodes
with ``use_sim_time`` run on the recording's time exactly as they would on the robot. With
``loop`` the bag starts again at its end: time goes backwards, and the identifier empties its
buffers (its joint_states stamps decrease) and identifies again.

On a ROS 2 installation ``ros2 bag play BAG --clock [--rate X] [--loop]`` does the same job; this
player exists for machines with only the rclpy wheels (no rosbag2). Each topic is offered with
the QoS its recorded publishers offered (`replay_qos`, from the bag's ``offered_qos_profiles``):
a topic recorded latched (TRANSIENT_LOCAL, e.g. ``/identifier/gate_open``) is replayed latched,
so a late-joining latched subscriber such as the monitor still gets its last message (a volatile
publisher would be incompatible with it and deliver nothing). Publishers are RELIABLE with a deep
queue otherwise: a reliable publisher matches reliable and best-effort subscriptions alike.
Types whose Python message package is not importable are skipped with one warning each.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Qos, QosDurability
from rosgraph_msgs.msg import Clock

from motor_ident.errors import ConfigError
from motor_ident.io.bags.qos import recorded_qos
from motor_ident.io.bags.read import RawMessage, raw_messages
from motor_ident.ros.wire.conversions import seconds_to_stamp

REPLAY_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def replay_qos(offered: list[Qos]) -> QoSProfile:
    """The profile to replay a topic recorded with publishers offering ``offered`` (`REPLAY_QOS` if none).

    Latched (TRANSIENT_LOCAL, as deep as the deepest latched publisher) when any recorded publisher
    was: a latched publisher matches volatile subscriptions too, a volatile one no latched subscription.
    """
    latched = [q.depth for q in offered if q.durability == QosDurability.TRANSIENT_LOCAL]
    if not latched:
        return REPLAY_QOS
    return QoSProfile(
        depth=max(1, *latched), reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
    )


def message_class(msgtype: str) -> Any | None:
    """The rclpy message class of ``pkg/msg/Name`` (None when the package is not installed)."""
    package, _, name = msgtype.partition("/msg/")
    try:  # dynamic on purpose: a bag may hold any message type, known only by its recorded name
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except (ImportError, AttributeError):
        return None


class BagPlayer(Node):
    """Publishes a bag's messages on their topics at their recorded times (scaled by ``rate``).

    Args:
        path: the bag (directory, .mcap or .db3).
        rate: playback speed factor (> 0); 2.0 plays twice as fast.
        loop: start again at the end (time goes backwards); ``loops`` bounds the passes (None: forever).
        topics: only these topics (all when None).
        publish_clock: publish /clock with the bag time of the latest message.
        period: wall period of the publishing timer [s].
        wait_for_subscribers: hold the start until every replayed topic has a subscriber, for
            at most this many wall seconds (messages sent before DDS matched would be lost).

    Raises:
        ConfigError: a bad rate; BagError: the bag cannot be read.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        rate: float = 1.0,
        loop: bool = False,
        loops: int | None = None,
        topics: Sequence[str] | None = None,
        publish_clock: bool = True,
        period: float = 0.001,
        wait_for_subscribers: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__("bag_player", **kwargs)
        if not rate > 0.0:
            raise ConfigError(f"rate = {rate!r}: expected > 0")
        if loops is not None and loops < 1:
            raise ConfigError(f"loops = {loops!r}: expected >= 1")
        self.rate = float(rate)
        self.max_passes: int | None = (loops if loops is not None else None) if loop else 1
        messages, notes = raw_messages(path, topics=topics)
        offered = recorded_qos(path) if messages else {}
        for note in notes:
            self.get_logger().warning(note)
        self.publishers_by_topic: dict[str, Any] = {}
        self.messages: list[RawMessage] = []
        for msg in messages:
            if msg.topic not in self.publishers_by_topic:
                cls = message_class(msg.msgtype)
                if cls is None:
                    self.get_logger().warning(f"{msg.topic}: type {msg.msgtype} is not installed here: skipped")
                self.publishers_by_topic[msg.topic] = cls and self.create_publisher(
                    cls, msg.topic, replay_qos(offered.get(msg.topic, []))
                )
            if self.publishers_by_topic[msg.topic] is not None:
                self.messages.append(msg)
        if not self.messages:
            raise ConfigError(f"bag {path}: none of its message types can be published here")
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if publish_clock else None
        self.first_ns = self.messages[0].time_ns
        self.duration = (self.messages[-1].time_ns - self.first_ns) * 1e-9
        self.passes = 0
        self.published = 0
        self._next = 0
        self._created = time.monotonic()
        self._start: float | None = None
        self.wait_for_subscribers = float(wait_for_subscribers)
        self.timer = self.create_timer(period, self._on_timer)
        self.get_logger().info(
            f"playing {len(self.messages)} messages on {len(self.publishers_by_topic)} topics "
            f"({self.duration:.2f} s) at rate {self.rate:g}{', looping' if loop else ''}"
        )

    @property
    def finished(self) -> bool:
        """True once the last pass has published its last message."""
        return self.max_passes is not None and self.passes >= self.max_passes

    def _on_timer(self) -> None:
        if self.finished:
            return
        if self._start is None:
            waiting = time.monotonic() - self._created < self.wait_for_subscribers
            if waiting and any(p.get_subscription_count() == 0 for p in self.publishers_by_topic.values() if p):
                return
            self._start = time.monotonic()
        due_ns = self.first_ns + int((time.monotonic() - self._start) * self.rate * 1e9)
        latest = None
        while self._next < len(self.messages) and self.messages[self._next].time_ns <= due_ns:
            msg = self.messages[self._next]
            if self.clock_pub is not None and msg.time_ns != latest:
                latest = msg.time_ns
                self.clock_pub.publish(Clock(clock=seconds_to_stamp(latest * 1e-9)))
            self.publishers_by_topic[msg.topic].publish(msg.data)
            self.published += 1
            self._next += 1
        if self._next >= len(self.messages):
            self.passes += 1
            self._next = 0
            self._start = time.monotonic()


def play(
    path: str | Path,
    *,
    rate: float = 1.0,
    loop: bool = False,
    topics: Sequence[str] | None = None,
    publish_clock: bool = True,
    wait_for_subscribers: float = 0.0,
) -> int:
    """Play a bag in this process until it ends (or Ctrl-C when looping); returns messages published."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.experimental import EventsExecutor

    from motor_ident.ros.runtime.runner import default_dds_environment

    default_dds_environment()
    context = rclpy.Context()
    rclpy.init(context=context)
    player = None
    executor = None
    try:
        player = BagPlayer(
            path,
            rate=rate,
            loop=loop,
            topics=topics,
            publish_clock=publish_clock,
            wait_for_subscribers=wait_for_subscribers,
            context=context,
        )
        executor = EventsExecutor(context=context)
        executor.add_node(player)
        while not player.finished:
            executor.spin_once(timeout_sec=0.1)
        time.sleep(0.2)  # let reliable publishers deliver the tail
        return player.published
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0 if player is None else player.published
    finally:
        if executor is not None:
            executor.shutdown()
        if player is not None:
            player.destroy_node()
        rclpy.shutdown(context=context)
