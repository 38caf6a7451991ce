"""Liu et al.'s double-encoder identification: bidirectional friction, threshold fit, GMR/RBF residual, feedforward."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from gmr import GMM

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape, friction_regressor
from motor_ident.core.control.computed_torque import ComputedTorque, FeedforwardConfig
from motor_ident.core.elastic.directional_friction import (
    align_backward_pass,
    bidirectional_friction,
    fit_directional_friction,
)
from motor_ident.core.elastic.residual import (
    GaussianMixtureRegression,
    ResidualConfig,
    ResidualModel,
    residual_features,
)
from motor_ident.core.elastic.three_loop import ResidualFeedforward
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.rigid_body.model import inverse_dynamics, random_states
from motor_ident.errors import ConfigError, DataError
from motor_ident.io.robot_config import load_robot_config

SHAPE = FrictionShape(kind=FrictionKind.DIRECTIONAL, direction_threshold=0.08, direction_eps=1e-3)
THETA = np.array([2.0, 1.5, 3.0, -0.8, 0.3, 2.5, 0.6, 0.2])  # asymmetric: kc+ != kc-, kv+ != kv-


@pytest.fixture
def rng() -> np.random.Generator:
    """Seeded generator."""
    return np.random.default_rng(4)


def test_bidirectional_passes_isolate_friction_closed_form(rng: np.random.Generator) -> None:
    """(tau1 - tau2)/2 = M qdd + friction and (tau1 + tau2)/2 = RNEA(q, qd, 0), with RNEA / CRBA as reference."""
    robot = load_robot_config("elastic_arm6").build_model()
    data = robot.create_data()
    q, qd, qdd = random_states(robot, rng, 20)
    odd = [np.array([kc, kc, kv1, kv2, kv3, kv1, -kv2, kv3]) for kc, kv1, kv2, kv3 in rng.uniform(0.5, 3.0, (6, 4))]

    def friction(v: np.ndarray) -> np.ndarray:
        return np.array([friction_regressor(v[j : j + 1], SHAPE)[0] @ odd[j] for j in range(robot.n)])

    for k in range(20):
        tau1 = inverse_dynamics(robot, data, q[k], qd[k], qdd[k]) + friction(qd[k])
        tau2 = inverse_dynamics(robot, data, q[k], -qd[k], -qdd[k]) + friction(-qd[k])
        tau_f, tau_static = bidirectional_friction(tau1, tau2)
        mass = pin.crba(robot.model, data, robot.pin_q(q[k]))
        np.testing.assert_allclose(tau_f, mass @ qdd[k] + friction(qd[k]), atol=1e-9)
        np.testing.assert_allclose(tau_static, inverse_dynamics(robot, data, q[k], qd[k], 0 * qd[k]), atol=1e-9)
    with pytest.raises(DataError, match="equal shapes"):
        bidirectional_friction(np.zeros(3), np.zeros(4))


def test_backward_pass_aligned_by_measured_position(rng: np.random.Generator) -> None:
    """A backward pass sampled at other positions, reversed and quantised, is interpolated onto the forward one."""
    q_fwd = np.linspace(-0.2, 0.3, 200)[:, None] * np.array([1.0, 2.0])
    q_bwd = (np.linspace(-0.25, 0.35, 173)[::-1, None] + 1e-3 * rng.random((173, 1))) * np.array([1.0, 2.0])
    q_bwd = np.round(q_bwd / 1e-4) * 1e-4  # an encoder repeats values

    def value(x: np.ndarray) -> np.ndarray:
        return 3.0 * x + 0.5

    keep, aligned = align_backward_pass(q_fwd, q_bwd, value(q_bwd))
    assert keep.sum() >= 190
    np.testing.assert_allclose(aligned, value(q_fwd[keep]), atol=1e-9)
    with pytest.raises(DataError, match="does not move"):
        align_backward_pass(q_fwd, np.zeros((5, 2)), np.zeros((5, 2)))


def test_directional_friction_threshold_and_coefficients_recovered(rng: np.random.Generator) -> None:
    """lambda within 10 % and the Coulomb levels within 3 % from noisy samples with reversal outliers."""
    speeds = np.concatenate([np.geomspace(0.01, 1.0, 30), -np.geomspace(0.01, 1.0, 30)])
    v = np.repeat(speeds, 20)
    tau = friction_regressor(v, SHAPE) @ THETA + 0.02 * rng.standard_normal(v.size)
    tau[rng.choice(v.size, 30, replace=False)] += rng.choice([-3.0, 3.0], 30)  # spoiled samples at reversals
    fit = fit_directional_friction(v, tau, shape=SHAPE)
    assert abs(fit.shape.direction_threshold / 0.08 - 1.0) < 0.10, fit.shape.direction_threshold
    np.testing.assert_allclose(fit.theta[:2], THETA[:2], rtol=0.03)
    grid = np.linspace(-1.0, 1.0, 401)
    truth = friction_regressor(grid, SHAPE) @ THETA
    assert np.sqrt(np.mean((fit.torque(grid) - truth) ** 2)) < 0.1
    plain = fit_directional_friction(v, tau, shape=SHAPE, robust=False)
    assert np.sqrt(np.mean((plain.torque(grid) - truth) ** 2)) > np.sqrt(np.mean((fit.torque(grid) - truth) ** 2))
    with pytest.raises(DataError, match="both directions"):
        fit_directional_friction(np.abs(v), tau, shape=SHAPE)
    with pytest.raises(ConfigError, match="directional"):
        fit_directional_friction(v, tau, shape=FrictionShape())


def test_our_gmr_conditional_mean_equals_gmr_library(rng: np.random.Generator) -> None:
    """The vectorised conditional mean (eq. 28-33) agrees with gmr.GMM.predict."""
    x = rng.uniform(-1.0, 1.0, (800, 2))
    y = np.sin(2.0 * x[:, 0]) * x[:, 1] + 0.05 * rng.standard_normal(800)
    gmm = GMM(n_components=5, random_state=np.random.RandomState(0)).from_samples(np.column_stack([x, y]))
    ours = GaussianMixtureRegression(gmm.priors, gmm.means, gmm.covariances)
    probe = rng.uniform(-1.2, 1.2, (300, 2))
    np.testing.assert_allclose(ours.predict(probe), gmm.predict(np.array([0, 1]), probe)[:, 0], atol=1e-7)


def _harmonic_drive_loss(rng: np.random.Generator, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Features (N, 2, 3) and the load-dependent loss mu |K delta + D delta_dot| tanh(qd / 0.01) (N, 2)."""
    delta = rng.uniform(-1e-3, 1e-3, (N, 2))
    delta_rate = rng.uniform(-5e-3, 5e-3, (N, 2))
    qd = rng.uniform(-1.0, 1.0, (N, 2))
    stiffness = np.array([3e4, 5e3])
    loss = 0.12 * np.abs(stiffness * delta + 10.0 * delta_rate) * np.tanh(qd / 0.01)
    return residual_features(("delta", "delta_rate", "qd"), delta=delta, delta_rate=delta_rate, qd=qd), loss


@pytest.mark.parametrize("kind", ["gmr", "rbf"])
def test_residual_model_learns_harmonic_drive_loss(rng: np.random.Generator, kind: str) -> None:
    """Held-out residual of a load-dependent drive loss explained to R2 > 0.9; bad features give 0, not NaN."""
    features, loss = _harmonic_drive_loss(rng, 2500)
    noisy = loss + 0.05 * rng.standard_normal(loss.shape)
    model = ResidualModel.fit(features, noisy, ResidualConfig(kind=kind, n_components=10, max_samples=1200))
    probe, truth = _harmonic_drive_loss(rng, 500)
    predicted = model.predict(probe)
    r2 = 1.0 - ((predicted - truth) ** 2).sum(axis=0) / ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
    assert np.all(r2 > 0.9), r2
    if kind == "gmr":  # the all-joints-at-once path equals the joint-by-joint one
        stacked, model._stacked = model._stacked, None
        np.testing.assert_allclose(predicted, model.predict(probe), atol=1e-10)
        model._stacked = stacked
    probe[0, 1, 0] = np.nan
    probe[1, 0, 2] = np.inf
    probe[2, 0, 0] = 1e9  # far outside: clipped to 1.5 x the largest training residual
    out = model.predict(probe)
    assert np.all(np.isfinite(out)) and out[0, 1] == 0.0 and out[1, 0] == 0.0
    assert abs(out[2, 0]) <= 1.5 * np.abs(noisy[:, 0]).max() + 1e-12


def test_warm_start_that_collapses_refits_from_scratch(rng: np.random.Generator) -> None:
    """A warm start whose mixture EM cannot use (a component with no samples near it) refits cold, as without one."""
    features, loss = _harmonic_drive_loss(rng, 1500)
    config = ResidualConfig(n_components=4, max_samples=1000)
    cold = ResidualModel.fit(features, loss, config)
    stale = ResidualModel.fit(features, loss, config)
    for model in stale._models:
        priors, means, covariances = model.mixture
        means[0] = 1e6  # far from every sample: zero responsibilities, EM divides by zero
        model.mixture = (priors, means, covariances)
    warm = ResidualModel.fit(features, loss, config, warm_start=stale)
    np.testing.assert_allclose(warm.predict(features), cold.predict(features), atol=1e-9)


def test_residual_config_refuses_bad_values() -> None:
    """Unknown kinds, features and counts are refused with the key named."""
    with pytest.raises(ConfigError, match="residual.kind"):
        ResidualConfig(kind="mlp")
    with pytest.raises(ConfigError, match="residual.features"):
        ResidualConfig(features=("delta", "torque"))
    with pytest.raises(ConfigError, match="residual.n_components"):
        ResidualConfig(n_components=0)
    with pytest.raises(DataError, match="features"):
        ResidualModel.fit(np.zeros((10, 2, 2)), np.zeros((10, 2)), ResidualConfig())


def test_residual_feedforward_adds_the_residual_to_computed_torque(rng: np.random.Generator) -> None:
    """Same calls as ComputedTorque; the residual is added once deformation is known, never NaN."""
    config = load_robot_config("elastic_arm6")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor, samples=60)
    n = regressor.robot.n
    ones = np.ones(n)
    law = ComputedTorque(
        regressor, base, FeedforwardConfig(kp=ones, kd=ones, effort_limit=100 * ones, rate_limit=np.inf * ones)
    )
    theta = base.to_base(config.nominal_parameters(regressor))
    delta = rng.uniform(-1e-3, 1e-3, (400, n))
    qd = rng.uniform(-1.0, 1.0, (400, n))
    features = residual_features(("delta", "delta_rate", "qd"), delta=delta, delta_rate=0 * delta, qd=qd)
    model = ResidualModel.fit(features, 100.0 * delta * np.sign(qd), ResidualConfig(kind="rbf", max_samples=400))
    ff = ResidualFeedforward(law, model)
    q, v, a = random_states(regressor.robot, rng, 1)
    plain = law.torque(q[0], v[0], a[0], theta)
    np.testing.assert_allclose(ff.torque(q[0], v[0], a[0], theta), plain)  # no deformation yet
    ff.set_deformation(delta[0], np.zeros(n))
    expected = model.predict(residual_features(model.config.features, delta=delta[0], delta_rate=np.zeros(n), qd=v[0]))
    np.testing.assert_allclose(ff.torque(q[0], v[0], a[0], theta), plain + expected[0])
    command = ff.command(q[0], v[0], q[0], v[0], a[0], theta)
    np.testing.assert_allclose(command, law.command(q[0], v[0], q[0], v[0], a[0], theta) + expected[0])
    np.testing.assert_allclose(ff.gravity(q[0], theta), law.gravity(q[0], theta))
    ff.set_deformation(np.full(n, np.nan), np.zeros(n))
    assert np.all(np.isfinite(ff.torque(q[0], v[0], a[0], theta)))
    assert ff.config is law.config  # everything else is the law's
