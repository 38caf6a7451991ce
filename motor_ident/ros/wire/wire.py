"""The 1 kHz message path: joint states read from, and commands written as, serialized CDR bytes.

A node on the control path answers every ``joint_states`` sample with one command. Building
rclpy message objects costs more than the control law's arithmetic for small arms (every name a
Python string, every array a list of floats), so the nodes on that path subscribe with
``raw=True`` and read the few fields they use straight from the serialized message, and publish
commands as bytes from one preallocated buffer.

Layout (XCDR1, little endian; what Fast DDS and Cyclone DDS put on the wire for these types): a
4-byte encapsulation header, then the fields in order, each primitive aligned to its size counted
from the end of the header. ``sensor_msgs/JointState``: ``header`` (``int32 sec``, ``uint32
nanosec``, ``string frame_id``), ``string[] name``, ``float64[] position``, ``velocity``,
``effort``. A string is a ``uint32`` length (with the terminating NUL) and its bytes; a sequence
a ``uint32`` count and its elements. ``std_msgs/Float64MultiArray``: ``layout`` (an empty
``dim`` sequence and ``data_offset``), then ``float64[] data``.

The names are decoded only when their bytes differ from the previous message's (one
``bytes.startswith`` per message otherwise); a message laid out as one read before (same size,
frame id length, names and field counts: every message of a robot's state stream) is read with
one precompiled ``struct`` unpack of exactly the wanted doubles (and one reordering when the
robot's joint order is not ours): on a 4-joint arm that is about a microsecond, where
``numpy.frombuffer`` / ``take`` / ``isfinite().all()`` cost one each. The joint order comes from the same
`motor_ident.io.joint_order.JointIndex` every other reader uses, and a message is refused for the
same reasons, with the same words, as `motor_ident.ros.wire.conversions.joint_state_arrays` gives. A
truncated or malformed buffer is refused with a reason, never an exception.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.io.joint_order import JointIndex, Reason
from motor_ident.ros.wire.conversions import EMPTY_FIELD, NON_FINITE, WRONG_LENGTH, WRONG_SIZE

CDR_LE = b"\x00\x01\x00\x00"
"""Encapsulation header of little-endian plain CDR."""
HEADER = len(CDR_LE)
JOINT_STATE_FIELDS = ("position", "velocity", "effort")

MALFORMED = "malformed message"
"""Kind of reason a buffer is refused for: truncated, not CDR, a count past its end."""

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_STAMP_FRAME = struct.Struct("<iII")  # the stamp and the frame id's length


def all_finite(values: Sequence[float]) -> bool:
    """No NaN or infinity among a few plain floats (cheaper than numpy's on fewer than ~20)."""
    return all(map(math.isfinite, values))


def _align(offset: int, size: int) -> int:
    """``offset`` (from the buffer's start) rounded up to a multiple of ``size`` counted from the
    end of the encapsulation header."""
    return offset + (-(offset - HEADER) % size)


def _picker(index: Sequence[int]) -> tuple[struct.Struct, Callable[[tuple[Any, ...]], tuple[Any, ...]] | None]:
    """A struct that unpacks the doubles at ``index`` (counted in doubles from the end of the
    header, distinct) in buffer order, skipping the bytes between them, and the reordering of its
    values into the order of ``index`` (None: already in that order)."""
    ordered = sorted(index)
    fmt, at = "<", 0
    for k in ordered:
        fmt += f"{8 * (k - at)}xd" if k > at else "d"
        at = k + 1
    rank = {k: i for i, k in enumerate(ordered)}
    order = [rank[k] for k in index]
    return struct.Struct(fmt), None if order == sorted(order) else operator.itemgetter(*order)


@dataclass(frozen=True)
class _Layout:
    """Where the fields of a message read before sit: its size, where its names start, each
    field's count (offset, bytes), and how to unpack the wanted values (`_picker` of their
    places among the buffer's doubles counted from the end of the header, (field, joint)
    row-major)."""

    size: int
    names_at: int
    counts: tuple[tuple[int, bytes], ...]
    unpack: struct.Struct
    reorder: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None

    def matches(self, data: bytes, names: bytes) -> bool:
        """``data`` is laid out the same way (checked without copying)."""
        if len(data) != self.size or not data.startswith(names, self.names_at):
            return False
        for at, count in self.counts:
            if not data.startswith(count, at):
                return False
        return True


class JointStateReader:
    """Reads ``sensor_msgs/JointState`` CDR bytes into preallocated arrays in our joint order.

    After a successful `read`, ``stamp`` [s] is the header stamp (``sec``, ``nanosec`` its fields)
    and ``values[k]`` (n,) holds the
    k-th requested field in the order of ``joints``; the arrays are overwritten by the next read.
    """

    def __init__(self, joints: Sequence[str], fields: Sequence[str] = ("position", "velocity")) -> None:
        """``joints``: our joint names, in the order of the arrays; ``fields``: which of
        position / velocity / effort to read (only those are checked).

        Raises:
            ValueError: an unknown field.
        """
        unknown = [f for f in fields if f not in JOINT_STATE_FIELDS]
        if unknown:
            raise ValueError(f"fields {unknown}: expected some of {list(JOINT_STATE_FIELDS)}")
        self.index = JointIndex(joints)
        self.fields = tuple(fields)
        self._wanted = tuple(f in self.fields for f in JOINT_STATE_FIELDS)
        self.values: NDArray[np.float64] = np.zeros((len(self.fields), len(self.index.joint_names)))
        self.stamp = 0.0
        self.sec = self.nanosec = 0  # the stamp as builtin_interfaces/Time fields
        self._names: bytes = b"\xff"  # the name sequence's bytes of the last message (never a real one)
        self._names_count = 0
        self._order: NDArray[np.int64] | Reason = Reason("no names yet", MALFORMED)
        self._flat = self.values.reshape(-1)  # a view: (field, joint) row-major
        self._layouts: dict[int, _Layout] = {}  # by frame id length, for the current names

    def read(self, data: bytes) -> str:
        """Reads one message: "" when ``values`` and ``stamp`` hold it, else the `Reason` it is
        unusable (its ``kind`` one of the joint-order kinds, `EMPTY_FIELD`, `WRONG_LENGTH`,
        `NON_FINITE` or `MALFORMED`)."""
        try:
            return self._read(data)
        except (struct.error, ValueError, IndexError, UnicodeDecodeError):
            return Reason(f"malformed message ({len(data)} bytes)", MALFORMED)

    def _read(self, data: bytes) -> str:
        if not data.startswith(CDR_LE):
            return Reason(f"not little-endian CDR (header {data[:4].hex()})", MALFORMED)
        sec, nanosec, length = _STAMP_FRAME.unpack_from(data, HEADER)
        offset = HEADER + 8
        layout = self._layouts.get(length)
        if layout is not None and layout.matches(data, self._names) and self._read_known(data, layout):
            self.sec, self.nanosec = sec, nanosec
            self.stamp = sec + nanosec * 1e-9
            return ""
        frame_length = length
        offset = _align(offset + 4 + length, 4)
        names_at = offset
        if data.startswith(self._names, offset):
            offset += len(self._names)
        else:
            offset = self._read_names(data, offset)
        order = self._order
        if isinstance(order, Reason):
            return order
        count = self._names_count
        row = 0
        counts: list[tuple[int, bytes]] = []
        index: list[int] = []
        for field_name, wanted in zip(JOINT_STATE_FIELDS, self._wanted):
            offset = _align(offset, 4)
            (size,) = _U32.unpack_from(data, offset)
            counts.append((offset, _U32.pack(size)))
            offset += 4
            if size:
                offset = _align(offset, 8)
            end = offset + 8 * size
            if end > len(data):
                return Reason(f"malformed message: {field_name} runs past the end ({len(data)} bytes)", MALFORMED)
            if wanted:
                if size != count:
                    if size == 0:
                        return Reason(f"{field_name} is empty", EMPTY_FIELD)
                    return Reason(f"{field_name} has {size} values for {count} names", WRONG_LENGTH)
                out = self.values[row]
                np.take(np.frombuffer(data, dtype="<f8", count=size, offset=offset), order, out=out)
                if not np.isfinite(out).all():
                    return Reason(f"non-finite {field_name}", NON_FINITE)
                index.extend(((offset - HEADER) // 8 + order).tolist())
                row += 1
            offset = end
        self.sec, self.nanosec = sec, nanosec
        self.stamp = sec + nanosec * 1e-9
        if len(self._layouts) >= 8:
            self._layouts.clear()
        self._layouts[frame_length] = _Layout(len(data), names_at, tuple(counts), *_picker(index))
        return ""

    def _read_known(self, data: bytes, layout: _Layout) -> bool:
        """The wanted fields of a message laid out as ``layout``, in one unpack; False when a value
        is not finite (the full read then says which)."""
        values = layout.unpack.unpack_from(data, HEADER)
        if layout.reorder is not None:
            values = layout.reorder(values)
        if not all_finite(values):
            return False
        self._flat[:] = values
        return True

    def _read_names(self, data: bytes, start: int) -> int:
        """Decodes the name sequence at ``start``, caches its bytes and our joint order; returns
        the offset after it."""
        (count,) = _U32.unpack_from(data, start)
        offset = start + 4
        names = []
        for _ in range(count):
            offset = _align(offset, 4)
            (length,) = _U32.unpack_from(data, offset)
            if length == 0 or offset + 4 + length > len(data):
                raise ValueError("string past the end")
            names.append(data[offset + 4 : offset + 3 + length].decode())
            offset += 4 + length
        self._names = data[start:offset]
        self._names_count = count
        self._order = self.index.lookup(names)
        self._layouts.clear()
        return offset


class Float64ArrayWriter:
    """One ``std_msgs/Float64MultiArray`` of ``n`` values (empty layout) as CDR bytes.

    Write the values into ``data`` (a (n,) view of the buffer), then publish `serialized`.
    """

    def __init__(self, n: int) -> None:
        offset = _align(HEADER + 12, 8)  # dim count, data_offset, data count; doubles aligned to 8
        self.buffer = bytearray(offset + 8 * n)
        self.buffer[:HEADER] = CDR_LE
        _U32.pack_into(self.buffer, HEADER + 8, n)
        self.data: NDArray[np.float64] = np.frombuffer(self.buffer, dtype="<f8", count=n, offset=offset)

    def set_data_offset(self, value: int) -> None:
        """The layout's ``data_offset`` field (uint32; 0 unless set)."""
        _U32.pack_into(self.buffer, HEADER + 4, value)

    def serialized(self) -> bytes:
        """The message as bytes for ``Publisher.publish`` (a copy: rclpy takes ``bytes``)."""
        return bytes(self.buffer)


class Float64ArrayReader:
    """Reads ``std_msgs/Float64MultiArray`` CDR bytes of ``n`` values into a preallocated array.

    After a successful `read`, ``values`` (n,) holds the data (the layout is not used).
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.values: NDArray[np.float64] = np.zeros(self.n)
        self._doubles = struct.Struct(f"<{self.n}d")

    def read(self, data: bytes) -> str:
        """ "" when ``values`` holds the message's data, else the `Reason`: `WRONG_SIZE`,
        `NON_FINITE` (the words of `motor_ident.ros.wire.conversions.array_values`) or `MALFORMED`."""
        try:
            return self._read(data)
        except (struct.error, ValueError):
            return Reason(f"malformed message ({len(data)} bytes)", MALFORMED)

    def _read(self, data: bytes) -> str:
        if not data.startswith(CDR_LE):
            return Reason(f"not little-endian CDR (header {data[:4].hex()})", MALFORMED)
        (dims,) = _U32.unpack_from(data, HEADER)
        offset = HEADER + 4
        for _ in range(dims):  # label, size, stride
            offset = _align(offset, 4)
            (length,) = _U32.unpack_from(data, offset)
            offset = _align(offset + 4 + length, 4) + 8
        offset = _align(offset, 4) + 4  # data_offset
        (size,) = _U32.unpack_from(data, offset)
        offset += 4
        if size != self.n:
            return Reason(f"{size} values, expected {self.n}", WRONG_SIZE)
        if size:
            offset = _align(offset, 8)
        if offset + 8 * size > len(data):
            return Reason(f"malformed message: data runs past the end ({len(data)} bytes)", MALFORMED)
        values = self._doubles.unpack_from(data, offset)
        if not all_finite(values):
            return Reason("non-finite value", NON_FINITE)
        self.values[:] = values
        return ""


class JointStateWriter:
    """One ``sensor_msgs/JointState`` with fixed names and all three fields, as CDR bytes.

    Set the stamp with `set_stamp`, write ``position``, ``velocity``, ``effort`` ((n,) views of the
    buffer), then publish `serialized`. The frame id is fixed at construction.
    """

    def __init__(self, names: Sequence[str], frame_id: str = "") -> None:
        out = bytearray(CDR_LE) + bytearray(8)  # stamp, written by set_stamp
        out += _string(frame_id)
        out += _pad(out, 4) + _U32.pack(len(names))
        for name in names:
            out += _pad(out, 4) + _string(name)
        starts = []
        n = len(names)
        for _ in JOINT_STATE_FIELDS:
            out += _pad(out, 4) + _U32.pack(n)
            if n:
                out += _pad(out, 8)
            starts.append(len(out))
            out += bytearray(8 * n)
        self.buffer = out
        self.position, self.velocity, self.effort = (
            np.frombuffer(self.buffer, dtype="<f8", count=n, offset=start) for start in starts
        )

    def set_stamp(self, sec: int, nanosec: int) -> None:
        """The header stamp (``builtin_interfaces/Time`` fields)."""
        _STAMP.pack_into(self.buffer, HEADER, sec, nanosec)

    def serialized(self) -> bytes:
        """The message as bytes for ``Publisher.publish``."""
        return bytes(self.buffer)


def _string(text: str) -> bytes:
    encoded = text.encode() + b"\0"
    return _U32.pack(len(encoded)) + encoded


def _pad(buffer: bytearray, size: int) -> bytes:
    return bytes(-(len(buffer) - HEADER) % size)
