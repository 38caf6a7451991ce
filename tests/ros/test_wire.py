"""The 1 kHz message path reads exactly what rclpy's deserializer reads, refuses what
`joint_state_arrays` refuses with the same reasons, never raises on a damaged buffer, and writes
the bytes rclpy's serializer writes."""

from __future__ import annotations

import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.io.joint_order import JointIndex
from motor_ident.ros.wire.conversions import NON_FINITE, joint_state_arrays
from motor_ident.ros.wire.wire import (
    MALFORMED,
    Float64ArrayReader,
    Float64ArrayWriter,
    JointStateReader,
    JointStateWriter,
)

JOINTS = ("shoulder", "elbow", "wrist")
names_strategy = st.lists(st.sampled_from([*JOINTS, "other", "ünïcode_joint", ""]), min_size=0, max_size=6)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


def ros_text(max_size: int) -> st.SearchStrategy[str]:
    """Strings a ROS string field can hold (no NUL)."""
    return st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=max_size)


@st.composite
def joint_states(draw: st.DrawFn) -> JointState:
    """Random JointState messages: shuffled, extra, missing, repeated names; fields of any length."""
    names = draw(names_strategy)
    msg = JointState()
    msg.header.stamp.sec = draw(st.integers(0, 2**31 - 1))
    msg.header.stamp.nanosec = draw(st.integers(0, 999_999_999))
    msg.header.frame_id = draw(st.text(max_size=5))
    msg.name = names
    for field in ("position", "velocity", "effort"):
        size = draw(st.sampled_from([len(names), len(names), 0, len(names) + 1]))
        setattr(msg, field, draw(st.lists(floats, min_size=size, max_size=size)))
    return msg


@settings(max_examples=300, deadline=None)
@given(msg=joint_states(), fields=st.sampled_from([("position", "velocity"), ("position", "velocity", "effort")]))
def test_reader_matches_rclpy(msg: JointState, fields: tuple[str, ...]) -> None:
    """Same arrays, or the same reason, as rclpy's message through joint_state_arrays."""
    data = serialize_message(msg)
    reader = JointStateReader(JOINTS, fields)
    reason = reader.read(data)
    expected, expected_reason = joint_state_arrays(deserialize_message(data, JointState), JointIndex(JOINTS), fields)
    assert reason == expected_reason
    if expected:
        np.testing.assert_array_equal(reader.values, np.array(expected))
        assert reader.stamp == msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        # the layout cache: a second message laid out the same, new values (read by one unpack)
        for field in fields:
            setattr(msg, field, [v + 1.0 for v in getattr(msg, field)])
        assert reader.read(serialize_message(msg)) == ""
        np.testing.assert_array_equal(reader.values, np.array(expected) + 1.0)
        # and a non-finite value in it is refused with the full read's reason
        getattr(msg, fields[-1])[msg.name.index(JOINTS[0])] = float("nan")
        assert reader.read(serialize_message(msg)).kind == NON_FINITE


@settings(max_examples=300, deadline=None)
@given(msg=joint_states(), cut=st.integers(0, 400), flip=st.integers(0, 400), byte=st.integers(0, 255))
def test_damaged_buffers_are_refused_not_raised(msg: JointState, cut: int, flip: int, byte: int) -> None:
    """Truncated or corrupted bytes give "" with finite values, or a reason: never an exception."""
    data = bytearray(serialize_message(msg))
    if flip < len(data):
        data[flip] = byte
    reader = JointStateReader(JOINTS, ("position", "velocity", "effort"))
    for damaged in (bytes(data[:cut]), bytes(data)):
        reason = reader.read(damaged)
        assert reason == "" and np.isfinite(reader.values).all() or reason


def test_truncated_message_names_the_kind() -> None:
    """A cut buffer is counted as malformed."""
    msg = JointState(name=list(JOINTS), position=[1.0, 2.0, 3.0], velocity=[0.0] * 3)
    reason = JointStateReader(JOINTS).read(serialize_message(msg)[:-9])
    assert reason and reason.kind == MALFORMED


@settings(max_examples=50, deadline=None)
@given(values=st.lists(floats, min_size=0, max_size=12))
def test_writer_bytes_equal_rclpy(values: list[float]) -> None:
    """The preallocated command buffer is what rclpy's serializer writes (but for the padding
    bytes, which rclpy leaves uninitialised), and rclpy reads back the values."""
    writer = Float64ArrayWriter(len(values))
    writer.data[:] = values
    ours, theirs = writer.serialized(), serialize_message(Float64MultiArray(data=values))
    assert len(ours) == len(theirs) == 20 + 8 * len(values)
    assert ours[:16] == theirs[:16] and ours[20:] == theirs[20:]  # bytes 16-19 pad the doubles to 8
    assert np.array_equal(deserialize_message(ours, Float64MultiArray).data, values, equal_nan=True)


def test_no_memory_kept_per_message() -> None:
    """10 000 reads and writes keep no memory: the hot path allocates nothing that outlives a call."""
    msg = JointState(name=list(JOINTS), position=[0.1, 0.2, 0.3], velocity=[0.0] * 3, effort=[1.0] * 3)
    data = serialize_message(msg)
    reader, writer = JointStateReader(JOINTS), Float64ArrayWriter(len(JOINTS))
    assert reader.read(data) == ""  # names decoded once
    tracemalloc.start(16)
    before = tracemalloc.take_snapshot()
    for _ in range(10_000):
        reader.read(data)
        np.multiply(reader.values[0], 2.0, out=writer.data)
        writer.serialized()
    # what our code allocated, numpy's allocations inside it included; not other threads of the session
    ours = [tracemalloc.Filter(True, "*/motor_ident/*", all_frames=True)]
    after = tracemalloc.take_snapshot().filter_traces(ours)
    grown = sum(stat.size_diff for stat in after.compare_to(before.filter_traces(ours), "filename"))
    tracemalloc.stop()
    assert grown < 4096, f"{grown} bytes kept over 10 000 messages"


@settings(max_examples=100, deadline=None)
@given(names=st.lists(ros_text(8), max_size=5), frame_id=ros_text(6), data=st.data())
def test_joint_state_writer_is_read_back_by_rclpy(names: list[str], frame_id: str, data: st.DataObject) -> None:
    """What the writer's buffer holds, rclpy's deserializer reads: names, frame, stamp, fields."""
    writer = JointStateWriter(names, frame_id)
    sec, nanosec = data.draw(st.integers(0, 2**31 - 1)), data.draw(st.integers(0, 999_999_999))
    writer.set_stamp(sec, nanosec)
    fields = {}
    for field in ("position", "velocity", "effort"):
        fields[field] = data.draw(st.lists(floats, min_size=len(names), max_size=len(names)))
        getattr(writer, field)[:] = fields[field]
    msg = deserialize_message(writer.serialized(), JointState)
    assert list(msg.name) == names and msg.header.frame_id == frame_id
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
    for field, values in fields.items():
        assert np.array_equal(getattr(msg, field), values, equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(floats, max_size=6),
    labels=st.lists(st.text(max_size=4), max_size=2),
    n=st.integers(0, 6),
    cut=st.integers(0, 200),
)
def test_array_reader_matches_array_values(values: list[float], labels: list[str], n: int, cut: int) -> None:
    """Command arrays: the values or the reason array_values gives; a cut buffer is refused."""
    from std_msgs.msg import MultiArrayDimension

    from motor_ident.ros.wire.conversions import array_values

    msg = Float64MultiArray(data=values)
    msg.layout.dim = [MultiArrayDimension(label=label, size=1, stride=1) for label in labels]
    data = serialize_message(msg)
    reader = Float64ArrayReader(n)
    expected, expected_reason = array_values(deserialize_message(data, Float64MultiArray), n)
    assert reader.read(data) == expected_reason
    if expected is not None:
        np.testing.assert_array_equal(reader.values, expected)
    reason = reader.read(data[: min(cut, len(data) - 1)])  # cut short: refused (an empty array may lose only padding)
    assert reason or n == 0
