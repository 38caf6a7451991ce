"""Rigid-body velocity solver and deformation from dual encoders."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.elastic.dual_encoder import (
    RigidVelocitySolver,
    deformation,
    rigid_body_velocity,
    rigid_velocity_weights,
)
from motor_ident.errors import DataError
from motor_ident.papers.xin.bench import xin_bench_parameters
from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig


def test_rigid_velocity_has_no_resonance() -> None:
    """On the bench, alpha(s) v_m + beta(s) v_l equals the rigid body tau / (J s + B) (Xin et al. 2020, eq. 6)."""
    p = xin_bench_parameters()
    bench = ElasticJointBench(p, encoders=EncoderConfig(0, 0), substeps=10)
    rng = np.random.default_rng(3)
    tau = np.repeat(rng.normal(0.0, 50.0, 300), 10)
    v_m, v_l = np.zeros(tau.size), np.zeros(tau.size)
    for k, u in enumerate(tau):
        bench.step(u)
        v_m[k], v_l[k] = bench.x[1], bench.x[3]
    v_r = rigid_body_velocity(v_m, v_l, p, 1000.0)
    # independent reference: the rigid body integrated exactly under the same held torque
    pole = np.exp(-p.total_damping / 1000.0 / p.total_inertia)
    ref = np.zeros(tau.size)
    x = 0.0
    for k, u in enumerate(tau):
        x = pole * x + (1 - pole) / p.total_damping * u
        ref[k] = x
    scale = np.ptp(ref)
    assert np.max(np.abs(v_r - ref)) < 0.02 * scale
    assert np.max(np.abs(v_m - ref)) > 0.05 * scale  # the motor velocity itself rings


def test_streaming_solver_equals_batch(rng: np.random.Generator) -> None:
    """RigidVelocitySolver sample by sample gives the batch filter's output."""
    p = xin_bench_parameters()
    v_m, v_l = rng.normal(size=200), rng.normal(size=200)
    solver = RigidVelocitySolver(p, 1000.0)
    stream = np.array([solver.update(a, b) for a, b in zip(v_m, v_l)])
    np.testing.assert_allclose(stream, rigid_body_velocity(v_m, v_l, p, 1000.0), atol=1e-12)


def test_weights_sum_to_one_at_dc_and_high_frequency() -> None:
    """alpha + beta = 1: a common velocity passes unchanged."""
    p = xin_bench_parameters()
    a, b, _ = rigid_velocity_weights(p)
    assert a + b == pytest.approx(1.0)
    v = np.full(100, 0.3)
    np.testing.assert_allclose(rigid_body_velocity(v, v, p, 1000.0), v)


def test_deformation_through_gear_ratio() -> None:
    """delta = theta_m / N - theta_l, and mismatched shapes are refused."""
    np.testing.assert_allclose(deformation([160.0, 320.0], [0.9, 2.0], 160.0), [0.1, 0.0])
    with pytest.raises(DataError):
        deformation([1.0, 2.0], [1.0], 160.0)
