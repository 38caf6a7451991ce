"""Physically consistent identification: pseudo-inertia maps, both estimators, the online check."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.testing import assert_allclose

from motor_ident.core.estimation.consistency import ConsistencyChecker
from motor_ident.core.estimation.consistent_fit import consistent_least_squares
from motor_ident.core.estimation.constraints import physical_constraints, violations
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.least_squares import RegressionStatistics, ols
from motor_ident.core.estimation.pseudo_inertia import (
    inertial_from_pseudo_inertia,
    inertial_to_log_cholesky,
    log_cholesky_to_inertial,
    pseudo_inertia,
)
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.synthetic import excitation_record


def _statistics(arm: dict, *, duration: float, velocity_amplitude: float, noise: float):
    regressor, base = arm["regressor"], arm["base"]
    record, _ = excitation_record(
        regressor,
        arm["theta_true"],
        duration=duration,
        rate_hz=100.0,
        noise_std=noise,
        velocity_amplitude=velocity_amplitude,
        seed=4,
    )
    Y = base.base_regressor(regressor.rows(record.q, record.qd, record.qdd))
    return Y, record.tau, RegressionStatistics.from_arrays(Y, record.tau)


def _random_body(rng: np.random.Generator) -> pin.Inertia:
    """A physically valid body: a cloud of 6 point masses (so its pseudo-inertia is positive definite)."""
    masses = rng.uniform(0.1, 2.0, 6)
    points = rng.normal(0.0, 0.2, (6, 3))
    m = masses.sum()
    com = masses @ points / m
    y = points - com
    inertia = sum(mi * (yi @ yi * np.eye(3) - np.outer(yi, yi)) for mi, yi in zip(masses, y, strict=True))
    return pin.Inertia(m, com, inertia)


def test_pseudo_inertia_and_log_cholesky_match_pinocchio() -> None:
    """J(phi) equals pinocchio's pseudo-inertia, and both maps invert exactly, for random valid bodies."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        body = _random_body(rng)
        phi = body.toDynamicParameters()
        assert_allclose(pseudo_inertia(phi), body.toPseudoInertia().toMatrix(), atol=1e-12)
        assert np.linalg.eigvalsh(pseudo_inertia(phi)).min() > 0.0
        assert_allclose(inertial_from_pseudo_inertia(pseudo_inertia(phi)), phi, atol=1e-12)
        assert_allclose(log_cholesky_to_inertial(inertial_to_log_cholesky(phi))[0], phi, rtol=1e-9, atol=1e-12)


def test_rich_data_both_estimators_agree_with_least_squares_and_truth(arm: dict) -> None:
    """On exciting data, SDP, log-Cholesky and plain LS give the same base parameters (near the truth)."""
    Y, tau, stats = _statistics(arm, duration=30.0, velocity_amplitude=1.5, noise=0.05)
    truth = arm["base"].to_base(arm["theta_true"])
    ls = ols(Y, tau).theta
    for method in ("sdp", "log_cholesky"):
        fit = consistent_least_squares(
            stats, arm["constraints"], base=arm["base"], theta_nominal=1.2 * arm["theta_true"], method=method
        )
        assert violations(fit.theta, arm["constraints"], tolerance=1e-7) == [], method
        assert np.all(fit.min_eigenvalue > -1e-7)
        assert np.linalg.norm(fit.theta_data - ls) < 1e-3 * np.linalg.norm(ls), method
        assert np.linalg.norm(fit.theta_data - truth) < 0.02 * np.linalg.norm(truth), method


def test_szabo_3dof_both_estimators_recover_the_truth() -> None:
    """Szabó & Szádeczky-Kardoss's 3-DoF arm, 30 s of rich data: LS already returns an impossible link 3 (the
    noise pushes it over the boundary); both consistent estimates are valid, within 2 % of the
    true base parameters, and predict held-out torque at least as well as LS."""
    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    constraints = physical_constraints(regressor)
    truth = base.to_base(theta)

    def rows(duration: float, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
        record, _ = excitation_record(regressor, theta, duration=duration, rate_hz=100.0, noise_std=noise, seed=seed)
        return base.base_regressor(regressor.rows(record.q, record.qd, record.qdd)), record.tau

    Y_test, tau_test = rows(20.0, 0.0, 9)
    Y, tau = rows(30.0, 0.05, 4)
    stats = RegressionStatistics.from_arrays(Y, tau)
    ls = ols(Y, tau).theta

    def heldout(theta_base: np.ndarray) -> float:
        return float(np.sqrt(np.mean((Y_test @ theta_base - tau_test) ** 2)))

    assert violations(base.to_full(ls, theta), constraints) != []
    for method in ("sdp", "log_cholesky"):
        fit = consistent_least_squares(stats, constraints, base=base, theta_nominal=1.2 * theta, method=method)
        assert violations(fit.theta, constraints, tolerance=1e-7) == [], method
        assert np.linalg.norm(fit.theta_data - truth) < 0.02 * np.linalg.norm(truth), method
        assert heldout(fit.theta_data) <= heldout(ls), method


def test_poor_data_least_squares_is_invalid_consistent_estimate_predicts_better(arm: dict) -> None:
    """1.5 s of slow, noisy motion: LS returns impossible bodies; the SDP estimate stays valid and
    predicts held-out torque at least 20x better."""
    Y, tau, stats = _statistics(arm, duration=1.5, velocity_amplitude=0.3, noise=0.5)
    ls = ols(Y, tau).theta
    checker = ConsistencyChecker(arm["constraints"], arm["base"], 1.2 * arm["theta_true"])
    verdict = checker.check(ls, information=np.sum(stats.A, axis=0))
    assert not verdict.consistent
    assert "pseudo-inertia has eigenvalue" in verdict.reason
    fit = consistent_least_squares(
        stats, arm["constraints"], base=arm["base"], theta_nominal=1.2 * arm["theta_true"], method="sdp"
    )
    assert violations(fit.theta, arm["constraints"], tolerance=1e-7) == []
    assert arm["heldout_rmse"](fit.theta_data) < arm["heldout_rmse"](ls) / 20.0


def test_identify_consistent_methods_stay_valid_where_wls_does_not(arm: dict) -> None:
    """`identify` (what ``motor-ident identify --method`` runs) on the poor record: WLS returns
    impossible bodies, both consistent methods return valid ones that predict held-out torque
    at least 20x better."""
    from motor_ident.core.estimation.identification import identify

    regressor = arm["regressor"]
    record, _ = excitation_record(
        regressor, arm["theta_true"], duration=1.5, rate_hz=100.0, noise_std=0.5, velocity_amplitude=0.3, seed=4
    )
    args = (regressor, record.q, record.qd, record.qdd, record.tau)
    kwargs = {"base": arm["base"], "theta_nominal": 1.2 * arm["theta_true"]}
    wls = identify(*args, method="wls", **kwargs)
    assert violations(wls.theta, arm["constraints"]) != []
    for method in ("sdp", "log_cholesky"):
        result = identify(*args, method=method, **kwargs)
        assert result.fit.method == method
        assert violations(result.theta, arm["constraints"], tolerance=1e-6) == [], method
        assert_allclose(arm["base"].to_base(result.theta), result.fit.theta, rtol=1e-9, atol=1e-9)
        assert arm["heldout_rmse"](result.fit.theta) < arm["heldout_rmse"](wls.fit.theta) / 20.0, method


def test_checker_accepts_truth_and_its_projection_is_consistent(arm: dict) -> None:
    """The true base parameters pass; an invalid estimate is refused and projected onto valid bodies."""
    base, constraints = arm["base"], arm["constraints"]
    checker = ConsistencyChecker(constraints, base, 1.2 * arm["theta_true"])
    assert checker.check(base.to_base(arm["theta_true"])).consistent
    bad = base.to_base(arm["theta_true"]).copy()
    bad[np.argmax(np.abs(bad))] *= -50.0  # the largest base parameter far on the wrong side
    verdict = checker.check(bad)
    assert not verdict.consistent
    assert violations(verdict.theta, constraints, tolerance=1e-4) == []  # interior-point accuracy
    assert_allclose(base.to_base(verdict.theta), verdict.theta_base, rtol=1e-6, atol=1e-9)
