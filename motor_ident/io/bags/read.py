"""rosbag2 recordings (MCAP and sqlite3) without ROS, through the `rosbags` library.

Reading: `read_bag` collects the standard topics of a robot run into arrays —

| topic (default)                 | type                          | becomes                         |
|---------------------------------|-------------------------------|---------------------------------|
| ``/joint_states``               | sensor_msgs/msg/JointState    | `BagData.joint_states`          |
| ``/motor_states``               | sensor_msgs/msg/JointState    | `BagData.motor_states`          |
| ``/ft_sensor/wrench``           | geometry_msgs/msg/WrenchStamped | `BagData.wrench`              |
| ``/effort_controller/commands`` | std_msgs/msg/Float64MultiArray | `BagData.commands`             |

Joint arrays are matched by name in every message (any order; a message missing a joint, with a
short array or a non-finite value is dropped and counted), and time is the header stamp (the
bag's receive time for Float64MultiArray, which has no header, and for a message whose driver
left the stamp at zero). `align` puts every other topic on
the joint_states stamps: linear interpolation for measurements, zero-order hold for commands (a
forward command controller holds its last command). `BagData.joint_record` turns the joint
states into the `JointRecord` that ``motor-ident identify`` fits.

Damaged bags: an MCAP file cut short (robot powered off, disk full, ``ros2 bag record`` killed) has
no footer and no index, and rosbags refuses it. `read_bag` then scans the file record by record
and keeps every intact message up to the damage, with a warning in `BagData.warnings`; a sqlite3
file that fails mid-way keeps what was read before the failure. Only when nothing usable is left
does it raise `CorruptBagError`.

Writing: `BagWriter` writes the same topics (rosbag2 version 9, MCAP by default) into a temporary
directory beside the target and renames it at the end, so a half-written bag never appears under
the requested name.

Like rosbags itself, this module raises and never logs: warnings are returned to the caller.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np
from numpy.typing import NDArray
from rosbags.highlevel import AnyReaderError
from rosbags.rosbag2.errors import ReaderError
from rosbags.serde import SerdeError
from rosbags.typesys import TypesysError

from motor_ident.io.bags.joint_states import _JointStateCollector, _RawJointStates
from motor_ident.io.bags.series import (
    ArraySeries,
    BagData,
    BagError,
    BagTopics,
    CorruptBagError,
    EmptyBagError,
    MissingTopicError,
    UnsupportedTypeError,
    WrenchSeries,
)
from motor_ident.io.bags.storage import (
    BOOL,
    FLOAT64_ARRAY,
    JOINT_STATE,
    WRENCH_STAMPED,
    _estimated_messages,
    _Found,
    _match_topic,
    _resolve_storage,
    _rosbags_messages,
    _scan_mcap,
    _stamp,
    open_reader,
    stamps_or_receive_times,
)

FloatArray = NDArray[np.float64]
_READ_ERRORS = (
    AnyReaderError,
    ReaderError,
    SerdeError,
    TypesysError,
    sqlite3.DatabaseError,
    struct.error,
    OSError,
    UnicodeDecodeError,  # a metadata.yaml that is not text
    apsw.Error,  # rosbags reads sqlite3 bags through apsw
    OverflowError,  # a damaged record length: rosbags reads that many bytes
    MemoryError,
)
"""What rosbags and sqlite raise on a damaged bag."""


def read_bag(
    path: str | Path,
    *,
    joints: Sequence[str] | None = None,
    topics: BagTopics = BagTopics(),
    progress: Callable[[float], None] | None = None,
) -> BagData:
    """Read the standard topics of a rosbag2 recording into arrays.

    Args:
        path: bag directory (with metadata.yaml), or a single .mcap / .db3 file.
        joints: joint order of the joint states (the first message's order when None); messages
            lacking one of them are dropped and counted in the warnings.
        topics: topic names to look for.
        progress: called with the fraction of the recording read, from 0 to 1.

    Raises:
        BagError: the path is not a bag.
        MissingTopicError: no joint states topic (the message lists the bag's topics).
        UnsupportedTypeError: a wanted topic has another message type.
        EmptyBagError: no usable joint state.
        CorruptBagError: the bag is damaged and nothing usable could be recovered.
    """
    path = Path(path)
    target, storage, files, notes = _resolve_storage(path)
    collectors = {
        "joint_states": _JointStateCollector("joint_states", joints),
        "motor_states": _JointStateCollector("motor_states", None),
    }
    wrench: dict[str, list[Any]] = {"stamp": [], "t": [], "force": [], "torque": [], "frame": []}
    arrays: dict[str, tuple[list[float], list[FloatArray]]] = {"commands": ([], []), "gate": ([], []), "r2": ([], [])}
    expected = {
        topic: spec
        for topic, spec in (
            (topics.joint_states, ("joint_states", (JOINT_STATE,))),
            (topics.motor_states, ("motor_states", (JOINT_STATE,))),
            (topics.wrench, ("wrench", (WRENCH_STAMPED,))),
            (topics.commands, ("commands", (FLOAT64_ARRAY,))),
            (topics.gate, ("gate", (BOOL,))),
            (topics.r2, ("r2", (FLOAT64_ARRAY,))),
        )
        if topic
    }
    available_topics: dict[str, str] = {}
    resolved: dict[str, str] = {}
    raw_buffers: dict[str, _RawJointStates] = {}

    def received() -> int:
        buffer = raw_buffers.get("joint_states")
        return 0 if buffer is None else len(buffer.raws)

    def add_wrench(msg: Any, t: float) -> None:
        f, m = msg.wrench.force, msg.wrench.torque
        wrench["stamp"].append(_stamp(msg))
        wrench["t"].append(t)
        wrench["force"].append([f.x, f.y, f.z])
        wrench["torque"].append([m.x, m.y, m.z])
        wrench["frame"].append(msg.header.frame_id)

    def add_array(key: str) -> Callable[[Any, float], None]:
        def add(msg: Any, t: float) -> None:
            values = np.atleast_1d(np.asarray(msg.data, dtype=float))
            ts, rows = arrays[key]
            if (rows and values.shape != rows[0].shape) or (ts and t <= ts[-1]):
                return
            ts.append(t)
            rows.append(values)

        return add

    def found_for(available: dict[str, str]) -> list[_Found]:
        available_topics.update(available)
        out = []
        for wanted, (key, types) in expected.items():
            topic = _match_topic(wanted, available)
            if topic is None:
                continue
            msgtype = available[topic]
            if msgtype not in types:
                if key == "joint_states":
                    raise UnsupportedTypeError(
                        f"{path}: topic {topic} has type {msgtype}; expected {JOINT_STATE} "
                        "(pick the right topic with --joint-states-topic)"
                    )
                notes.append(f"topic {topic} has type {msgtype}, not {' or '.join(types)}: ignored")
                continue
            resolved[key] = topic
            if key in collectors:
                buffer = raw_buffers.setdefault(key, _RawJointStates(collectors[key]))
                out.append(_Found(topic, msgtype, buffer.add, raw=True))
            elif key == "wrench":
                out.append(_Found(topic, msgtype, add_wrench))
            else:
                out.append(_Found(topic, msgtype, add_array(key)))
        return out

    span: dict[str, int] = {}

    def consume(messages: Iterator[tuple[_Found, int, Any]]) -> None:
        count = 0
        for found, timestamp, msg in messages:
            found.add(msg, timestamp * 1e-9)
            count += 1
            if progress is not None and count % 2000 == 0:
                if span and span["end"] > span["start"]:
                    progress(min(0.99, (timestamp - span["start"]) / (span["end"] - span["start"])))
                else:
                    progress(min(0.99, count / _estimated_messages(files, count)))

    try:
        consume(_rosbags_messages(target, found_for, span))
    except _READ_ERRORS as error:
        exc = _one_line(error)
        had = received()
        if storage == "mcap" and not had:
            # rosbags needs the footer and index an interrupted recording never wrote: scan instead.
            notes.append(f"rosbags could not read {path} ({exc}); recovered by scanning the MCAP file")
            span.clear()
            try:
                for file in files:
                    consume(_scan_mcap(file, found_for, notes))
            except (SerdeError, TypesysError, struct.error, UnicodeDecodeError, IndexError) as scan_exc:
                notes.append(f"scan stopped: {_one_line(scan_exc)}")
        elif had:
            notes.append(f"{path} is damaged ({exc}): kept the {had} joint states read before the damage")
        else:
            hint = " (`sqlite3 FILE .recover` may rescue a damaged .db3)" if storage == "sqlite3" else ""
            raise CorruptBagError(f"{path} cannot be read: {exc}{hint}") from None
        if not received():
            details = "; ".join(notes)
            raise CorruptBagError(f"{path} is damaged and no joint state could be recovered: {details}") from None
    for buffer in raw_buffers.values():
        buffer.flush()
    if progress is not None:
        progress(1.0)

    if "joint_states" not in resolved:
        if not available_topics:
            raise EmptyBagError(f"{path} holds no topic at all (empty recording)")
        listing = ", ".join(f"{t} ({m})" for t, m in sorted(available_topics.items()))
        raise MissingTopicError(
            f"{path} has no {topics.joint_states} topic; it holds {listing}. "
            "Record joint_states, or name the topic with --joint-states-topic"
        )
    series = collectors["joint_states"].series()
    for key, collector in collectors.items():
        for reason, count in collector.dropped.items():
            notes.append(f"{resolved.get(key, key)}: {count} messages dropped ({reason})")
    if series is None:
        raise EmptyBagError(
            f"{path}: topic {resolved['joint_states']} holds no usable message"
            + (f" ({'; '.join(notes)})" if notes else "")
        )
    if joints is not None and set(joints) - set(series.names):
        raise BagError(f"{path}: joints {sorted(set(joints) - set(series.names))} are not in the joint states")

    def array_series(key: str) -> ArraySeries | None:
        ts, rows = arrays[key]
        return ArraySeries(t=np.array(ts), values=np.array(rows)) if ts else None

    return BagData(
        path=path,
        storage=storage,
        topics=dict(sorted(available_topics.items())),
        joint_states=series,
        motor_states=collectors["motor_states"].series(),
        wrench=_wrench_series(wrench) if wrench["t"] else None,
        commands=array_series("commands"),
        gate=array_series("gate"),
        r2=array_series("r2"),
        warnings=tuple(dict.fromkeys(notes)),
        other_joints={
            name: high - low if high >= low else float("nan")
            for name, (low, high) in collectors["joint_states"].others.items()
        },
    )


def _wrench_series(wrench: dict[str, list[Any]]) -> WrenchSeries:
    """The wrench messages in the order received, on their times; a message not after the one before is dropped."""
    t = stamps_or_receive_times(wrench["stamp"], wrench["t"])
    keep = np.concatenate([[True], t[1:] > np.maximum.accumulate(t)[:-1]])
    return WrenchSeries(
        t=t[keep],
        force=np.array(wrench["force"])[keep],
        torque=np.array(wrench["torque"])[keep],
        frame_id=str(wrench["frame"][0]),
    )


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (rosbags' and sqlite's messages may span several)."""
    return " ".join(str(exc).split())


@dataclass(frozen=True)
class RawMessage:
    """One message of a bag as stored: topic, type, receive time [ns] and CDR bytes."""

    topic: str
    msgtype: str
    time_ns: int
    data: bytes


def raw_messages(path: str | Path, *, topics: Sequence[str] | None = None) -> tuple[list[RawMessage], list[str]]:
    """Every message of a bag (or of ``topics``) undecoded, in receive-time order, for replay.

    A damaged MCAP gives its intact part (see `read_bag`); the second value lists the warnings.

    Raises:
        BagError: not a bag, or damaged beyond recovery; MissingTopicError: a topic asked for is absent.
    """
    path = Path(path)
    target, storage, files, notes = _resolve_storage(path)
    wanted = None if topics is None else {"/" + t.lstrip("/") for t in topics}
    out: list[RawMessage] = []
    available: dict[str, str] = {}

    def check(found: dict[str, str]) -> None:
        available.update(found)

    try:
        with open_reader(target) as reader:
            check({c.topic: c.msgtype for c in reader.connections})
            connections = [c for c in reader.connections if wanted is None or c.topic in wanted]
            for connection, timestamp, data in reader.messages(connections=connections) if connections else ():
                out.append(RawMessage(connection.topic, connection.msgtype, timestamp, bytes(data)))
    except _READ_ERRORS as error:
        exc = _one_line(error)
        if storage != "mcap" or out:
            if not out:
                raise CorruptBagError(f"{path} cannot be read: {exc}") from None
            notes.append(f"{path} is damaged ({exc}): kept the {len(out)} messages read before the damage")
        else:
            notes.append(f"rosbags could not read {path} ({exc}); recovered by scanning the MCAP file")

            def found_for(found: dict[str, str]) -> list[_Found]:
                check(found)
                return [
                    _Found(topic, msgtype, lambda msg, t: None)
                    for topic, msgtype in found.items()
                    if wanted is None or topic in wanted
                ]

            for file in files:
                for found, timestamp, data in _scan_mcap(file, found_for, notes, raw=True):
                    out.append(RawMessage(found.topic, found.msgtype, timestamp, data))
            out.sort(key=lambda m: m.time_ns)
    if wanted is not None and (absent := sorted(wanted - set(available))):
        raise MissingTopicError(f"{path} has no topic {absent}; it holds {sorted(available)}")
    if not out:
        raise EmptyBagError(f"{path} holds no message" + (f" on {sorted(wanted)}" if wanted else ""))
    return out, list(dict.fromkeys(notes))
