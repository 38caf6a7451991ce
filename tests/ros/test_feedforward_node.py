"""The feedforward node on its own: tracking law, safe output when stale, saturation."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import serialize_message

from motor_ident.core.control.computed_torque import ComputedTorque

pytestmark = pytest.mark.ros


@pytest.fixture
def node(ros):
    """A feedforward node for valkyrie_arm in its own rclpy context."""
    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode

    return ros.add(FeedforwardNode, rate_limit=[1e9])


def _gravity(ff, q, theta):
    """Gravity torque of full parameters ``theta`` by the regressor path (independent of RNEA)."""
    return ComputedTorque(ff.law.regressor, ff.base, ff.law.config).gravity(q, ff.base.to_base(theta))


def _state(ff, t, q, qd):
    from motor_ident.ros.wire.conversions import make_joint_state

    ff._on_state(serialize_message(make_joint_state(ff.joints, t, q, qd, np.zeros(len(ff.joints)))))


def test_no_reference_gives_gravity_only(node) -> None:
    """Without a reference the command is the model's gravity torque at the measured position."""
    q = np.array([0.3, -0.2, 0.5, 1.0])
    _state(node, 1.0, q, np.zeros(4))
    assert "reference" in node.mode
    np.testing.assert_allclose(node.previous, _gravity(node, q, node.blend.theta), rtol=1e-12)


def test_with_true_model_feedforward_equals_inverse_dynamics(node) -> None:
    """On the reference with zero error, the command is RNEA + friction of the (true) model."""
    q, qd, qdd = np.array([0.3, -0.2, 0.5, 1.0]), np.array([0.5, -0.4, 0.3, 0.2]), np.array([1.0, 2.0, -1.0, 0.5])
    node.reference.set(np.array([0.0, 2.0]), np.stack([q, q]), np.stack([qd, qd]), np.stack([qdd, qdd]))
    _state(node, 1.0, q, qd)
    regressor = node.law.regressor
    expected = regressor.predict(node.blend.theta, q[None], qd[None], qdd[None])[0]
    np.testing.assert_allclose(
        node.previous, np.clip(expected, -node.law.config.effort_limit, node.law.config.effort_limit)
    )


def test_stale_state_triggers_safe_output(node) -> None:
    """When joint_states stop, the watchdog publishes the safe output and says so."""
    q = np.array([0.1, 0.1, 0.1, 0.1])
    _state(node, 1.0, q, np.zeros(4))
    sent = node.commands_published
    node.last_state_wall -= 10.0
    node._watchdog()
    assert node.commands_published == sent + 1
    assert "stale" in node.mode
    np.testing.assert_allclose(node.previous, _gravity(node, q, node.blend.theta), rtol=1e-12)


def test_nan_state_is_dropped_and_command_stays_finite(node) -> None:
    """A NaN in joint_states is dropped and counted; commands stay finite and saturated."""
    _state(node, 1.0, np.array([np.nan, 0.0, 0.0, 0.0]), np.zeros(4))
    assert node.rejected == 1 and node.commands_published == 0
    node.law.blend.rate = np.inf  # no blend
    node.law.set_target(node.blend.theta * 1e6)  # absurd model
    _state(node, 1.1, np.array([0.3, 0.2, 0.1, 1.0]), np.zeros(4))
    assert np.all(np.isfinite(node.previous))
    assert np.all(np.abs(node.previous) <= node.law.config.effort_limit)


def test_out_of_order_state_is_dropped_and_clock_reset_restarts(node) -> None:
    """An older or duplicate stamp is dropped; a clock that restarts is followed once
    ``clock_restart_samples`` states in a row agree on it."""
    q = np.array([0.1, 0.2, 0.3, 0.4])
    _state(node, 10.0, q, np.zeros(4))
    sent = node.commands_published
    _state(node, 9.9, q, np.zeros(4))
    _state(node, 10.0, q, np.zeros(4))
    assert node.rejected == 2 and node.commands_published == sent
    confirm = node.stamps.confirm
    for k in range(confirm):  # simulator reset / bag loop
        _state(node, 1.0 + 0.001 * k, q, np.zeros(4))
    assert node.commands_published == sent + 1 and node.last_state_time == 1.0 + 0.001 * (confirm - 1)
    assert node.rejected == 2 + confirm - 1


def test_recovers_when_state_returns(node) -> None:
    """After a stale period the next state brings the node back to its normal output."""
    q = np.array([0.3, -0.2, 0.5, 1.0])
    node.reference.set(np.array([0.0, 5.0]), np.stack([q, q]), np.zeros((2, 4)), np.zeros((2, 4)))
    _state(node, 1.0, q, np.zeros(4))
    node.last_state_wall -= 10.0
    node._watchdog()
    assert "stale" in node.mode
    _state(node, 1.001, q, np.zeros(4))
    assert node.mode.startswith("tracking")


def test_model_switch_is_blended_within_the_rate_bound(node) -> None:
    """A new model on ~/parameters moves the command at most blend_rate * dt per state (it
    would step by several N m at once) and arrives at the new model's torque."""
    from motor_ident.ros.wire.conversions import make_array

    q = np.array([0.3, -0.2, 0.5, 1.0])
    node.reference.set(np.array([0.0, 10.0]), np.stack([q, q]), np.zeros((2, 4)), np.zeros((2, 4)))
    _state(node, 1.0, q, np.zeros(4))
    before = node.previous.copy()
    heavier = 1.5 * node.blend.theta
    jump = np.abs(_gravity(node, q, heavier) - before).max()
    assert jump > 2.0  # N m: what switching at once would do
    node._on_parameters(make_array(heavier))
    dt, bound = 0.001, node.blend.rate * 0.001
    steps = []
    for k in range(1, int(1.2 * jump / bound) + 2):
        last = node.previous.copy()
        _state(node, 1.0 + k * dt, q, np.zeros(4))
        steps.append(np.abs(node.previous - last).max())
    assert max(steps) <= bound * (1 + 1e-9)
    np.testing.assert_allclose(node.previous, _gravity(node, q, heavier), rtol=1e-12)


def test_state_callback_keeps_no_memory(node) -> None:
    """10 000 states answered (tracking a reference, the 1 kHz path) keep no memory: nothing the
    callback allocates outlives it."""
    import tracemalloc

    from motor_ident.ros.wire.conversions import make_joint_state

    n = len(node.joints)
    q = np.full(n, 0.2)
    node.reference.set(np.array([0.0, 100.0]), np.stack([q, q]), np.zeros((2, n)), np.zeros((2, n)))
    states = [serialize_message(make_joint_state(node.joints, 1.0 + 1e-3 * k, q, np.zeros(n))) for k in range(10_200)]
    for data in states[:200]:  # warm up: names decoded, work arrays made, logging set up
        node._on_state(data)
    tracemalloc.start(16)
    before = tracemalloc.take_snapshot()
    for data in states[200:]:
        node._on_state(data)
    # what our code allocated, numpy's allocations inside it included; not other threads of the session
    ours = [tracemalloc.Filter(True, "*/motor_ident/*", all_frames=True)]
    after = tracemalloc.take_snapshot().filter_traces(ours)
    grown = sum(stat.size_diff for stat in after.compare_to(before.filter_traces(ours), "filename"))
    tracemalloc.stop()
    assert node.commands_published == 10_200 and node.drops.total == 0
    assert grown < 16_384, f"{grown} bytes kept over 10 000 states"
