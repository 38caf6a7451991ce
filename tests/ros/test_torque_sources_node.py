"""The identifier on motor currents, PWM and F/T wrenches from sim_robot over DDS; a silent source closes the gate."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.ros

SOURCES = {
    # robot, sim_robot's readings, the identifier's settings besides its torque source
    "motor_current": ("valkyrie_arm", {"motor_effort": "motor_current"}, {}),
    # Joint torques from one wrench share its noise: the window's consistency test assumes
    # independent noise per joint and measured chi2 52.7 against its 56.1 limit here, so it is off
    # for this case (the gate's R2, buffer and condition number still decide).
    "ft_sensor": ("valkyrie_arm", {"publish_wrench": True}, {"require_consistent": False}),
    "motor_pwm": ("icub_torso", {"motor_effort": "motor_pwm"}, {}),
}


@pytest.mark.parametrize("kind", list(SOURCES))
def test_gate_opens_on_each_torque_source(kind: str) -> None:
    """sim_robot publishes the source's measurement, the identifier pairs it by stamp: the gate opens,
    /diagnostics names the source, no joint state is dropped."""
    from diagnostic_msgs.msg import DiagnosticArray

    from motor_ident.ros.runtime.runner import node_class, scenario_nodes
    from tests.ros.conftest import Ros

    robot, sim, identifier_settings = SOURCES[kind]
    scenario = REPO / "config" / "scenarios" / f"{robot}.yaml"
    overrides = {
        "identifier": {"torque_source": kind, "diagnostics_period": 0.5, **identifier_settings},
        "sim_robot": {"lockstep": True, "duration": 14.0, **sim},
    }
    with Ros(["--ros-args", "--params-file", str(scenario)]) as ros:
        statuses: list[dict[str, str]] = []
        probe = ros.probe()
        probe.create_subscription(
            DiagnosticArray,
            "/diagnostics",
            lambda msg: statuses.extend(
                {kv.key: kv.value for kv in s.values} for s in msg.status if s.name == "motor_ident: identifier"
            ),
            10,
        )
        names = [name for name in scenario_nodes(scenario) if name != "sim_robot"] + ["sim_robot"]
        nodes = {name: ros.add(node_class(name), **overrides.get(name, {})) for name in names}  # robot last
        identifier = nodes["identifier"]
        opened = ros.spin_until(lambda: identifier.core.gate_open or nodes["sim_robot"].finished, timeout=240.0)
        assert opened and identifier.core.gate_open, identifier.core.gate.reason
        assert ros.spin_until(lambda: any(s.get("torque_source") == kind for s in statuses), timeout=30.0)
        assert identifier.drops.total == 0, identifier.drops.counts
        assert min(identifier.core.fit.r2) > 0.9


def test_silent_motor_states_close_the_gate_with_a_reason(ros) -> None:
    """Joint states without motor_states: every state waits at most its bound, is dropped as late, and
    after secondary_timeout /diagnostics says which topic is silent; the node keeps running."""
    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.wire.conversions import make_joint_state

    node = ros.add(IdentifierNode, torque_source="motor_current", secondary_timeout=0.2, diagnostics_period=60.0)
    joints = node.config.joints
    for k in range(300):
        node._on_state(make_joint_state(joints, 0.001 * (k + 1), np.zeros(4), np.zeros(4), np.zeros(4)))
    assert node.drops.counts.get("secondary sample late or missing", 0) == 200
    k, deadline = 300, time.monotonic() + 10.0
    while not node.inputs.stale() and time.monotonic() < deadline:  # joint states go on, motor_states silent
        k += 1
        node._on_state(make_joint_state(joints, 0.001 * k, np.zeros(4), np.zeros(4), np.zeros(4)))
        time.sleep(0.01)
    node._publish_diagnostics()
    assert not node.core.gate_open
    assert "no message on /motor_states (motor_current)" in node._stale
    assert node.core.resets == 1, "the buffer was emptied once, when the topic went stale"
