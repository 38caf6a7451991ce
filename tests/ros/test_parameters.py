"""Node parameters declared from the settings classes: descriptors, read-only refusal, live changes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


@pytest.fixture
def ros_context():
    """An initialised rclpy context, shut down afterwards."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.shutdown(context=context)


@pytest.fixture
def identifier(ros_context):
    """A real identifier node (no consistency check: no SDP to compile), destroyed afterwards."""
    from rclpy.parameter import Parameter

    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.runtime.lifecycle import start

    node = IdentifierNode(context=ros_context, parameter_overrides=[Parameter("require_consistent", value=False)])
    start(node)  # configured and active, as launch starts it
    yield node
    node.destroy_node()


def test_descriptor_carries_unit_range_and_read_only(identifier) -> None:
    """window_duration: range 0..3600, unit and restart note in the description; not read-only
    (a managed node takes it while unconfigured: test_reconfigure_applies_new_parameters)."""
    d = identifier.describe_parameter("window_duration")
    assert not d.read_only
    assert (d.floating_point_range[0].from_value, d.floating_point_range[0].to_value) == (0.0, 3600.0)
    assert "[s]" in d.description and "[restart to change]" in d.description
    r2 = identifier.describe_parameter("r2_threshold")
    assert not r2.read_only
    assert (r2.floating_point_range[0].from_value, r2.floating_point_range[0].to_value) == (0.0, 1.0)
    assert "[demo]" in identifier.describe_parameter("nominal_inertia_scale").description


def test_read_only_parameter_refused_with_reason(identifier) -> None:
    """Setting window_duration while configured is refused, naming how to change it; the buffer keeps its size."""
    from rclpy.parameter import Parameter

    (result,) = identifier.set_parameters([Parameter("window_duration", value=8.0)])
    assert not result.successful
    assert "window_duration" in result.reason and "apply at configure" in result.reason
    assert identifier.get_parameter("window_duration").value == 5.0
    assert identifier.core.config.window_duration == 5.0


def test_live_parameter_applied_to_the_gate(identifier) -> None:
    """r2_threshold 0.8 reaches the running gate; 1.5 is refused with key, value and range."""
    from rclpy.parameter import Parameter

    (ok,) = identifier.set_parameters([Parameter("r2_threshold", value=0.8)])
    assert ok.successful
    assert identifier.core.gate.config.r2_threshold == 0.8
    assert identifier.settings.core.gate.r2_threshold == 0.8
    (bad,) = identifier.set_parameters([Parameter("r2_hysteresis", value=0.9)])
    assert not bad.successful and "r2_hysteresis = 0.9" in bad.reason
    (bad,) = identifier.set_parameters([Parameter("r2_definition", value="adjusted")])
    assert not bad.successful and "r2_definition = 'adjusted'" in bad.reason and "centred" in bad.reason
    assert identifier.core.gate.config.r2_threshold == 0.8
    assert identifier.core.gate.config.r2_definition == "uncentred"


def test_integer_for_a_float_refused_at_start(ros_context) -> None:
    """alpha: 1 (an integer) stops the node with the parameter named, as a scenario file would."""
    from rclpy.parameter import Parameter

    from motor_ident.errors import ConfigError
    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.runtime.lifecycle import start

    with pytest.raises(ConfigError, match=r"node identifier: parameter: alpha = 1: expected a float"):
        start(IdentifierNode(context=ros_context, parameter_overrides=[Parameter("alpha", value=1)]))


def test_out_of_range_start_value_refused_in_the_settings_words(ros_context) -> None:
    """window_duration: 0 at start is refused with the schema's range, as the scenario loader words it."""
    from rclpy.parameter import Parameter

    from motor_ident.errors import ConfigError
    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.runtime.lifecycle import start
    from motor_ident.scenario.loader import load_scenario

    with pytest.raises(ConfigError) as node_error:
        start(IdentifierNode(context=ros_context, parameter_overrides=[Parameter("window_duration", value=0.0)]))
    with pytest.raises(ConfigError) as file_error:
        load_scenario("valkyrie_arm", {"identifier": {"window_duration": 0.0}})
    expected = str(file_error.value).split("window_duration = 0.0: ")[1]
    assert f"window_duration = 0.0: {expected}" in str(node_error.value) and "Reason" not in str(node_error.value)


def test_feedforward_live_gains_reach_the_control_law(ros_context) -> None:
    """kp [50] and blend_rate 5 reach the running law (every joint); kp of 2 values for the 4-joint
    arm is refused by name and leaves the gains as they were; effort_limit unset = the URDF's."""
    import numpy as np
    from rclpy.parameter import Parameter

    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode
    from motor_ident.ros.runtime.lifecycle import start

    node = start(FeedforwardNode(context=ros_context))
    try:
        n = node.law.config.kp.size
        assert n == 4
        np.testing.assert_array_equal(node.law.config.effort_limit, node.urdf_limit)
        ok = node.set_parameters_atomically([Parameter("kp", value=[50.0]), Parameter("blend_rate", value=5.0)])
        assert ok.successful
        np.testing.assert_array_equal(node.law.config.kp, np.full(n, 50.0))
        assert node.blend.rate == 5.0
        (bad,) = node.set_parameters([Parameter("kp", value=[1.0, 2.0])])
        assert not bad.successful and "kp = [1.0, 2.0]" in bad.reason and "or 4" in bad.reason
        np.testing.assert_array_equal(node.law.config.kp, np.full(n, 50.0))
        (bad,) = node.set_parameters([Parameter("state_timeout", value=0.5)])
        assert not bad.successful and "apply at configure" in bad.reason
        (ok,) = node.set_parameters([Parameter("effort_limit", value=[3.0])])
        assert ok.successful
        np.testing.assert_array_equal(node.law.config.effort_limit, np.full(n, 3.0))
    finally:
        node.destroy_node()
