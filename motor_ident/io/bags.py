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

import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import DataError
from motor_ident.io.data import JointRecord

FloatArray = NDArray[np.float64]

JOINT_STATE = "sensor_msgs/msg/JointState"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
BOOL = "std_msgs/msg/Bool"
MCAP_MAGIC = b"\x89MCAP0\r\n"


class BagError(DataError):
    """A bag cannot be read or written as asked; the message says what to fix."""


class MissingTopicError(BagError):
    """A topic the caller needs is not in the bag."""


class UnsupportedTypeError(BagError):
    """A topic has a message type motor_ident cannot use for it."""


class EmptyBagError(BagError):
    """The bag (or the topic needed) holds no usable message."""


class CorruptBagError(BagError):
    """The bag is damaged beyond recovery."""


@dataclass(frozen=True)
class BagTopics:
    """Topic names of a recording (leading slash optional; a unique ``.../<name>`` also matches).

    An empty name skips that topic (reading is faster when only the joint states are needed).
    ``gate`` and ``r2`` are the online identifier's outputs, for the report's gate timeline.
    """

    joint_states: str = "/joint_states"
    motor_states: str = "/motor_states"
    wrench: str = "/ft_sensor/wrench"
    commands: str = "/effort_controller/commands"
    gate: str = "/identifier/gate_open"
    r2: str = "/identifier/r2"


@dataclass(frozen=True, eq=False)
class JointStateSeries:
    """JointState messages as arrays, joints in the order ``names``.

    Attributes:
        t: header stamps, strictly increasing, shape (N,) [s].
        names: joint (or motor) names, length n.
        position, velocity, effort: shape (N, n) [rad, rad/s, N m], None when the recording
            leaves the field empty.
    """

    t: FloatArray
    names: tuple[str, ...]
    position: FloatArray | None
    velocity: FloatArray | None
    effort: FloatArray | None


@dataclass(frozen=True, eq=False)
class WrenchSeries:
    """WrenchStamped messages: stamps (N,) [s], force (N, 3) [N], torque (N, 3) [N m], frame."""

    t: FloatArray
    force: FloatArray
    torque: FloatArray
    frame_id: str


@dataclass(frozen=True, eq=False)
class ArraySeries:
    """Float64MultiArray messages: receive times (N,) [s] and values (N, m)."""

    t: FloatArray
    values: FloatArray


@dataclass(frozen=True, eq=False)
class BagData:
    """What `read_bag` found.

    Attributes:
        path: the bag read.
        storage: ``mcap`` or ``sqlite3``.
        topics: every topic in the bag and its message type.
        joint_states: the joint states (always present: `read_bag` raises otherwise).
        motor_states, wrench, commands: None when the topic is not in the bag.
        gate, r2: the online identifier's ``identifier/gate_open`` (values 0 / 1) and
            ``identifier/r2`` when recorded (``motor-ident record`` does), else None.
        warnings: what was dropped or recovered, one line each.
    """

    path: Path
    storage: str
    topics: dict[str, str]
    joint_states: JointStateSeries
    motor_states: JointStateSeries | None = None
    wrench: WrenchSeries | None = None
    commands: ArraySeries | None = None
    gate: ArraySeries | None = None
    r2: ArraySeries | None = None
    warnings: tuple[str, ...] = ()

    def joint_record(self, joints: Sequence[str] | None = None) -> JointRecord:
        """The joint states as a `JointRecord` (effort = measured joint torque).

        Raises:
            BagError: the joint states carry no position or no effort.
            DataError: a joint of ``joints`` is not in the recording.
        """
        js = self.joint_states
        if js.position is None or js.effort is None:
            empty = [f for f in ("position", "effort") if getattr(js, f) is None]
            raise BagError(f"{self.path}: joint_states has empty {' and '.join(empty)}: cannot identify from it")
        record = JointRecord(t=js.t, joint_names=js.names, q=js.position, tau=js.effort, qd=js.velocity)
        return record if joints is None else record.select(joints)


@dataclass(frozen=True, eq=False)
class AlignedBag:
    """Every topic of a bag on the joint_states stamps (arrays of N rows; None where absent).

    ``valid`` (N,) is False where a present topic does not cover the stamp (before its first or
    after its last message): use ``valid`` to cut the record before fitting.
    """

    t: FloatArray
    joint_names: tuple[str, ...]
    q: FloatArray | None
    qd: FloatArray | None
    tau: FloatArray | None
    motor_names: tuple[str, ...] = ()
    motor_position: FloatArray | None = None
    motor_velocity: FloatArray | None = None
    motor_effort: FloatArray | None = None
    force: FloatArray | None = None
    torque: FloatArray | None = None
    command: FloatArray | None = None
    valid: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def resample(
    t_source: ArrayLike, values: ArrayLike, t_target: ArrayLike, *, hold: bool = False
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Values of a time series at other instants.

    Args:
        t_source: increasing sample times, shape (M,) [s].
        values: samples, shape (M, k).
        t_target: where the values are wanted, shape (N,) [s].
        hold: zero-order hold (the latest sample at or before each target) instead of linear
            interpolation.

    Returns:
        (values at ``t_target`` (N, k), inside (N,)): ``inside`` is False before the first and
        after the last source sample, where the edge value is repeated.
    """
    ts = np.asarray(t_source, dtype=float)
    v = np.asarray(values, dtype=float).reshape(ts.size, -1)
    tt = np.asarray(t_target, dtype=float)
    if ts.size == 0:
        return np.full((tt.size, v.shape[1]), np.nan), np.zeros(tt.size, dtype=bool)
    inside = (tt >= ts[0]) & (tt <= ts[-1])
    if hold:
        # Stamps are integer nanoseconds: a sample within 1 ns of a target counts as at it.
        k = np.clip(np.searchsorted(ts, tt + 1e-9, side="right") - 1, 0, ts.size - 1)
        return v[k].copy(), inside
    return np.column_stack([np.interp(tt, ts, v[:, c]) for c in range(v.shape[1])]), inside


def align(data: BagData) -> AlignedBag:
    """Every topic of ``data`` on its joint_states stamps (see `AlignedBag`)."""
    js = data.joint_states
    t = js.t
    valid = np.ones(t.size, dtype=bool)

    def on_t(ts: FloatArray, values: FloatArray | None, hold: bool = False) -> FloatArray | None:
        nonlocal valid
        if values is None:
            return None
        out, inside = resample(ts, values, t, hold=hold)
        valid &= inside
        return out

    ms, w, c = data.motor_states, data.wrench, data.commands
    return AlignedBag(
        t=t,
        joint_names=js.names,
        q=js.position,
        qd=js.velocity,
        tau=js.effort,
        motor_names=() if ms is None else ms.names,
        motor_position=None if ms is None else on_t(ms.t, ms.position),
        motor_velocity=None if ms is None else on_t(ms.t, ms.velocity),
        motor_effort=None if ms is None else on_t(ms.t, ms.effort),
        force=None if w is None else on_t(w.t, w.force),
        torque=None if w is None else on_t(w.t, w.torque),
        command=None if c is None else on_t(c.t, c.values, hold=True),
        valid=valid,
    )


# -- reading -------------------------------------------------------------------------------------


class _JointStateCollector:
    """Turns JointState messages into arrays in one joint order, dropping bad ones with reasons."""

    def __init__(self, topic: str, names: Sequence[str] | None) -> None:
        self.topic = topic
        self.names: tuple[str, ...] | None = tuple(names) if names else None
        self.fields: tuple[str, ...] | None = None
        self.t: list[float] = []
        self.rows: dict[str, list[FloatArray]] = {"position": [], "velocity": [], "effort": []}
        self.dropped: dict[str, int] = {}
        self._orders: dict[tuple[str, ...], NDArray[np.int64] | str] = {}

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def _order(self, names: tuple[str, ...]) -> NDArray[np.int64] | str:
        if names not in self._orders:
            lookup = {name: i for i, name in enumerate(names)}
            assert self.names is not None
            missing = [j for j in self.names if j not in lookup]
            if len(lookup) != len(names):
                self._orders[names] = "duplicate joint names"
            elif missing:
                self._orders[names] = f"joints {missing} missing"
            else:
                self._orders[names] = np.array([lookup[j] for j in self.names], dtype=np.int64)
        return self._orders[names]

    def add(self, msg: Any, t: float) -> None:
        names = tuple(msg.name)
        if self.names is None:
            if not names:
                self._drop("no joint names")
                return
            self.names = names
        order = self._order(names)
        if isinstance(order, str):
            self._drop(order)
            return
        arrays = {f: np.asarray(getattr(msg, f), dtype=float) for f in self.rows}
        if self.fields is None:
            self.fields = tuple(f for f, a in arrays.items() if a.size)
        for f in self.fields:
            if arrays[f].size != len(names):
                self._drop(f"{f} has {arrays[f].size} values for {len(names)} names")
                return
            if not np.all(np.isfinite(arrays[f][order])):
                self._drop(f"non-finite {f}")
                return
        if self.t and t <= self.t[-1]:
            self._drop("time stamp did not increase")
            return
        self.t.append(t)
        for f in self.fields:
            self.rows[f].append(arrays[f][order])

    def add_bulk(self, names: tuple[str, ...], t: FloatArray, arrays: dict[str, FloatArray]) -> None:
        """Many messages with the same names and array sizes at once; same rules as `add`."""
        if self.names is None:
            self.names = names
        order = self._order(names)
        N = t.size
        if isinstance(order, str):
            self.dropped[order] = self.dropped.get(order, 0) + N
            return
        if self.fields is None:
            self.fields = tuple(f for f, a in arrays.items() if a.shape[1])
        keep = np.ones(N, dtype=bool)
        for f in self.fields:
            if arrays[f].shape[1] != len(names):
                self.dropped[f"{f} has {arrays[f].shape[1]} values for {len(names)} names"] = N
                return
            bad = keep & ~np.all(np.isfinite(arrays[f][:, order]), axis=1)
            if bad.any():
                self.dropped[f"non-finite {f}"] = self.dropped.get(f"non-finite {f}", 0) + int(bad.sum())
                keep &= ~bad
        kept = np.flatnonzero(keep)
        tk = t[kept]
        before = np.maximum.accumulate(np.concatenate([[self.t[-1] if self.t else -np.inf], tk]))[:-1]
        increasing = tk > before
        if not increasing.all():
            reason = "time stamp did not increase"
            self.dropped[reason] = self.dropped.get(reason, 0) + int((~increasing).sum())
        kept = kept[increasing]
        self.t.extend(t[kept].tolist())
        for f in self.fields:
            self.rows[f].extend(arrays[f][np.ix_(kept, order)])

    def series(self) -> JointStateSeries | None:
        if not self.t or self.names is None:
            return None
        n = len(self.names)
        arrays = {
            f: (np.array(self.rows[f]).reshape(len(self.t), n) if self.fields and f in self.fields else None)
            for f in self.rows
        }
        return JointStateSeries(t=np.array(self.t), names=self.names, **arrays)


@dataclass
class _Found:
    """A topic of the bag and the collector that consumes it (undecoded CDR bytes when ``raw``)."""

    topic: str
    msgtype: str
    add: Callable[[Any, float], None]
    raw: bool = False


@dataclass(frozen=True)
class _JointStateLayout:
    """Byte layout of a little-endian CDR JointState; every message of a topic with the same names,
    frame id and array sizes has the same layout, so a whole topic decodes as one numpy array.

    CDR (XCDR1, what ROS 2 and rosbags write): a 4-byte encapsulation header, then the fields in
    order, each aligned to its size relative to the end of that header: stamp (int32 sec, uint32
    nanosec), frame_id (uint32 length with the NUL, bytes), name (uint32 count, then per string
    uint32 length + bytes), then position, velocity, effort (uint32 count, 8-aligned float64s).
    """

    size: int
    names: tuple[str, ...]
    fixed: tuple[tuple[int, int], ...]  # byte ranges equal in every message: frame id, names, array counts
    arrays: tuple[tuple[str, int, int], ...]  # (field, byte offset, count)


def _joint_state_layout(raw: bytes) -> _JointStateLayout | None:
    """The layout of one CDR JointState message, or None when it is not little-endian XCDR1."""
    if len(raw) < 16 or raw[0] != 0 or raw[1] != 1:
        return None
    body = 4

    def align(pos: int, n: int) -> int:
        return pos + (-(pos - body)) % n

    try:
        (frame_len,) = struct.unpack_from("<I", raw, 12)
        pos = 16 + frame_len
        pos = align(pos, 4)
        (count,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        names = []
        for _ in range(count):
            pos = align(pos, 4)
            (length,) = struct.unpack_from("<I", raw, pos)
            names.append(raw[pos + 4 : pos + 3 + length].decode())
            pos += 4 + length
        arrays = []
        fixed = [(12, pos)]
        for field_name in ("position", "velocity", "effort"):
            pos = align(pos, 4)
            (count,) = struct.unpack_from("<I", raw, pos)
            fixed.append((pos, pos + 4))
            pos += 4
            if count:
                pos = align(pos, 8)
            arrays.append((field_name, pos, count))
            pos += 8 * count
    except (struct.error, UnicodeDecodeError):
        return None
    if pos > len(raw):
        return None
    return _JointStateLayout(len(raw), tuple(names), tuple(fixed), tuple(arrays))


class _RawJointStates:
    """CDR JointState messages of one topic, kept undecoded until the end of the bag.

    `flush` decodes them all at once with numpy when they share one layout (a robot's driver
    publishes the same names every time), checked against rosbags' decoder on the first message;
    otherwise, one by one with rosbags.
    """

    def __init__(self, collector: _JointStateCollector) -> None:
        self.collector = collector
        self.raws: list[bytes] = []
        self.times: list[float] = []

    def add(self, raw: bytes, t: float) -> None:
        self.raws.append(bytes(raw))
        self.times.append(t)

    def flush(self) -> None:
        from rosbags.serde import SerdeError

        store = _typestore()
        received = np.array(self.times)
        layout = _joint_state_layout(self.raws[0]) if self.raws else None
        if layout is not None and self._uniform(layout):
            table = np.frombuffer(b"".join(self.raws), dtype=np.uint8).reshape(len(self.raws), layout.size)
            sec = table[:, 4:8].copy().view("<i4")[:, 0].astype(float)
            nanosec = table[:, 8:12].copy().view("<u4")[:, 0].astype(float)
            stamps = sec + 1e-9 * nanosec
            arrays = {
                name: table[:, offset : offset + 8 * count].copy().view("<f8").reshape(len(self.raws), count)
                for name, offset, count in layout.arrays
            }
            reference = store.deserialize_cdr(self.raws[0], JOINT_STATE)
            if tuple(reference.name) == layout.names and all(
                np.array_equal(np.asarray(getattr(reference, f)), arrays[f][0], equal_nan=True) for f in arrays
            ):
                self.collector.add_bulk(layout.names, np.where(stamps > 0.0, stamps, received), arrays)
                return
        for raw, t in zip(self.raws, self.times):
            try:
                msg = store.deserialize_cdr(raw, JOINT_STATE)
            except (SerdeError, struct.error, IndexError, ValueError):
                self.collector.dropped["undecodable message"] = self.collector.dropped.get("undecodable message", 0) + 1
                continue
            self.collector.add(msg, _stamp(msg) or t)

    def _uniform(self, layout: _JointStateLayout) -> bool:
        first = self.raws[0]
        keys = [first[a:b] for a, b in layout.fixed]
        return all(
            len(r) == layout.size and all(r[a:b] == k for (a, b), k in zip(layout.fixed, keys)) for r in self.raws
        )


_TYPESTORE: Any = None


def _typestore() -> Any:
    """rosbags' typestore of the latest ROS 2 release (JointState is the same since Foxy)."""
    global _TYPESTORE
    if _TYPESTORE is None:
        from rosbags.typesys import Stores, get_typestore

        _TYPESTORE = get_typestore(Stores.LATEST)
    return _TYPESTORE


def _stamp(msg: Any) -> float:
    return float(msg.header.stamp.sec) + 1e-9 * float(msg.header.stamp.nanosec)


def _match_topic(wanted: str, available: dict[str, str]) -> str | None:
    """The bag topic for ``wanted``: exact (with or without leading slash) or a unique suffix match."""
    name = "/" + wanted.lstrip("/")
    if name in available:
        return name
    if wanted in available:
        return wanted
    suffix = [t for t in available if t.endswith(name)]
    return suffix[0] if len(suffix) == 1 else None


def _resolve_storage(path: Path) -> tuple[Path, str, list[Path], list[str]]:
    """(what rosbags opens, storage name, storage files, notes) for a bag directory or file.

    Raises:
        BagError: not a rosbag2 directory, .mcap or .db3 file.
    """
    notes: list[str] = []
    if not path.exists():
        raise BagError(f"bag {path} does not exist")
    if path.is_dir():
        mcaps, dbs = sorted(path.glob("*.mcap")), sorted(path.glob("*.db3"))
        files = mcaps or dbs
        if not files:
            raise BagError(f"{path} holds no .mcap or .db3 file: not a rosbag2 directory")
        storage = "mcap" if mcaps else "sqlite3"
        if (path / "metadata.yaml").is_file():
            return path, storage, files, notes
        if len(files) > 1:
            raise BagError(
                f"{path} has no metadata.yaml and {len(files)} storage files: run `ros2 bag reindex {path}` first"
            )
        notes.append(f"{path} has no metadata.yaml (recording not closed?): reading {files[0].name} alone")
        return files[0], storage, files, notes
    suffix = path.suffix.lower()
    if suffix == ".mcap":
        return path, "mcap", [path], notes
    if suffix == ".db3":
        return path, "sqlite3", [path], notes
    raise BagError(f"{path}: not a rosbag2 bag; give its directory, a .mcap or a .db3 file")


def _rosbags_messages(
    target: Path, found_for: Callable[[dict[str, str]], list[_Found]], span: dict[str, int]
) -> Iterator[tuple[_Found, int, Any]]:
    """Decoded messages of the wanted topics through rosbags' AnyReader, in receive-time order.

    ``span`` receives the bag's ``start`` and ``end`` receive times [ns] (for progress).
    """
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    with AnyReader([target], default_typestore=get_typestore(Stores.LATEST)) as reader:
        available = {c.topic: c.msgtype for c in reader.connections}
        span.update(start=reader.start_time, end=reader.end_time)
        wanted = {f.topic: f for f in found_for(available)}
        connections = [c for c in reader.connections if c.topic in wanted]
        if not connections:  # an empty selection would mean "every topic" to rosbags
            return
        for connection, timestamp, raw in reader.messages(connections=connections):
            found = wanted[connection.topic]
            yield found, timestamp, (raw if found.raw else reader.deserialize(raw, connection.msgtype))


def _mcap_records(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(opcode, content start, content end) of the complete MCAP records in ``data[start:end]``."""
    pos = start
    while pos + 9 <= end:
        op = data[pos]
        (length,) = struct.unpack_from("<Q", data, pos + 1)
        if pos + 9 + length > end:
            return
        yield op, pos + 9, pos + 9 + length
        pos += 9 + length


def _scan_mcap(
    path: Path, found_for: Callable[[dict[str, str]], list[_Found]], notes: list[str], *, raw: bool = False
) -> Iterator[tuple[_Found, int, Any]]:
    """Decoded messages of an MCAP file read record by record, up to the first damaged record.

    MCAP (https://mcap.dev/spec): magic, then records ``opcode u8 | length u64 | content``;
    Schema 0x03, Channel 0x04, Message 0x05, Chunk 0x06 (holding Schema/Channel/Message records,
    optionally compressed, CRC-checked), Footer 0x02 / DataEnd 0x0F end the data section.
    """
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.rosbag2.storage_mcap import decompress
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    data = path.read_bytes()
    if not data:
        raise CorruptBagError(f"{path} is empty (0 bytes)")
    if data[:8] != MCAP_MAGIC:
        raise CorruptBagError(f"{path}: not an MCAP file (bad magic bytes)")
    schemas: dict[int, tuple[str, str]] = {}
    channels: dict[int, tuple[str, str]] = {}  # id -> (topic, msgtype)
    wanted: dict[str, _Found] = {}
    stores: dict[str, Any] = {}
    fallback = get_typestore(Stores.LATEST)
    state = {"end": 8, "messages": 0}

    def decode(msgtype: str, data: bytes) -> Any:
        if raw:
            return data
        if msgtype not in stores:
            store = fallback
            definition = next((d for name, d in schemas.values() if name == msgtype and d), None)
            if definition is not None:
                store = get_typestore(Stores.EMPTY)
                store.register(get_types_from_msg(definition, msgtype))
            stores[msgtype] = store
        return stores[msgtype].deserialize_cdr(data, msgtype)

    def records(buf: bytes, start: int, end: int, top: bool) -> Iterator[tuple[_Found, int, Any]]:
        nonlocal wanted
        for op, lo, hi in _mcap_records(buf, start, end):
            if op == 0x03:
                (sid,) = struct.unpack_from("<H", buf, lo)
                name, p = _mcap_string(buf, lo + 2)
                _, p = _mcap_string(buf, p)
                (size,) = struct.unpack_from("<I", buf, p)
                schemas[sid] = (name, buf[p + 4 : p + 4 + size].decode())
            elif op == 0x04:
                cid, sid = struct.unpack_from("<HH", buf, lo)
                topic, _ = _mcap_string(buf, lo + 4)
                channels[cid] = (topic, schemas.get(sid, ("", ""))[0])
                wanted = {f.topic: f for f in found_for({t: m for t, m in channels.values()})}
            elif op == 0x05:
                cid, _, log_time = struct.unpack_from("<HIQ", buf, lo)
                topic, msgtype = channels.get(cid, ("", ""))
                if topic in wanted:
                    data = buf[lo + 22 : hi]
                    yield wanted[topic], log_time, (data if wanted[topic].raw else decode(msgtype, data))
                    state["messages"] += 1
            elif op == 0x06 and top:
                _, _, size, crc = struct.unpack_from("<QQQI", buf, lo)
                compression, p = _mcap_string(buf, lo + 28)
                (compressed,) = struct.unpack_from("<Q", buf, p)
                try:
                    chunk = decompress(buf[p + 8 : p + 8 + compressed], compression, size, crc)
                except ReaderError as exc:
                    notes.append(f"{path.name}: damaged chunk at byte {lo - 9} ({exc}): stopped there")
                    return
                yield from records(chunk, 0, len(chunk), False)
            elif op in (0x02, 0x0F) and top:
                state["end"] = hi
                return
            if top:
                state["end"] = hi

    yield from records(data, 8, len(data), True)
    if state["end"] < len(data) - 8:
        notes.append(
            f"{path.name} is damaged or cut short at byte {state['end']} of {len(data)}: "
            f"kept the {state['messages']} intact messages before it, the rest is lost"
        )


def _mcap_string(buf: bytes, pos: int) -> tuple[str, int]:
    (size,) = struct.unpack_from("<I", buf, pos)
    return buf[pos + 4 : pos + 4 + size].decode(), pos + 4 + size


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
    from rosbags.highlevel import AnyReaderError
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.serde import SerdeError
    from rosbags.typesys import TypesysError

    path = Path(path)
    target, storage, files, notes = _resolve_storage(path)
    collectors = {
        "joint_states": _JointStateCollector("joint_states", joints),
        "motor_states": _JointStateCollector("motor_states", None),
    }
    wrench: dict[str, list[Any]] = {"t": [], "force": [], "torque": [], "frame": []}
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
        if wrench["t"] and t <= wrench["t"][-1]:
            return
        f, m = msg.wrench.force, msg.wrench.torque
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
                out.append(_Found(topic, msgtype, lambda msg, t: add_wrench(msg, _stamp(msg) or t)))
            else:
                out.append(_Found(topic, msgtype, lambda msg, t, k=key: add_array(k)(msg, t)))
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

    errors = (AnyReaderError, ReaderError, SerdeError, TypesysError, sqlite3.DatabaseError, struct.error, OSError)
    try:
        consume(_rosbags_messages(target, found_for, span))
    except errors as exc:
        had = received()
        if storage == "mcap" and not had:
            # rosbags needs the footer and index an interrupted recording never wrote: scan instead.
            notes.append(f"rosbags could not read {path} ({exc}); recovered by scanning the MCAP file")
            span.clear()
            try:
                for file in files:
                    consume(_scan_mcap(file, found_for, notes))
            except (SerdeError, TypesysError, struct.error, UnicodeDecodeError, IndexError) as scan_exc:
                notes.append(f"scan stopped: {scan_exc}")
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
        wrench=(
            WrenchSeries(
                t=np.array(wrench["t"]),
                force=np.array(wrench["force"]),
                torque=np.array(wrench["torque"]),
                frame_id=str(wrench["frame"][0]),
            )
            if wrench["t"]
            else None
        ),
        commands=array_series("commands"),
        gate=array_series("gate"),
        r2=array_series("r2"),
        warnings=tuple(dict.fromkeys(notes)),
    )


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
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.typesys import Stores, get_typestore

    path = Path(path)
    target, storage, files, notes = _resolve_storage(path)
    wanted = None if topics is None else {"/" + t.lstrip("/") for t in topics}
    out: list[RawMessage] = []
    available: dict[str, str] = {}

    def check(found: dict[str, str]) -> None:
        available.update(found)

    try:
        with AnyReader([target], default_typestore=get_typestore(Stores.LATEST)) as reader:
            check({c.topic: c.msgtype for c in reader.connections})
            connections = [c for c in reader.connections if wanted is None or c.topic in wanted]
            for connection, timestamp, data in reader.messages(connections=connections) if connections else ():
                out.append(RawMessage(connection.topic, connection.msgtype, timestamp, bytes(data)))
    except (AnyReaderError, ReaderError, sqlite3.DatabaseError, OSError) as exc:
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


def _estimated_messages(files: list[Path], done: int) -> int:
    """Rough total message count for progress: ~ bytes / 150 (a small JointState's size)."""
    return max(done + 1, int(sum(f.stat().st_size for f in files) / 150))


# -- writing -------------------------------------------------------------------------------------


class BagWriter:
    """Write the standard topics into a rosbag2 (version 9) directory, atomically.

    Use as a context manager; messages go into ``<path>.tmp-*`` beside ``path``, which is renamed
    to ``path`` when the block ends without error (and deleted otherwise).

    Args:
        path: the bag directory to create; must not exist.
        storage: ``mcap`` (default, what ``ros2 bag record`` writes since Iron) or ``sqlite3``.

    Raises:
        BagError: ``path`` exists or the storage is unknown.
    """

    def __init__(self, path: str | Path, *, storage: str = "mcap") -> None:
        from rosbags.rosbag2 import StoragePlugin
        from rosbags.typesys import Stores, get_typestore

        self.path = Path(path)
        plugins = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
        if storage not in plugins:
            raise BagError(f"storage = {storage!r}: expected 'mcap' or 'sqlite3'")
        if self.path.exists():
            raise BagError(f"{self.path} exists already: choose another --out or remove it")
        self.storage = storage
        self._plugin = plugins[storage]
        self.typestore = get_typestore(Stores.LATEST)
        self._types = self.typestore.types
        self._writer: Any = None
        self._tmp: Path | None = None
        self._connections: dict[str, Any] = {}

    def __enter__(self) -> BagWriter:
        from rosbags.rosbag2 import Writer

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.tmp-", dir=self.path.parent))
        self._tmp.rmdir()  # rosbags creates the directory itself
        self._writer = Writer(self._tmp, version=9, storage_plugin=self._plugin)
        self._writer.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._writer is not None and self._tmp is not None
        if exc_type is None:
            self._writer.close()
            # rosbags names the storage file after the directory: give it the bag's name.
            for file in self._tmp.iterdir():
                if file.stem == self._tmp.name:
                    file.rename(self._tmp / f"{self.path.name}{file.suffix}")
            meta = self._tmp / "metadata.yaml"
            meta.write_text(meta.read_text().replace(self._tmp.name, self.path.name))
            if self.path.exists():
                shutil.rmtree(self._tmp, ignore_errors=True)
                raise BagError(f"{self.path} appeared while recording: the recording was discarded")
            self._tmp.rename(self.path)
        else:
            try:
                self._writer.close()
            finally:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def _write(self, topic: str, msgtype: str, t_ns: int, msg: Any) -> None:
        connection = self._connections.get(topic)
        if connection is None:
            connection = self._writer.add_connection(topic, msgtype, typestore=self.typestore)
            self._connections[topic] = connection
        self._writer.write(connection, int(t_ns), self.typestore.serialize_cdr(msg, msgtype))

    def _header(self, t: float, frame_id: str = "") -> Any:
        sec = int(np.floor(t))
        nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)
        Time = self._types["builtin_interfaces/msg/Time"]
        return self._types["std_msgs/msg/Header"](stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id)

    def joint_state(
        self,
        topic: str,
        t: float,
        names: Sequence[str],
        position: ArrayLike | None = None,
        velocity: ArrayLike | None = None,
        effort: ArrayLike | None = None,
        *,
        stamp: float | None = None,
    ) -> None:
        """A JointState received at ``t`` [s], stamped ``stamp`` (``t`` when None); arrays (n,), empty where None."""

        def arr(x: ArrayLike | None) -> FloatArray:
            return np.zeros(0) if x is None else np.asarray(x, dtype=np.float64).ravel()

        msg = self._types[JOINT_STATE](
            header=self._header(t if stamp is None else stamp),
            name=list(names),
            position=arr(position),
            velocity=arr(velocity),
            effort=arr(effort),
        )
        self._write(topic, JOINT_STATE, round(t * 1e9), msg)

    def wrench(self, topic: str, t: float, force: ArrayLike, torque: ArrayLike, frame_id: str = "") -> None:
        """A WrenchStamped at ``t`` [s]: force (3,) [N], torque (3,) [N m] in ``frame_id``."""
        Vector3 = self._types["geometry_msgs/msg/Vector3"]
        f, m = (np.asarray(x, dtype=float) for x in (force, torque))
        msg = self._types[WRENCH_STAMPED](
            header=self._header(t, frame_id),
            wrench=self._types["geometry_msgs/msg/Wrench"](
                force=Vector3(x=f[0], y=f[1], z=f[2]), torque=Vector3(x=m[0], y=m[1], z=m[2])
            ),
        )
        self._write(topic, WRENCH_STAMPED, round(t * 1e9), msg)

    def array(self, topic: str, t: float, values: ArrayLike) -> None:
        """A Float64MultiArray received at ``t`` [s] (the ros2_controllers command format)."""
        layout = self._types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
        msg = self._types[FLOAT64_ARRAY](layout=layout, data=np.asarray(values, dtype=np.float64).ravel())
        self._write(topic, FLOAT64_ARRAY, round(t * 1e9), msg)

    def boolean(self, topic: str, t: float, value: bool) -> None:
        """A std_msgs/Bool received at ``t`` [s]."""
        self._write(topic, BOOL, round(t * 1e9), self._types[BOOL](data=bool(value)))
