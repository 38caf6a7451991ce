"""The pieces of the computed-torque law: reference interpolation and the blend's hold."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from motor_ident.core.control.computed_torque import ModelBlend, ReferenceBuffer


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
