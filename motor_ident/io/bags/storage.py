"""rosbag2 storage access: rosbags' readers and a fast MCAP scan."""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from rosbags.highlevel import AnyReader
from rosbags.rosbag2.errors import ReaderError
from rosbags.rosbag2.storage_mcap import decompress
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from motor_ident.io.bags.series import BagError, CorruptBagError
from motor_ident.schema import MAX_YAML_BYTES

FloatArray = NDArray[np.float64]

JOINT_STATE = "sensor_msgs/msg/JointState"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
IMU = "sensor_msgs/msg/Imu"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
BOOL = "std_msgs/msg/Bool"
MCAP_MAGIC = b"\x89MCAP0\r\n"


@dataclass
class _Found:
    """A topic of the bag and the collector that consumes it (undecoded CDR bytes when ``raw``)."""

    topic: str
    msgtype: str
    add: Callable[[Any, float], None]
    raw: bool = False


_TYPESTORE: Any = None


def _typestore() -> Any:
    """rosbags' typestore of the latest ROS 2 release (JointState is the same since Foxy)."""
    global _TYPESTORE
    if _TYPESTORE is None:
        _TYPESTORE = get_typestore(Stores.LATEST)
    return _TYPESTORE


def _stamp(msg: Any) -> float:
    return float(msg.header.stamp.sec) + 1e-9 * float(msg.header.stamp.nanosec)


def stamps_or_receive_times(stamps: ArrayLike, received: ArrayLike) -> FloatArray:
    """A topic's times [s]: its header stamps, or its receive times when every stamp is zero.

    A driver that does not stamp leaves every stamp at zero; a clock that starts at zero (a
    simulator's, a simulated bag played back) stamps its first message zero and the rest not, and
    keeps its stamps. Deciding per message would put that first message at the wall-clock receive
    time, decades after the rest.
    """
    stamps, received = np.asarray(stamps, dtype=float), np.asarray(received, dtype=float)
    return stamps if np.any(stamps != 0.0) else received


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
            size = (path / "metadata.yaml").stat().st_size
            if size > MAX_YAML_BYTES:  # rosbags reads it whole
                raise CorruptBagError(
                    f"{path}: metadata.yaml is {size / 1024**2:.4g} MiB, larger than the {MAX_YAML_BYTES // 1024**2} "
                    "MiB a YAML file may be: damaged (`ros2 bag reindex` writes a new one)"
                )
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


@contextmanager
def open_reader(target: Path) -> Iterator[AnyReader]:
    """rosbags' `AnyReader` on ``target``, open until the block ends.

    Raises:
        ReaderError: also for a file cut inside its header, on which rosbags trips (a TypeError
            or an IndexError from its parser).
    """
    reader = AnyReader([target], default_typestore=get_typestore(Stores.LATEST))
    try:
        reader.open()
    except (TypeError, ValueError, IndexError, KeyError, OverflowError, MemoryError, struct.error) as exc:
        raise ReaderError(f"cannot open {target.name}: {type(exc).__name__}: {exc}") from None
    try:
        yield reader
    finally:
        reader.close()


def _rosbags_messages(
    target: Path, found_for: Callable[[dict[str, str]], list[_Found]], span: dict[str, int]
) -> Iterator[tuple[_Found, int, Any]]:
    """Decoded messages of the wanted topics through rosbags' AnyReader, in receive-time order.

    ``span`` receives the bag's ``start`` and ``end`` receive times [ns] (for progress).
    """
    with open_reader(target) as reader:
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
    with open(path, "rb") as stream:  # the magic first: an unknown file is refused before it is mapped
        if not stream.read(8):
            raise CorruptBagError(f"{path} is empty (0 bytes)")
        stream.seek(0)
        if stream.read(8) != MCAP_MAGIC:
            raise CorruptBagError(f"{path}: not an MCAP file (bad magic bytes)")
        # mapped, not read: the pages touched stay file-backed (memory the kernel can take back)
        data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield from _scan_mapped(path, data, found_for, notes, raw=raw)
    finally:
        data.close()


def _scan_mapped(
    path: Path, data: Any, found_for: Callable[[dict[str, str]], list[_Found]], notes: list[str], *, raw: bool
) -> Iterator[tuple[_Found, int, Any]]:
    """`_scan_mcap`'s records of the mapped MCAP ``data``."""
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


def _estimated_messages(files: list[Path], done: int) -> int:
    """Rough total message count for progress: ~ bytes / 150 (a small JointState's size)."""
    return max(done + 1, int(sum(f.stat().st_size for f in files) / 150))
