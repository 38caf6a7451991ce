"""Generalised least squares (Liu et al. 2023, eq. 21-22): cross-joint noise covariance, against WLS."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.cli import main
from motor_ident.core.estimation.least_squares import RegressionStatistics, gls, wls
from motor_ident.errors import EstimationError

N, JOINTS, P = 400, 3, 6
# per-joint std [0.3, 0.2, 0.5] N m, joints 1-2 correlated 0.9, joints 1-3 -0.6
STD = np.array([0.3, 0.2, 0.5])
CORRELATION = np.array([[1.0, 0.9, -0.6], [0.9, 1.0, -0.5], [-0.6, -0.5, 1.0]])
OMEGA = CORRELATION * np.outer(STD, STD)


def _problem(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    Y = rng.normal(size=(N, JOINTS, P))
    theta = rng.normal(size=P)
    return Y, theta


def test_gls_with_a_diagonal_covariance_is_wls(rng: np.random.Generator) -> None:
    """Given Omega = diag(sigma^2), GLS is WLS with sigma: same estimate and covariance."""
    Y, theta = _problem(rng)
    tau = Y @ theta + rng.normal(size=(N, JOINTS)) * STD
    fit_gls, fit_wls = gls(Y, tau, np.diag(STD**2)), wls(Y, tau, STD)
    assert_allclose(fit_gls.theta, fit_wls.theta, rtol=1e-9, atol=1e-12)
    assert_allclose(fit_gls.covariance, fit_wls.covariance, rtol=1e-9, atol=1e-15)
    assert fit_gls.method == "gls"


def test_gls_estimates_the_covariance_and_beats_wls_on_correlated_noise(rng: np.random.Generator) -> None:
    """Correlated noise: Omega from the OLS residuals within 15 %, GLS's spread over noise draws
    below WLS's and equal to its reported covariance."""
    Y, theta = _problem(rng)
    chol = np.linalg.cholesky(OMEGA)
    estimates: dict[str, list[np.ndarray]] = {"gls": [], "wls": []}
    omegas = []
    for _ in range(150):
        tau = Y @ theta + rng.normal(size=(N, JOINTS)) @ chol.T
        fit = gls(Y, tau)
        omegas.append(fit.noise_covariance)
        estimates["gls"].append(fit.theta)
        estimates["wls"].append(wls(Y, tau).theta)
    assert_allclose(np.mean(omegas, axis=0), OMEGA, atol=0.15 * STD.min() ** 2, err_msg="Omega from the residuals")
    spread = {k: np.cov(np.array(v).T) for k, v in estimates.items()}
    reported = gls(Y, Y @ theta, OMEGA).covariance
    ratio = np.trace(spread["gls"]) / np.trace(spread["wls"])
    assert ratio < 0.6, f"GLS / WLS variance {ratio:.2f}: correlated noise should favour GLS"
    assert_allclose(np.diag(spread["gls"]), np.diag(reported), rtol=0.3, err_msg="reported covariance")


def test_gls_refuses_what_it_cannot_weight(rng: np.random.Generator) -> None:
    """No cross-joint statistics, masked equations or an indefinite Omega: EstimationError naming why."""
    Y, theta = _problem(rng)
    tau = Y @ theta
    with pytest.raises(EstimationError, match="cross-joint"):
        RegressionStatistics.from_arrays(Y, tau).gls()
    masked = RegressionStatistics(JOINTS, P, cross=True)
    mask = np.ones((N, JOINTS), dtype=bool)
    mask[:10, 0] = False
    masked.add(Y, tau, mask=mask)
    with pytest.raises(EstimationError, match="every joint's equation"):
        masked.gls()
    with pytest.raises(EstimationError, match="positive definite"):
        gls(Y, tau, -np.eye(JOINTS))


def test_merged_chunks_give_the_whole_record_gls(rng: np.random.Generator) -> None:
    """Cross-joint statistics of two chunks, merged, give the GLS of the whole record."""
    Y, theta = _problem(rng)
    tau = Y @ theta + rng.normal(size=(N, JOINTS)) @ np.linalg.cholesky(OMEGA).T
    first = RegressionStatistics.from_arrays(Y[:150], tau[:150], cross=True)
    first.merge(RegressionStatistics.from_arrays(Y[150:], tau[150:], cross=True))
    whole = gls(Y, tau)
    assert_allclose(first.gls().theta, whole.theta, rtol=1e-9)


def test_identify_method_gls_from_the_command_line(tmp_path: Path) -> None:
    """``identify --method gls`` fits a synthetic record and writes the noise covariance it used."""
    data, report = tmp_path / "record.npz", tmp_path / "fit.json"
    synth = ["synth", "--robot", "szabo_3dof", "--out", str(data), "--duration", "20", "--rate", "100"]
    assert main([*synth, "--noise", "0.05"]) == 0
    command = ["identify", str(data), "--robot", "szabo_3dof", "--method", "gls", "--no-report"]
    assert main([*command, "--validate", "0.2", "--json", str(report)]) == 0
    summary = json.loads(report.read_text())
    assert summary["method"] == "gls"
    omega = np.array(summary["noise_covariance"])
    assert omega.shape == (3, 3)
    assert_allclose(np.sqrt(np.diag(omega)), 0.05, rtol=0.25)
    assert min(summary["heldout_r2_per_joint"]) > 0.98
