"""Floating-base model, regressor, contact wrenches and identification (ROS-free)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from motor_ident.core.floating_base.identification import (
    compare_row_sets,
    identify_floating_base,
    structural_base_parameters,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor, load_floating_base_model
from motor_ident.errors import DataError
from tests.conftest import example_robot_urdf
from tests.core.floating_base.conftest import CONTACTS, JOINTS


def test_regressor_times_parameters_equals_rnea(humanoid: FloatingBaseRegressor, rng: np.random.Generator) -> None:
    """Y theta equals pinocchio's RNEA on a separate data object, base rows and joint rows."""
    floating = humanoid.floating
    Q, V, A = floating.random_states(rng, 20)
    Y = humanoid.rows(Q, V, A)
    data = floating.model.createData()
    tau = np.array([pin.rnea(floating.model, data, Q[k], V[k], A[k]) for k in range(20)])
    expected = np.concatenate([tau[:, :6], tau[:, floating.robot.v_index]], axis=1)
    np.testing.assert_allclose(Y @ floating.inertial_parameters(), expected, atol=1e-9)
    assert Y.shape == (20, 6 + len(JOINTS), 10 * (len(JOINTS) + 1))


@pytest.mark.parametrize("joints", [JOINTS, None], ids=["remapped", "pinocchio_order"])
def test_rows_asked_for_equal_the_full_regressor_s(joints: tuple[str, ...] | None, rng: np.random.Generator) -> None:
    """``count`` rows (into a reused buffer) are the full regressor's first rows, both when rows and
    columns are remapped and when pinocchio's order is ours; the base rows times theta equal RNEA's."""
    urdf = example_robot_urdf("icub_description/robots/icub.urdf")
    regressor = FloatingBaseRegressor(load_floating_base_model(urdf, joint_names=joints))
    floating = regressor.floating
    Q, V, A = floating.random_states(rng, 8)
    full = regressor.rows(Q, V, A)
    buffer = np.full((8, 6, regressor.n_parameters), np.nan)
    base_rows = regressor.rows(Q, V, A, count=6, out=buffer)
    assert base_rows is buffer
    np.testing.assert_array_equal(base_rows, full[:, :6])
    np.testing.assert_array_equal(regressor.rows(Q, V, A, count=floating.nv), full)
    data = floating.model.createData()
    tau = np.array([pin.rnea(floating.model, data, Q[k], V[k], A[k])[:6] for k in range(8)])
    np.testing.assert_allclose(base_rows @ floating.inertial_parameters(), tau, atol=1e-9)
    with pytest.raises(DataError):
        regressor.rows(Q, V, A, count=0)
    with pytest.raises(DataError):
        regressor.rows(Q, V, A, count=6, out=np.empty((8, 7, regressor.n_parameters)))


def test_contact_forces_match_rnea_with_external_forces(
    humanoid: FloatingBaseRegressor, rng: np.random.Generator
) -> None:
    """J_c' w_c equals the generalized force pinocchio's RNEA gives a wrench applied at the frame."""
    model = humanoid.floating.model
    data = model.createData()
    Q, _, _ = humanoid.floating.random_states(rng, 10)
    W = rng.standard_normal((10, 2, 6))
    got = humanoid.contact_forces(Q, W)
    zero = np.zeros(model.nv)
    for k in range(10):
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        for c, name in enumerate(CONTACTS):
            frame = model.frames[model.getFrameId(name)]
            fext[frame.parentJoint] += frame.placement.act(pin.Force(W[k, c]))
        effect = pin.rnea(model, data, Q[k], zero, zero) - pin.rnea(model, data, Q[k], zero, zero, fext)
        expected = np.concatenate([effect[:6], effect[humanoid.floating.robot.v_index]])
        np.testing.assert_allclose(got[k], expected, atol=1e-9)


def test_base_rows_determine_what_all_rows_determine(humanoid: FloatingBaseRegressor) -> None:
    """Each revolute joint hides 3 parameters; the joint rows add none (Ayusawa et al. 2014), and the tool says so."""
    base_rows = structural_base_parameters(humanoid, "base")
    all_rows = structural_base_parameters(humanoid, "all")
    comparison = compare_row_sets(base_rows, all_rows)
    assert base_rows.n_base == all_rows.n_base == humanoid.n_parameters - 3 * len(JOINTS)
    assert comparison.only_with_joint_rows == ()
    assert "no new parameter" in comparison.summary()


def test_identification_recovers_mass_and_centre_of_mass(
    humanoid: FloatingBaseRegressor, rng: np.random.Generator
) -> None:
    """Masses perturbed 10-30 %: base rows alone give the true total mass and CoM, within the reported std."""
    floating = humanoid.floating
    theta_true = floating.inertial_parameters().copy()
    factors = rng.uniform(1.1, 1.3, len(floating.body_names))
    theta_true *= np.repeat(factors, 10)  # mass, first moment and inertia scale together: still physical
    truth = floating.with_inertial_parameters(theta_true)
    Q, V, A = floating.random_states(rng, 400)
    force = humanoid.rows(Q, V, A) @ theta_true
    noise = 0.5
    measured = force + noise * rng.standard_normal(force.shape)
    result = identify_floating_base(humanoid, Q, V, A, measured, rows="base", method="wls", validate_fraction=0.25)
    data = truth.model.createData()
    com_true = pin.centerOfMass(truth.model, data, Q[0])
    assert bool(np.all(result.mass.identifiable)) and bool(np.all(result.com.identifiable))  # the base moves freely
    assert abs(result.mass.value - truth.total_mass) < 4.0 * result.mass.std + 1e-9
    assert abs(result.mass.value - floating.total_mass) > 2.0  # the nominal mass is clearly off
    assert np.all(np.abs(result.com.value - com_true) < 4.0 * result.com.std + 1e-9)
    assert result.heldout is not None and np.all(result.heldout.rmse < 1.5 * noise)


def test_sdp_gives_physical_bodies_with_the_same_wrenches(
    humanoid: FloatingBaseRegressor, rng: np.random.Generator
) -> None:
    """The consistent estimator on the base rows returns valid bodies that reproduce the wrenches."""
    floating = humanoid.floating
    theta_true = floating.inertial_parameters() * np.repeat(rng.uniform(0.8, 1.2, len(floating.body_names)), 10)
    Q, V, A = floating.random_states(rng, 200)
    force = humanoid.rows(Q, V, A) @ theta_true
    result = identify_floating_base(humanoid, Q, V, A, force + 0.1 * rng.standard_normal(force.shape), method="sdp")
    assert np.all(result.min_eigenvalue > -1e-7)
    np.testing.assert_allclose(result.theta[0::10].sum(), theta_true[0::10].sum(), rtol=1e-3)
    predicted = humanoid.rows(Q, V, A)[:, :6] @ result.theta
    assert np.sqrt(np.mean((predicted - force[:, :6]) ** 2)) < 0.2


def test_mass_and_com_std_cover_slowly_correlated_errors(
    humanoid: FloatingBaseRegressor, rng: np.random.Generator
) -> None:
    """A slow error on the wrenches (AR(1), correlation 0.98 per sample, as a model error or a filter
    leaves) along a smooth motion: the residual-based (sandwich) std of the total mass and CoM covers
    the errors; the white-noise std, 3-8 times smaller, does not."""
    from scipy.signal import lfilter

    floating = humanoid.floating
    theta_true = floating.inertial_parameters() * np.repeat(rng.uniform(1.1, 1.3, len(floating.body_names)), 10)
    truth = floating.with_inertial_parameters(theta_true)
    knots, N = 40, 600  # a smooth motion through 40 random states
    x = np.linspace(0.0, knots - 1.0, N)
    Q, V, A = (
        np.array([np.interp(x, np.arange(knots), column) for column in states.T]).T
        for states in floating.random_states(rng, knots)
    )
    Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
    force = humanoid.rows(Q, V, A) @ theta_true
    com_true = pin.centerOfMass(truth.model, truth.model.createData(), Q[0])
    base = structural_base_parameters(humanoid, "base")
    covered, covered_white, ratio = [], [], []
    for _ in range(8):
        slow = lfilter([0.02], [1.0, -0.98], rng.standard_normal(force.shape), axis=0) * 5.0  # std ~0.5 N, N m
        result = identify_floating_base(humanoid, Q, V, A, force + slow, base=base)
        error = np.abs([result.mass.value - truth.total_mass, *(result.com.value - com_true)])
        std = np.array([result.mass.std, *result.com.std])
        white = np.array([result.mass_white.std, *result.com_white.std])
        covered += list(error <= 1.96 * std)
        covered_white += list(error <= 1.96 * white)
        ratio += list(std / white)
    assert np.mean(covered) >= 0.85, np.mean(covered)
    assert np.mean(covered_white) <= 0.6, np.mean(covered_white)
    assert np.median(ratio) > 3.0
