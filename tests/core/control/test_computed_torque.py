"""The pieces of the computed-torque law: reference interpolation, the blend's hold, saturation."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.control.computed_torque import FeedforwardConfig, ModelBlend, ReferenceBuffer, saturate


def test_reference_interpolates_like_numpy_in_any_query_order(rng) -> None:
    """Linear interpolation equals np.interp per joint for forward, random and on-sample queries;
    outside the samples there is no reference."""
    n = 3
    t = np.sort(rng.uniform(0.0, 10.0, 300))
    q, qd, qdd = (rng.standard_normal((300, n)) for _ in range(3))
    reference = ReferenceBuffer(n)
    reference.set(t, q, qd, qdd)
    forward = np.sort(rng.uniform(t[0], t[-1], 2000))
    for query in [*forward, *rng.uniform(t[0], t[-1], 500), *t]:
        sample = reference.sample(float(query))
        assert sample is not None
        for got, table in zip(sample, (q, qd, qdd)):
            expected = [np.interp(query, t, table[:, j]) for j in range(n)]
            assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=f"t = {query}")
    assert reference.sample(t[0] - 1e-6) is None and reference.sample(t[-1] + 1e-6) is None


def test_blend_holds_at_zero_dt_and_bounds_each_step() -> None:
    """``advance`` with dt = 0 keeps the switch where it is; each step moves s by rate dt / difference."""
    blend = ModelBlend(np.zeros(2), rate=10.0)
    blend.set_target(np.ones(2))
    blend.advance(5.0, 0.0)
    assert blend.progress == 0.0
    blend.advance(5.0, 0.1)  # 10 N m/s * 0.1 s of a 5 N m change
    assert_allclose(blend.progress, 0.2)
    assert_allclose(blend.theta, [0.2, 0.2])


def _saturate_reference(tau, previous, config, dt):
    """The obvious numpy form of `saturate`: non-finite -> previous, rate limit, effort limit."""
    out = np.where(np.isfinite(tau), tau, previous)
    step = config.rate_limit * dt if dt > 0.0 else np.where(np.isinf(config.rate_limit), np.inf, 0.0)
    return np.clip(np.clip(out, previous - step, previous + step), -config.effort_limit, config.effort_limit)


@pytest.mark.parametrize("dt", [0.001, 0.0, -0.001, 0.5])
def test_saturate_equals_the_numpy_form(rng, dt: float) -> None:
    """Per-joint float saturation gives exactly the numpy form's commands, non-finite requests,
    unlimited rates and no elapsed time included; the config's limits cannot change under it."""
    n = 7
    config = FeedforwardConfig(
        kp=np.zeros(n),
        kd=np.zeros(n),
        effort_limit=rng.uniform(1.0, 50.0, n),
        rate_limit=np.where(rng.random(n) < 0.3, np.inf, rng.uniform(0.0, 5000.0, n)),
    )
    with pytest.raises(ValueError):
        config.rate_limit[0] = 1.0
    for _ in range(500):
        tau = rng.standard_normal(n) * rng.choice([1.0, 10.0, 100.0])
        tau[rng.random(n) < 0.1] = rng.choice([np.nan, np.inf, -np.inf])
        previous = rng.uniform(-1.0, 1.0, n) * config.effort_limit
        expected = _saturate_reference(tau, previous, config, dt)
        out = np.empty(n)
        assert saturate(tau, previous, config, dt, out=out) is out
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(saturate(tau, previous, config, dt), expected)
