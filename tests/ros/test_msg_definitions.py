"""ros2msg schemas from the installed .msg files: dependencies found, each once, and decodable by
an independent reader (mcap-ros2-support) into the values rclpy serialized."""

from __future__ import annotations

import pytest
from mcap.records import Schema
from mcap_ros2.decoder import DecoderFactory

from motor_ident.ros.wire.msg_definitions import (
    SEPARATOR,
    MessageDefinitionError,
    dependencies,
    ros2msg_schema,
)


def test_dependencies_of_fields_not_constants_or_primitives() -> None:
    """Package-relative and qualified types are found in order, once; primitives, bounded strings,
    arrays and constants are not dependencies."""
    text = (
        "# a comment naming std_msgs/Header\n"
        "byte OK=0\n"
        "string<=8 label\n"
        "std_msgs/Header header\n"
        "KeyValue[] values\n"
        "KeyValue[<=3] more\n"
        "geometry_msgs/Vector3[3] axes\n"
        "float64[] data\n"
    )
    assert dependencies(text, "diagnostic_msgs") == [
        "std_msgs/Header",
        "diagnostic_msgs/KeyValue",
        "geometry_msgs/Vector3",
    ]


def test_schema_lists_every_dependency_once_after_a_separator() -> None:
    """DiagnosticArray: the root text, then Header, Time, DiagnosticStatus, KeyValue, each once."""
    schema = ros2msg_schema("diagnostic_msgs/msg/DiagnosticArray")
    blocks = schema.split(SEPARATOR + "\n")
    names = [b.splitlines()[0] for b in blocks[1:]]
    assert sorted(names) == sorted(
        [
            "MSG: std_msgs/Header",
            "MSG: builtin_interfaces/Time",
            "MSG: diagnostic_msgs/DiagnosticStatus",
            "MSG: diagnostic_msgs/KeyValue",
        ]
    )
    assert "DiagnosticStatus[] status" in blocks[0]


@pytest.mark.parametrize(
    "msgtype",
    [
        "sensor_msgs/msg/JointState",
        "std_msgs/msg/Float64MultiArray",
        "diagnostic_msgs/msg/DiagnosticArray",
        "trajectory_msgs/msg/JointTrajectory",
        "geometry_msgs/msg/WrenchStamped",
    ],
)
def test_independent_reader_decodes_rclpy_bytes(msgtype: str) -> None:
    """mcap-ros2-support builds a decoder from the schema that reads rclpy's CDR bytes of a filled
    message back to the same field values."""
    from rclpy.serialization import serialize_message

    from motor_ident.ros.recording.bag_player import message_class

    cls = message_class(msgtype)
    msg = cls()
    if msgtype.endswith("JointState"):
        msg.name, msg.position, msg.effort = ["a", "b"], [0.5, -1.0], [2.0, 3.0]
        msg.header.stamp.sec, msg.header.frame_id = 12, "base"
    elif msgtype.endswith("Float64MultiArray"):
        msg.data = [1.0, 2.5]
    schema = Schema(id=1, name=msgtype, encoding="ros2msg", data=ros2msg_schema(msgtype).encode())
    decoder = DecoderFactory().decoder_for("cdr", schema)
    assert decoder is not None
    decoded = decoder(serialize_message(msg))
    if msgtype.endswith("JointState"):
        assert (decoded.name, list(decoded.position), list(decoded.effort)) == (["a", "b"], [0.5, -1.0], [2.0, 3.0])
        assert (decoded.header.stamp.sec, decoded.header.frame_id) == (12, "base")
    elif msgtype.endswith("Float64MultiArray"):
        assert list(decoded.data) == [1.0, 2.5]


def test_missing_type_names_the_package_to_install() -> None:
    """A type whose package is not installed is refused naming the PyPI package."""
    with pytest.raises(MessageDefinitionError, match="ros-no-such-msgs"):
        ros2msg_schema("no_such_msgs/msg/Thing")
