"""The consistent links nearest to the URDF that reproduce the identified base parameters."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.estimation.constraints import physical_constraints
from motor_ident.core.estimation.identification import identify, structural_base_parameters
from motor_ident.core.estimation.nearest_consistent import log_det_divergence, nearest_consistent
from motor_ident.core.estimation.pseudo_inertia import pseudo_inertia
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.synthetic import excitation_record


@pytest.mark.parametrize("seed", [0, 2])
def test_exported_masses_follow_the_data_where_they_determine_them(seed: int) -> None:
    """Links 10-30 % off the URDF: determined masses within 15 % of the truth, undetermined within 5 % of the URDF."""
    config = load_robot_config("ur5_currents")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    nominal = config.nominal_parameters(regressor)
    rng = np.random.default_rng(seed)
    n = regressor.robot.n
    factor = 1.0 + rng.choice([-1.0, 1.0], n) * rng.uniform(0.1, 0.3, n)
    truth = nominal.copy()
    truth[regressor.layout.inertial] = (nominal[regressor.layout.inertial].reshape(n, 10) * factor[:, None]).ravel()
    record, _ = excitation_record(regressor, truth, duration=30.0, rate_hz=200.0, noise_std=0.05, seed=seed)
    assert record.qd is not None and record.qdd is not None
    fit = identify(regressor, record.q, record.qd, record.qdd, record.tau, theta_nominal=nominal, base=base).fit
    near = nearest_consistent(physical_constraints(regressor), base.projection, fit.theta, fit.covariance, nominal)
    true_mass = truth[regressor.layout.inertial][::10]
    classes = np.array(near.mass_class)
    assert {"determined", "undetermined"} <= set(classes), f"a case without both kinds of link: {classes}"
    determined, free = classes == "determined", classes == "undetermined"
    np.testing.assert_array_less(np.abs(near.mass / true_mass - 1.0)[determined], 0.15)
    np.testing.assert_array_less(np.abs(near.mass / near.mass_nominal - 1.0)[free], 0.05)
    assert near.mahalanobis <= near.radius * (1.0 + 1e-6)
    phi = near.theta[regressor.layout.inertial].reshape(n, 10)
    assert np.all(np.linalg.eigvalsh(pseudo_inertia(phi))[:, 0] > 0.0), "every exported link physically consistent"
    assert abs(near.mass.sum() - true_mass.sum()) < abs(near.mass_nominal.sum() - true_mass.sum())


def test_divergence_is_zero_at_the_nominal_and_blind_to_units(rng: np.random.Generator) -> None:
    """D(J0 || J0) = 0; D is unchanged when both bodies are expressed in other units (J -> A J A')."""
    X = rng.standard_normal((2, 4, 4))
    J0, J = (x @ x.T + 0.1 * np.eye(4) for x in X)
    assert log_det_divergence(J0, J0) == pytest.approx(0.0, abs=1e-12)
    A = np.diag([1e3, 1e3, 1e3, 1.0])  # metres -> millimetres
    assert log_det_divergence(A @ J @ A.T, A @ J0 @ A.T) == pytest.approx(log_det_divergence(J, J0), rel=1e-9)


def test_a_singular_covariance_is_shrunk_toward_its_diagonal(rng: np.random.Generator) -> None:
    """Rank-deficient C: positive definite after, every variance kept, correlations times 1 - a; a PD C unchanged."""
    from motor_ident.core.estimation.nearest_consistent import SHRINKAGE, positive_definite_covariance

    A = rng.standard_normal((6, 3)) * np.repeat([1e-3, 1.0, 1e2], 2)[:, None]
    singular = A @ A.T  # rank 3 of 6, parameters of very different scales
    C, rank, shrinkage = positive_definite_covariance(singular)
    assert (rank, shrinkage) == (3, SHRINKAGE)
    np.linalg.cholesky(C)  # raises if not positive definite
    np.testing.assert_allclose(np.diag(C), np.diag(singular), rtol=1e-12)
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose(C[off], (1.0 - SHRINKAGE) * singular[off], rtol=1e-12)
    pd = singular + np.diag(np.diag(singular))
    assert positive_definite_covariance(pd)[2] == 0.0
    np.testing.assert_array_equal(positive_definite_covariance(pd)[0], pd)


def test_export_with_a_rank_deficient_covariance_stays_consistent_and_nominal_where_silent() -> None:
    """A covariance with a third of its spectrum zeroed (as the sandwich's PSD part leaves it): the export
    solves, stays in the ellipsoid, is consistent, and undetermined masses stay at the URDF's."""
    config = load_robot_config("ur5_currents")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    nominal = config.nominal_parameters(regressor)
    record, _ = excitation_record(regressor, nominal, duration=10.0, rate_hz=200.0, noise_std=0.05, seed=1)
    assert record.qd is not None and record.qdd is not None
    fit = identify(regressor, record.q, record.qd, record.qdd, record.tau, theta_nominal=nominal, base=base).fit
    w, V = np.linalg.eigh(fit.covariance)
    w[: w.size // 3] = 0.0
    singular = (V * w) @ V.T
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(singular)
    near = nearest_consistent(physical_constraints(regressor), base.projection, fit.theta, singular, nominal)
    assert near.shrinkage > 0.0 and near.covariance_rank == w.size - w.size // 3
    assert near.mahalanobis <= near.radius * (1.0 + 1e-6)
    n = regressor.robot.n
    phi = near.theta[regressor.layout.inertial].reshape(n, 10)
    assert np.all(np.linalg.eigvalsh(pseudo_inertia(phi))[:, 0] > 0.0), "every exported link physically consistent"
    free = np.array(near.mass_class) == "undetermined"
    assert free.any(), near.mass_class
    np.testing.assert_array_less(np.abs(near.mass / near.mass_nominal - 1.0)[free], 0.05)
    assert near.com_shift.shape == (n,) and np.all(np.isfinite(near.com_shift))
