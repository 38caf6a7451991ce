"""Equations left out per joint: masked statistics, the masked sliding window, and the online
identifier's ``min_velocity`` on a joint that sticks at its velocity reversals."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from motor_ident.core.estimation.gate import GateConfig
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.least_squares import RegressionStatistics, fit_metrics, ols
from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier
from motor_ident.core.estimation.sliding_window import SlidingWindowLS
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.synthetic import excitation_record


def _problem(N: int, n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random regressor (N, n, p), torques (N, n) and a mask (N, n) leaving out ~30 % of equations."""
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(N, n, p)) * rng.uniform(0.1, 10.0, size=p)
    tau = Y @ rng.normal(size=p) + rng.uniform(0.05, 0.5, size=n) * rng.standard_normal((N, n)) + rng.normal(size=n)
    return Y, tau, rng.random((N, n)) > 0.3


def _stacked(Y: np.ndarray, tau: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kept equations as one-joint samples: Y (M, 1, p), tau (M, 1)."""
    return Y[mask][:, None, :], tau[mask][:, None]


def test_masked_statistics_equal_statistics_without_those_equations() -> None:
    """Counts, sums, R^2 both ways, RMSE, NRMSE and sigma per joint, and the OLS estimate and its
    covariance, equal those of the data with the masked equations removed."""
    N, n, p = 200, 3, 5
    Y, tau, mask = _problem(N, n, p, 0)
    mask[:, 2] &= np.arange(N) < 120  # unequal counts per joint
    mask[5] = False  # a sample with no equation left
    stats = RegressionStatistics(n, p)
    stats.add(Y, tau, mask=mask)
    assert stats.count == np.count_nonzero(mask.any(axis=1)) < N
    assert_array_equal(stats.counts, mask.sum(axis=0))
    theta = np.random.default_rng(1).normal(size=p)
    m = stats.metrics(theta)
    fit = stats.ols()
    for j in range(n):
        Yj, tj = Y[mask[:, j], j], tau[mask[:, j], j]
        assert_allclose(stats.A[j], Yj.T @ Yj, rtol=1e-12)
        assert_allclose(stats.b[j], Yj.T @ tj, rtol=1e-12)
        assert_allclose(stats.ysum[j], tj.sum(), rtol=1e-12)
        assert (stats.ymin[j], stats.ymax[j]) == (tj.min(), tj.max())
        ref = fit_metrics(tj[:, None], (Yj @ theta)[:, None])
        for name in ("r2", "r2_uncentred", "rmse", "nrmse"):
            assert_allclose(getattr(m, name)[j], getattr(ref, name)[0], rtol=1e-9, err_msg=name)
        e = tj - Yj @ fit.theta
        assert_allclose(fit.sigma[j], np.sqrt(e @ e / (len(tj) - p / n)), rtol=1e-9)
    reference = ols(*_stacked(Y, tau, mask))
    assert_allclose(fit.theta, reference.theta, rtol=1e-9)
    assert_allclose(fit.covariance, reference.covariance, rtol=1e-8)
    assert fit.n_samples == stats.count and stats.equations == mask.sum()


def test_masked_statistics_merge_scale_and_remove_exactly() -> None:
    """Chunks merged equal the whole; removing with the same mask leaves the rest; scaling scales
    the counts; a mask of all True is bit for bit the unmasked path."""
    Y, tau, mask = _problem(120, 2, 4, 2)
    whole = RegressionStatistics(2, 4)
    whole.add(Y, tau, mask=mask)
    merged = RegressionStatistics(2, 4)
    for chunk in (slice(0, 50), slice(50, 120)):
        part = RegressionStatistics(2, 4)
        part.add(Y[chunk], tau[chunk], mask=mask[chunk])
        merged.merge(part)
    for name in ("A", "b", "yy", "ysum", "counts", "ymin", "ymax"):
        assert_allclose(getattr(merged, name), getattr(whole, name), rtol=1e-12, err_msg=name)
    assert merged.count == whole.count
    whole.add(Y[:50], tau[:50], -1.0, mask[:50])
    rest = RegressionStatistics(2, 4)
    rest.add(Y[50:], tau[50:], mask=mask[50:])
    for name in ("A", "b", "yy", "ysum", "counts"):
        assert_allclose(getattr(whole, name), getattr(rest, name), rtol=1e-9, atol=1e-9, err_msg=name)
    rest.scale(0.5)
    assert_allclose(rest.counts, 0.5 * mask[50:].sum(axis=0))
    plain, all_true = RegressionStatistics(2, 4), RegressionStatistics(2, 4)
    plain.add(Y, tau)
    all_true.add(Y, tau, mask=np.ones_like(mask))
    for name in ("A", "b", "yy", "ysum", "counts", "ymin", "ymax"):
        assert_array_equal(getattr(all_true, name), getattr(plain, name), err_msg=name)
    with pytest.raises(Exception, match="mask"):
        plain.add(Y, tau, mask=mask[:, :1])


@pytest.mark.parametrize("forgetting", [1.0, 0.97])
def test_masked_window_equals_batch_on_its_kept_equations(forgetting: float) -> None:
    """After 700 adds through a window of 60 (removals, periodic refreshes), estimate, R^2, RMSE
    and counts equal a batch fit of the window's kept equations (weighted by lambda^age)."""
    N, n, p, W = 700, 3, 5, 60
    Y, tau, mask = _problem(N, n, p, 3)
    mask[::7] = True  # some samples with every equation
    window = SlidingWindowLS(n, p, W, forgetting=forgetting)
    for k in range(N - 1):
        window.add(Y[k], tau[k], mask=mask[k])
    window.add(Y[-1], tau[-1])  # no mask: every equation
    mask[-1] = True
    fit = window.solve()
    Yw, tw, mw = Y[-W:], tau[-W:], mask[-W:]
    assert_array_equal(window.window_mask(), mw)
    w = np.sqrt(forgetting ** np.arange(W - 1, -1, -1.0))
    reference = ols(*_stacked(Yw * w[:, None, None], tw * w[:, None], mw))
    assert_allclose(fit.theta, reference.theta, rtol=1e-8)
    assert_allclose(window.stats.counts, (w**2) @ mw, rtol=1e-9)
    if forgetting == 1.0:
        for j in range(n):
            Yj, tj = Yw[mw[:, j], j], tw[mw[:, j], j]
            ref = fit_metrics(tj[:, None], (Yj @ fit.theta)[:, None])
            assert_allclose(fit.r2[j], ref.r2[0], rtol=1e-9)
            assert_allclose(fit.r2_uncentred[j], ref.r2_uncentred[0], rtol=1e-9)
            assert_allclose(fit.rmse[j], ref.rmse[0], rtol=1e-9)


def _sticking_record(joint: int, dead_zone: float, seed: int) -> tuple:
    """szabo_3dof at 1 kHz whose ``joint`` sticks while |qd| of the excitation is below
    ``dead_zone`` [rad/s]; while stuck its torque is anywhere inside +-0.8 of its dry friction."""
    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    theta = config.nominal_parameters(regressor)
    record, _ = excitation_record(regressor, theta, duration=14.0, rate_hz=1000.0, noise_std=0.0, seed=seed)
    q, qd = record.q.copy(), record.qd.copy()
    dt = float(record.t[1] - record.t[0])
    v = qd[:, joint]
    qd[:, joint] = np.sign(v) * np.maximum(np.abs(v) - dead_zone, 0.0)
    q[:, joint] = q[0, joint] + np.concatenate([[0.0], np.cumsum(qd[:-1, joint]) * dt])
    qdd = np.gradient(qd, dt, axis=0)
    tau = np.einsum("sjp,p->sj", regressor.rows(q, qd, qdd), theta)
    stuck = qd[:, joint] == 0.0
    dry = theta[regressor.names.index(f"joint{joint + 1}.tau_s")]
    rng = np.random.default_rng(seed)
    tau[stuck, joint] += 0.8 * dry * np.sin(2 * np.pi * 0.7 * record.t[stuck] + rng.uniform(0, 2 * np.pi))
    tau += 0.01 * rng.standard_normal(tau.shape)
    return config, regressor, theta, record.t, q, qd, tau, stuck


def _identify(record: tuple, min_velocity: float) -> tuple[OnlineIdentifier, np.ndarray]:
    """Feed the record through an online identifier; returns it and its full estimate (p,)."""
    _, regressor, theta, t, q, qd, tau, _ = record
    base = structural_base_parameters(regressor)
    settings = IdentifierConfig(
        window_duration=8.0, min_velocity=min_velocity, alpha=1.0, gate=GateConfig(require_consistent=False)
    )
    ident = OnlineIdentifier(regressor, base, theta, settings)
    for k in range(len(t)):
        ident.add_sample(float(t[k]), q[k], qd[k], tau[k])
    fit = ident.refit()
    assert fit is not None and ident.window.full
    return ident, base.to_full(fit.theta, theta)


def test_identifier_leaves_out_the_sticking_joint() -> None:
    """A joint stuck 34 % of the time (torque anywhere in its static band): with min_velocity
    0.05 rad/s only its equations near rest leave the window, its R^2 rises above 0.999 and the
    model's torques on the moving samples are 3x closer to the truth than with every equation."""
    joint = 1
    record = _sticking_record(joint, dead_zone=0.15, seed=4)
    _, regressor, theta, t, q, qd, _, stuck = record
    assert 0.25 < stuck.mean() < 0.45
    rows = regressor.rows(q, qd, np.gradient(qd, t[1] - t[0], axis=0))
    moving = np.abs(qd[:, joint]) >= 0.05
    truth = rows[moving] @ theta

    def error(theta_hat: np.ndarray) -> np.ndarray:
        """RMS torque error per joint on the samples where the joint moves [N m], (n,)."""
        return np.sqrt(np.mean((rows[moving] @ theta_hat - truth) ** 2, axis=0))

    kept, theta_kept = _identify(record, 0.0)
    assert_array_equal(kept.samples_near_rest, 0)
    assert_array_equal(kept.window.stats.counts, kept.window.window)
    left_out, theta_left_out = _identify(record, 0.05)
    near_rest, counts = left_out.samples_near_rest, left_out.window.stats.counts
    assert near_rest[joint] > 2 * near_rest[np.arange(3) != joint].max()
    assert counts[joint] < 0.7 * left_out.window.window  # the stuck joint's equations left out ...
    assert np.all(counts[np.arange(3) != joint] > 0.85 * left_out.window.window)  # ... not the others'
    assert left_out.fit is not None and kept.fit is not None
    assert kept.fit.r2[joint] < 0.99 < 0.999 < left_out.fit.r2[joint]
    e_kept, e_left_out = error(theta_kept), error(theta_left_out)
    assert e_left_out[joint] < 0.025 < 0.04 < e_kept[joint], (e_left_out, e_kept)
    assert np.all(e_left_out < e_kept / 3.0), (e_left_out, e_kept)
