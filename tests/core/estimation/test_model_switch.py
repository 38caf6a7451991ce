"""Switching models: the gate's physical-validity condition and the feedforward's blend."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.control.computed_torque import ComputedTorque, FeedforwardConfig, ModelBlend
from motor_ident.core.estimation.constraints import violations
from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier
from motor_ident.errors import ConfigError
from motor_ident.schema import build
from motor_ident.sim.synthetic import excitation_record


def _identify(arm: dict, theta_data: np.ndarray, criterion: str = "improvement") -> OnlineIdentifier:
    """Feed 8 s of 1 kHz excitation whose torques come from ``theta_data`` (noise 0.1 N m) to an
    identifier whose nominal model is 30 % heavier than the truth."""
    regressor, base = arm["regressor"], arm["base"]
    record, _ = excitation_record(regressor, theta_data, duration=8.0, rate_hz=1000.0, noise_std=0.1, seed=5)
    config = build(IdentifierConfig, {"refit_period": 0.5, "gate_criterion": criterion})
    ident = OnlineIdentifier(regressor, base, 1.3 * arm["theta_true"], config)
    for k in range(record.t.size):
        ident.add_sample(record.t[k], record.q[k], record.qd[k], record.tau[k])
    return ident


def test_gate_opens_on_a_consistent_estimate_of_a_physical_robot(arm: dict) -> None:
    """Data of the real arm: the gate opens, and the active model is physically valid and predicts
    held-out torque as well as the raw window estimate (within 5 %)."""
    ident = _identify(arm, arm["theta_true"])
    verdict = ident.gate.consistency
    assert ident.gate_open, ident.gate.reason
    assert verdict is not None and verdict.consistent
    assert_allclose(ident.active_theta, verdict.theta_base)
    assert violations(verdict.theta, arm["constraints"], tolerance=1e-6) == []
    assert_allclose(arm["base"].projection @ verdict.theta, verdict.theta_base, rtol=1e-6, atol=1e-9)
    assert arm["heldout_rmse"](ident.active_theta) <= 1.05 * arm["heldout_rmse"](ident.fit.theta)
    assert arm["heldout_rmse"](ident.active_theta) < 0.1  # N m; the nominal model is far off
    assert arm["heldout_rmse"](ident.theta_nominal) > 1.0


@pytest.mark.parametrize(
    ("criterion", "says"),
    [("r2", "physically inconsistent"), ("improvement", "nearest physically consistent parameters fit the window")],
)
def test_gate_refuses_data_no_physical_robot_produces(arm: dict, criterion: str, says: str) -> None:
    """Torques of an arm whose elbow friction pushes (fv < 0): R^2 and conditioning pass, the
    physical check does not (R^2 gate: chi-square; improvement gate: what the nearest valid
    parameters cost in torque); the nominal model stays active and the reason names the parameter."""
    regressor = arm["regressor"]
    theta = arm["theta_true"].copy()
    fv = regressor.names.index(next(name for name in regressor.names if name.endswith("fv") and "elbow" in name))
    theta[fv] = -2.0
    ident = _identify(arm, theta, criterion)
    assert ident.fit is not None and np.min(ident.fit.r2_uncentred) >= 0.95
    assert ident.fit.condition_number < ident.config.gate.max_condition_number
    assert not ident.gate_open
    assert says in ident.gate.reason and regressor.names[fv] in ident.gate.reason, ident.gate.reason
    assert_allclose(ident.active_theta, ident.theta_nominal)


def _switch_share(
    arm: dict, blend: ModelBlend, targets: dict[int, np.ndarray], cycles: int
) -> tuple[float, np.ndarray]:
    """Run the law along a moving reference at 1 kHz, switching models at the given cycles.

    Returns the largest share of a command step due to the switch, |rows_k (theta_k - theta_k-1)|,
    and the last command's rows.
    """
    n = arm["regressor"].robot.n
    gains = {"kp": np.full(n, 100.0), "kd": np.full(n, 20.0), "effort_limit": np.full(n, 1e3)}
    law = ComputedTorque(arm["regressor"], arm["base"], FeedforwardConfig(**gains, rate_limit=np.full(n, np.inf)))
    dt = 0.001
    t = np.arange(cycles) * dt
    q = 0.5 * np.sin(np.outer(t, [1.0, 1.3, 0.7, 2.0]))
    qd = 0.5 * np.cos(np.outer(t, [1.0, 1.3, 0.7, 2.0])) * [1.0, 1.3, 0.7, 2.0]
    worst, theta_before = 0.0, blend.theta.copy()
    rows = np.zeros(0)
    for k in range(cycles):
        if k in targets:
            blend.set_target(targets[k])
        rows = law.command_rows(q[k], qd[k], q[k], qd[k], np.zeros(4))
        theta = blend.step(rows, dt)
        worst = max(worst, float(np.abs(rows @ (theta - theta_before)).max()))
        theta_before = theta.copy()
    return worst, rows


def test_blend_bounds_the_switch_and_arrives(arm: dict) -> None:
    """Switching nominal -> identified -> (mid-blend) another model on a moving arm: the switch
    never adds more than rate * dt to a command, though switching at once adds several N m,
    and the blend ends exactly on the last model."""
    base = arm["base"]
    nominal = base.to_base(1.3 * arm["theta_true"])
    identified = base.to_base(arm["theta_true"])
    other = base.to_base(0.8 * arm["theta_true"])
    blend = ModelBlend(nominal, rate=50.0)
    worst, rows = _switch_share(arm, blend, {100: identified, 400: other}, 3000)
    assert worst <= 50.0 * 0.001 * (1 + 1e-9)
    assert np.abs(rows @ (identified - nominal)).max() > 1.0  # the step an instant switch would make
    assert blend.progress == 1.0
    assert_allclose(blend.theta, other, rtol=0, atol=0)
    instant = ModelBlend(nominal, rate=np.inf)
    worst_instant, _ = _switch_share(arm, instant, {100: identified}, 200)
    assert worst_instant > 10 * 50.0 * 0.001


def test_blend_rate_is_checked() -> None:
    """A non-positive or NaN rate is refused, naming the parameter."""
    for rate in (0.0, -1.0, np.nan):
        with pytest.raises(ConfigError, match="blend_rate"):
            ModelBlend(np.zeros(3), rate=rate)
