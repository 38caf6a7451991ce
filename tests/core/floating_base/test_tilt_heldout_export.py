"""Floating base: the base orientation's tilt estimated with the parameters, the held-out split into the
states' and the parameters' share, the links nearest to the URDF, the URDF's own uncertainty (ROS-free)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from motor_ident.core.estimation.pseudo_inertia import pseudo_inertia
from motor_ident.core.floating_base.export import nearest_links
from motor_ident.core.floating_base.identification import (
    floating_constraints,
    identify_floating_base,
    nominal_mass_and_com,
    structural_base_parameters,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.validation import heldout_wrench

TILT = np.array([0.004, -0.003])  # [rad] about the world's x and y


def _tilted(Q: np.ndarray, tilt: np.ndarray) -> np.ndarray:
    """Q with the base orientation turned by ``tilt`` about the world's x and y axes."""
    turn = pin.Quaternion(pin.exp3(np.array([*tilt, 0.0])))
    out = Q.copy()
    out[:, 3:7] = [(turn * pin.Quaternion(np.asarray(x))).coeffs() for x in Q[:, 3:7]]
    return out


def _truth(humanoid: FloatingBaseRegressor, rng: np.random.Generator) -> np.ndarray:
    floating = humanoid.floating
    return floating.inertial_parameters() * np.repeat(rng.uniform(1.1, 1.3, len(floating.body_names)), 10)


def test_a_tilted_base_orientation_is_estimated_and_the_centre_of_mass_stays_covered(
    humanoid: FloatingBaseRegressor,
    rng: np.random.Generator,
) -> None:
    """A constant 4, -3 mrad error of the base orientation: trusted, it moves the CoM far beyond its std;
    estimated, the tilt comes back within 3 std and the CoM within 3 std."""
    floating = humanoid.floating
    theta_true = _truth(humanoid, rng)
    truth = floating.with_inertial_parameters(theta_true)
    Q, V, A = floating.random_states(rng, 300)
    Q[:, 3:7] = [pin.Quaternion(pin.exp3(0.1 * rng.standard_normal(3))).coeffs() for _ in range(Q.shape[0])]  # standing
    force = humanoid.rows(Q, V, A) @ theta_true
    measured = force + 0.05 * rng.standard_normal(force.shape)
    seen = _tilted(Q, TILT)  # what the IMU says
    com_true = pin.centerOfMass(truth.model, truth.model.createData(), seen[0])
    base = structural_base_parameters(humanoid, "base")
    trusted = identify_floating_base(humanoid, seen, V, A, measured, base=base, estimate_tilt=False)
    estimated = identify_floating_base(humanoid, seen, V, A, measured, base=base)
    assert trusted.tilt is None and estimated.tilt is not None
    assert np.all(np.abs(estimated.tilt.value - TILT) < 3.0 * estimated.tilt.std), (estimated.tilt, TILT)
    assert np.all(estimated.tilt.std < 0.2 * np.abs(TILT))
    miss_trusted = np.abs(trusted.com.value - com_true) / trusted.com.std
    miss_estimated = np.abs(estimated.com.value - com_true) / estimated.com.std
    assert np.max(miss_trusted) > 5.0, miss_trusted
    assert np.all(miss_estimated < 3.0), miss_estimated


def test_heldout_floor_is_the_states_share_and_models_are_ranked_on_their_base_parameters(
    humanoid: FloatingBaseRegressor,
    rng: np.random.Generator,
) -> None:
    """Noisy held-out wrenches: the refit's floor sits at the noise, the true model near it, the URDF's
    far above; a model differing from the truth only where the data are silent scores as the truth."""
    floating = humanoid.floating
    theta_true = _truth(humanoid, rng)
    theta0 = floating.inertial_parameters()
    Q, V, A = floating.random_states(rng, 300)
    force = humanoid.rows(Q, V, A) @ theta_true
    noise = 0.3
    measured = force + noise * rng.standard_normal(force.shape)
    base = structural_base_parameters(humanoid, "base")
    silent = base.to_full(base.to_base(theta_true), theta_true + rng.standard_normal(theta_true.size))  # same base
    held = heldout_wrench(humanoid, base, silent, theta0, Q, V, A, measured)
    truth = heldout_wrench(humanoid, base, theta_true, theta0, Q, V, A, measured)
    assert np.all(held.floor.rmse < 1.1 * noise) and np.all(held.floor.rmse > 0.5 * noise)
    np.testing.assert_allclose(held.determined.rmse, truth.determined.rmse, rtol=1e-9)
    assert np.all(truth.determined.rmse < 1.2 * noise)
    assert np.all(held.determined.rmse <= held.nominal.rmse)
    assert np.mean(held.nominal_parameter_nrmse) > 5.0 * np.mean(held.parameter_nrmse)
    assert set(held.summary()) >= {"identified", "determined", "nominal", "floor", "parameter_nrmse"}


def test_exported_links_are_valid_reproduce_the_base_parameters_and_stay_near_the_urdf(
    humanoid: FloatingBaseRegressor,
    rng: np.random.Generator,
) -> None:
    """From the true model's base parameters: every link physically valid (no negative mass), the base
    parameters within the 95 % region, and with the URDF's own base parameters the URDF itself."""
    floating = humanoid.floating
    theta_true, theta0 = _truth(humanoid, rng), floating.inertial_parameters()
    base = structural_base_parameters(humanoid, "base")
    P = base.projection
    covariance = np.diag((1e-3 * np.maximum(np.abs(P @ theta_true), 1e-2)) ** 2)
    constraints = floating_constraints(humanoid)
    near = nearest_links(constraints, P, P @ theta_true, covariance, theta0)
    assert near.mahalanobis <= near.radius * (1.0 + 1e-6) and near.widened == 1.0
    assert np.all(near.mass > 0.0)
    assert all(np.linalg.eigvalsh(J)[0] > 0.0 for J in pseudo_inertia(constraints.body_parameters(near.theta)))
    np.testing.assert_allclose(near.mass.sum(), theta_true[0::10].sum(), rtol=1e-3)
    same = nearest_links(constraints, P, P @ theta0, covariance, theta0)
    assert same.distance < 1e-6, same.distance  # sum of squared deviations in prior spreads


def test_urdf_uncertainty_of_mass_and_com(humanoid: FloatingBaseRegressor) -> None:
    """The URDF's mass and CoM are pinocchio's; their std grow with the link spread (30 %) and are > 0."""
    floating = humanoid.floating
    q = pin.neutral(floating.model)
    mass, com = nominal_mass_and_com(humanoid, q, floating.inertial_parameters())
    np.testing.assert_allclose(com.value, pin.centerOfMass(floating.model, floating.model.createData(), q), atol=1e-12)
    np.testing.assert_allclose(float(mass.value), floating.total_mass, rtol=1e-12)
    masses = floating.inertial_parameters()[0::10]
    assert float(mass.std) >= 0.3 * np.sqrt(np.sum(masses**2)) * (1.0 - 1e-9)
    assert np.all(com.std > 0.0)
