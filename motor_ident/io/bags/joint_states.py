"""JointState messages to arrays in one joint order, dropping bad samples with reasons."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rosbags.serde import SerdeError

from motor_ident.io.bags.series import JointStateSeries
from motor_ident.io.bags.storage import JOINT_STATE, _stamp, _typestore, stamps_or_receive_times
from motor_ident.io.joint_order import JointIndex

FloatArray = NDArray[np.float64]


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
        self.others: dict[str, tuple[float, float]] = {}  # joints not asked for: (lowest, highest) position
        self._requested = self.names is not None
        self._index: JointIndex | None = None

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def _order(self, names: tuple[str, ...]) -> NDArray[np.int64] | str:
        assert self.names is not None
        if self._index is None:
            self._index = JointIndex(self.names)
        return self._index.lookup(names)

    def _note_others(self, names: tuple[str, ...], position: FloatArray) -> None:
        """Remember the range of the joints not asked for (``position``: (M, len(names)), or empty)."""
        if not self._requested:
            return
        assert self.names is not None
        ours = set(self.names)
        for k, name in enumerate(names):
            if name in ours:
                continue
            column = position[:, k] if position.ndim == 2 and position.shape[1] == len(names) else np.zeros(0)
            column = column[np.isfinite(column)]
            low, high = self.others.get(name, (np.inf, -np.inf))
            if column.size:
                low, high = min(low, float(column.min())), max(high, float(column.max()))
            self.others[name] = (low, high)

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
        self._note_others(names, arrays["position"][None, :])
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
        self._note_others(names, arrays["position"])
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
                self.collector.add_bulk(layout.names, stamps_or_receive_times(stamps, received), arrays)
                return
        decoded, kept = [], []
        for raw, t in zip(self.raws, self.times):
            try:
                decoded.append(store.deserialize_cdr(raw, JOINT_STATE))
            except (SerdeError, struct.error, IndexError, ValueError):
                self.collector.dropped["undecodable message"] = self.collector.dropped.get("undecodable message", 0) + 1
                continue
            kept.append(t)
        times = stamps_or_receive_times([_stamp(msg) for msg in decoded], kept)
        for msg, t in zip(decoded, times):
            self.collector.add(msg, float(t))

    def _uniform(self, layout: _JointStateLayout) -> bool:
        first = self.raws[0]
        keys = [first[a:b] for a, b in layout.fixed]
        return all(
            len(r) == layout.size and all(r[a:b] == k for (a, b), k in zip(layout.fixed, keys)) for r in self.raws
        )
