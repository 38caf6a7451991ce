"""``motor-ident record --topics``: record live DDS topics into a rosbag2 MCAP, without rosbag2.

``ros2 bag record`` needs a ROS 2 installation; this recorder needs only the rclpy wheels. It
finds each topic's type in the ROS graph (``get_topic_names_and_types``) and its publishers' QoS
(``get_publishers_info_by_topic``), subscribes with ``raw=True`` and writes every message's CDR
bytes unchanged, so header stamps are kept as sent; the receive time (this process's wall clock
when the message is taken, ns since the epoch) is the log time, as rosbag2 records it. Messages
go to the MCAP file as they arrive, in chunks of 1 MiB (rosbags' writer), so memory stays bounded
however long the recording runs. The bag is written beside ``--out`` and renamed when it closes
(`motor_ident.io.bags.write.BagWriter`): SIGINT, SIGTERM or SIGHUP ends the recording between two
messages and leaves a complete bag.

The subscription asks for what the publishers offer: RELIABLE when every publisher is reliable,
else BEST_EFFORT (which matches both); TRANSIENT_LOCAL when every publisher is latched, so the
latched message sent before the recorder started is recorded too. Topics that do not exist yet
are waited for (``wait``), then recorded as soon as they appear while the recording runs.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from motor_ident.errors import ConfigError
from motor_ident.io.bags.qos import INFINITE
from motor_ident.io.bags.series import BagError
from motor_ident.io.bags.write import BagWriter
from motor_ident.ros.recording.bag_player import message_class
from motor_ident.ros.runtime.runner import default_dds_environment

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NS_PER_S = 1_000_000_000


def _duration(value: Any) -> QosTime:
    """An rclpy Duration as rosbag2's ``{sec, nsec}``; rmw's default (0) and infinite both mean no
    limit, written as ``ros2 bag record`` writes infinite (`motor_ident.io.bags.qos.INFINITE`)."""
    ns = int(value.nanoseconds)
    if ns <= 0 or ns >= 0x7FFFFFFFFFFFFFFF:
        return INFINITE
    return QosTime(sec=ns // _NS_PER_S, nsec=ns % _NS_PER_S)


def bag_qos(profile: QoSProfile) -> Qos:
    """A publisher's rclpy QoS profile as rosbag2 stores it in ``offered_qos_profiles``."""

    def member(enum: Any, policy: Any) -> Any:
        return enum.__members__.get(policy.name.upper(), enum.UNKNOWN)

    return Qos(
        history=member(QosHistory, profile.history),
        depth=int(profile.depth),
        reliability=member(QosReliability, profile.reliability),
        durability=member(QosDurability, profile.durability),
        deadline=_duration(profile.deadline),
        lifespan=_duration(profile.lifespan),
        liveliness=member(QosLiveliness, profile.liveliness),
        liveliness_lease_duration=_duration(profile.liveliness_lease_duration),
        avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions),
    )


def subscription_qos(offered: Sequence[Qos]) -> QoSProfile:
    """The profile that receives from every publisher offering ``offered`` (latched when all are)."""
    reliable = bool(offered) and all(q.reliability == QosReliability.RELIABLE for q in offered)
    latched = bool(offered) and all(q.durability == QosDurability.TRANSIENT_LOCAL for q in offered)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=max([1000, *(q.depth for q in offered)]),  # a deep queue rides out a slow disk write
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


@dataclass
class TopicCount:
    """One recorded topic: its type, the QoS its publishers offered, the messages written."""

    msgtype: str
    offered: list[Qos]
    messages: int = 0


@dataclass
class LiveRecording:
    """What `record_topics` wrote: the bag, per topic its count, the seconds recorded, why it stopped,
    the topics never published, those left out (and why), the recorder's CPU time [s]."""

    path: Path
    topics: dict[str, TopicCount]
    seconds: float
    stopped_by: str
    missing: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    cpu_seconds: float = 0.0

    @property
    def messages(self) -> int:
        """Messages written over every topic."""
        return sum(t.messages for t in self.topics.values())


class TopicRecorder(Node):
    """Subscribes raw to ``topics`` as they appear in the graph and writes each message to ``bag``.

    Args:
        bag: an open `BagWriter`.
        topics: the topic names to record (absolute, or relative to the root namespace).
    """

    def __init__(self, bag: BagWriter, topics: Sequence[str], **kwargs: Any) -> None:
        super().__init__("motor_ident_topic_recorder", **kwargs)
        self.bag = bag
        self.wanted = ["/" + t.lstrip("/") for t in topics]
        self.recorded: dict[str, TopicCount] = {}
        self.refused: dict[str, str] = {}
        self._raw_subscriptions: list[Any] = []

    @property
    def missing(self) -> list[str]:
        """The topics asked for that are not recorded (yet)."""
        return [t for t in self.wanted if t not in self.recorded]

    def discover(self) -> None:
        """Subscribe to each wanted topic that now has a publisher with a known type."""
        types = dict(self.get_topic_names_and_types())
        for topic in self.missing:
            if topic in self.refused or not types.get(topic):
                continue
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue
            msgtype = types[topic][0]
            cls = message_class(msgtype)
            if len(types[topic]) > 1 or cls is None:
                self.refused[topic] = (
                    f"{topic} has several types {types[topic]}"
                    if len(types[topic]) > 1
                    else f"{topic}: type {msgtype} is not installed here"
                )
                continue
            offered = [bag_qos(p.qos_profile) for p in publishers]
            try:
                self.bag.add_topic(topic, msgtype, offered)
            except BagError as exc:
                self.refused[topic] = str(exc)
                continue
            count = TopicCount(msgtype, offered)
            self.recorded[topic] = count
            self._raw_subscriptions.append(
                self.create_subscription(cls, topic, self._writer_of(topic, count), subscription_qos(offered), raw=True)
            )

    def _writer_of(self, topic: str, count: TopicCount) -> Callable[[bytes], None]:
        write = self.bag.raw

        def on_message(data: bytes) -> None:
            write(topic, time.time_ns(), data)
            count.messages += 1

        return on_message


def record_topics(
    topics: Sequence[str],
    out: str | Path,
    *,
    duration: float | None = None,
    wait: float = 5.0,
    storage: str = "mcap",
    on_start: Callable[[list[str]], None] | None = None,
) -> LiveRecording:
    """Record live ``topics`` into the bag ``out`` until ``duration`` seconds pass or a stop signal.

    Args:
        topics: topic names; each is subscribed once the graph shows a publisher for it.
        out: the bag directory to create (must not exist).
        duration: wall seconds to record from the first subscription (None: until a signal).
        wait: wall seconds to wait for at least one topic before giving up.
        storage: ``mcap`` (default) or ``sqlite3``.
        on_start: called once with the topics recorded when the recording starts.

    Raises:
        ConfigError: no topic given, a bad duration, or none of the topics appeared within ``wait``
            seconds (nothing is written then).
        BagError: ``out`` exists already.
    """
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.signals import SignalHandlerOptions

    if not topics:
        raise ConfigError("--topics: give at least one topic to record")
    if duration is not None and not duration > 0.0:
        raise ConfigError(f"--duration = {duration!r}: expected > 0 seconds")
    writer = BagWriter(out, storage=storage)  # refuses an existing path before anything starts
    stop: list[str] = []
    in_main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS} if in_main else {}
    for signum in previous:  # a signal only sets a flag: a message is never half written
        signal.signal(signum, lambda n, _f: stop.append(signal.Signals(n).name))
    default_dds_environment()
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    cpu0 = time.process_time()
    recorder: TopicRecorder | None = None
    executor = None
    started: float | None = None
    stopped_by = "duration"
    try:
        with writer as bag:
            recorder = TopicRecorder(bag, topics, context=context)
            executor = EventsExecutor(context=context)
            executor.add_node(recorder)
            created = time.monotonic()
            next_look = created
            while not stop:
                now = time.monotonic()
                if now >= next_look and recorder.missing:
                    recorder.discover()
                    next_look = now + 0.2
                if started is None and recorder.recorded:
                    started = now
                    if on_start is not None:
                        on_start(list(recorder.recorded))
                if started is None and now - created > wait:
                    stopped_by = "nothing to record"
                    break
                if started is not None and duration is not None and now - started >= duration:
                    break
                executor.spin_once(timeout_sec=0.05)
            if stop:
                stopped_by = stop[0]
            if started is None:
                raise ConfigError(
                    f"none of the topics {list(recorder.wanted)} has a publisher after {wait:g} s"
                    + "".join(f"; {why}" for why in recorder.refused.values())
                )
        seconds = 0.0 if started is None else time.monotonic() - started
        return LiveRecording(
            Path(out),
            dict(recorder.recorded),
            seconds,
            stopped_by,
            [topic for topic in recorder.missing if topic not in recorder.refused],
            dict(recorder.refused),
            time.process_time() - cpu0,
        )
    finally:
        if executor is not None:
            executor.shutdown()
        if recorder is not None:
            recorder.destroy_node()
        rclpy.try_shutdown(context=context)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
