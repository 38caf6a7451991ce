"""Double-encoder identification of Liu et al. 2023 (Liu et al. 2023): three loops and a deformation residual.

Loop 1, friction from a forward and a backward pass (Liu et al. 2023, eq. 5-8). At the same positions q,
the forward pass moving at (qd, qdd) and the backward pass at (-qd, -qdd) measure::

    tau_1 = M(q) qdd + C(q, qd) qd + G(q) + tau_f(qd)
    tau_2 = -M(q) qdd + C(q, -qd)(-qd) + G(q) + tau_f(-qd)

Coriolis and centrifugal torques are quadratic in qd, so ``C(q, -qd)(-qd) = C(q, qd) qd``; with
friction odd in the velocity (eq. 4, its minus signs lost in the extracted text) the difference is
``tau_1 - tau_2 = 2 M(q) qdd + 2 tau_f(qd)`` (eq. 7), and at constant speed (qdd = 0)
``tau_f = (tau_1 - tau_2) / 2`` (eq. 8): no link model needed. The sum gives the rest,
``(tau_1 + tau_2) / 2 = C(q, qd) qd + G(q)``. Only the odd part of friction is seen this way.
The friction samples are fitted with Liu et al.'s direction-dependent low/high speed model
(eq. 9-10, `motor_ident.core.actuators.friction` ``directional``): its threshold lambda by
`motor_ident.core.actuators.friction.fit_direction_threshold` (for each lambda the model is linear, so
eq. 10 is a 1-D search over lambda with exact least squares inside: the residual is piecewise
constant in lambda, which a gradient step cannot move), then the coefficients at that lambda by
``scipy.optimize.least_squares`` with a soft-L1 loss, so the few samples spoiled where a pass
reverses do not pull the fit (Liu et al. 2023, section 7 notes the errors there).

Loop 2, link dynamics: WLS (`motor_ident.core.estimation.identification.identify`, per-joint variances from
the OLS residuals, Liu et al. 2023, eq. 19-21) of ``tau - tau_f(qd)`` on the rigid-body regressor with the
reflected rotor inertia and no friction columns.

Loop 3, residual: ``tau_u = tau - tau_f - Y theta`` (Liu et al. 2023, eq. 23) as a function of the
deformation ``delta = theta_m / N - theta_l``, its rate, and the joint velocity (the load-dependent
friction of a harmonic drive, ``mu |K delta + D delta_dot| sign(qd)``, is exactly such a function),
one regressor per joint (Liu et al. 2023, section 5):

- ``gmr``: Gaussian Mixture Regression. The mixture over [features, tau_u] (standardised) is fitted
  by EM with the ``gmr`` library; the conditional mean (Liu et al. 2023, eq. 28-33)::

      tau_u(x) = sum_k h_k(x) (mu_y,k + S_yx,k S_xx,k^-1 (x - mu_x,k)),
      h_k(x) = pi_k N(x; mu_x,k, S_xx,k) / sum_i pi_i N(x; mu_x,i, S_xx,i)

  is evaluated by our own vectorised code (regression matrices and Cholesky factors precomputed
  once, log-sum-exp responsibilities), which agrees with ``gmr.GMM.predict`` and costs
  microseconds per sample for the feedforward.
- ``rbf``: ``scipy.interpolate.RBFInterpolator`` (thin-plate spline with smoothing) on the same
  standardised features, the alternative Liu et al. 2023, eq. 24-27 describes.

Loops 2 and 3 are iterated (`identify_three_loop`, ``iterations``): the link dynamics are refitted
to the torque minus friction minus the residual model, then the residual is refitted. One pass
leaves the drive loss of the loaded joints in the shared inertial parameters and so in the
predictions of the light wrist joints on a new trajectory (measured on elastic_arm6: wrist 3
held-out RMSE 10 % below plain WLS after one pass, 38 % after two, 45 % after three).

Every prediction is finite: non-finite features give zero residual, and the output is clipped to
1.5 times the largest training residual of the joint.

`ResidualFeedforward` composes a `motor_ident.core.control.computed_torque.ComputedTorque` with a residual
model: the same ``torque`` / ``command`` / ``gravity`` calls, plus `ResidualFeedforward.set_deformation`
fed by the dual-encoder signals (`motor_ident.core.elastic.dual_encoder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import (
    FrictionKind,
    FrictionShape,
)
from motor_ident.core.elastic.directional_friction import DirectionalFrictionFit
from motor_ident.core.elastic.residual import ResidualConfig, ResidualModel, residual_features
from motor_ident.core.estimation.identification import Identification, Method, identify, structural_base_parameters
from motor_ident.core.estimation.least_squares import FitMetrics, fit_metrics
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------- the three loops


@dataclass(frozen=True, eq=False)
class ThreeLoopModel:
    """Liu et al.'s identified model: friction (loop 1) + link dynamics (loop 2) + residual (loop 3).

    Attributes:
        friction: loop 1 fit per joint.
        link_regressor: rigid-body + reflected inertia regressor, no friction columns.
        link: loop 2 identification (WLS) on that regressor.
        residual: loop 3 model.
        training_metrics: per-joint fit of the full model on the training data.
    """

    friction: tuple[DirectionalFrictionFit, ...]
    link_regressor: Regressor
    link: Identification
    residual: ResidualModel
    training_metrics: FitMetrics

    def friction_torque(self, qd: ArrayLike) -> FloatArray:
        """Loop 1 torque (N, n) [N m] at velocities (N, n)."""
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        return np.stack([fit.torque(qd[:, j]) for j, fit in enumerate(self.friction)], axis=1)

    def rigid_torque(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> FloatArray:
        """Loops 1 and 2: friction plus link dynamics, (N, n) [N m]."""
        Y = self.link.base.base_regressor(self.link_regressor.rows(q, qd, qdd))
        return self.friction_torque(qd) + Y @ self.link.fit.theta

    def predict(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, *, delta: ArrayLike, delta_rate: ArrayLike
    ) -> FloatArray:
        """All three loops, (N, n) [N m]; delta [rad] and delta_rate [rad/s] are (N, n)."""
        features = residual_features(self.residual.config.features, delta=delta, delta_rate=delta_rate, qd=qd, q=q)
        return self.rigid_torque(q, qd, qdd) + self.residual.predict(features)


def identify_three_loop(
    robot: RobotModel,
    friction: Sequence[DirectionalFrictionFit],
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau: ArrayLike,
    *,
    delta: ArrayLike,
    delta_rate: ArrayLike,
    residual: ResidualConfig | None = None,
    iterations: int = 3,
    method: Method | str = Method.WLS,
) -> ThreeLoopModel:
    """Loops 2 and 3 on an excitation record, with loop 1's friction given (module docstring).

    Loops 2 and 3 are iterated (Liu et al.'s "three-loop iterative" scheme, backfitting): loop 2
    fits the link dynamics to ``tau - tau_f - tau_u`` with the previous residual model's
    ``tau_u`` (zero at first), loop 3 refits the residual. Without the iteration, the
    load-dependent drive loss leaks into the shared inertial parameters of neighbouring joints,
    which no per-joint residual can undo on a new trajectory.

    Args:
        robot: rigid-body model (its rotor inertias set the nominal reflected inertia).
        friction: loop 1 fits, one per joint.
        q, qd, qdd: link positions, velocities, accelerations (N, n).
        tau: measured joint (motor) torques (N, n) [N m].
        delta, delta_rate: deformation [rad] and its rate [rad/s] from the two encoders (N, n).
        residual: loop 3 settings (GMR by default).
        iterations: passes of loops 2 and 3 (>= 1).
        method: loop 2's estimator, ``wls`` (per-joint variances, Liu et al. 2023, eq. 19-21) or
            ``gls`` (full cross-joint covariance, eq. 21-22), or any other of `identify`.

    Raises:
        ConfigError: wrong number of friction fits or iterations.
        DataError: shapes disagree or data is not finite (from the estimator).
    """
    residual = ResidualConfig() if residual is None else residual
    n = robot.n
    if len(friction) != n:
        raise ConfigError(f"friction fits for {len(friction)} joints: expected {n}")
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ConfigError(f"iterations = {iterations!r}: expected an integer >= 1")
    q, qd, qdd, tau = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd, tau))
    regressor = Regressor(robot, [FrictionShape(kind=FrictionKind.NONE)] * n, reflected_inertia=True)
    base = structural_base_parameters(regressor)
    Y = base.base_regressor(regressor.rows(q, qd, qdd))
    tau_f = np.stack([fit.torque(qd[:, j]) for j, fit in enumerate(friction)], axis=1)
    features = residual_features(residual.features, delta=delta, delta_rate=delta_rate, qd=qd, q=q)
    tau_u = np.zeros_like(tau)
    model: ResidualModel | None = None
    for _ in range(iterations):
        link = identify(regressor, q, qd, qdd, tau - tau_f - tau_u, method=method, base=base)
        rigid = tau_f + Y @ link.fit.theta
        model = ResidualModel.fit(features, tau - rigid, residual, warm_start=model)
        tau_u = model.predict(features)
    assert model is not None  # iterations >= 1
    return ThreeLoopModel(
        friction=tuple(friction),
        link_regressor=regressor,
        link=link,
        residual=model,
        training_metrics=fit_metrics(tau, rigid + tau_u),
    )


# --------------------------------------------------------------------------- feedforward


class ResidualFeedforward:
    """A computed-torque law plus the residual model's torque: a drop-in for `ComputedTorque`.

    ``torque``, ``command`` and ``gravity`` keep the signatures of
    `motor_ident.core.control.computed_torque.ComputedTorque`; ``torque`` and ``command`` add the residual
    predicted at the measured velocity and the latest deformation given to `set_deformation`
    (zero residual until then, or when it is not finite). Saturation stays with the caller
    (`motor_ident.core.control.computed_torque.saturate`), as for the plain law.

    Args:
        law: a `ComputedTorque` (or anything with its ``torque``/``command``/``gravity``).
        residual: loop 3 model of the same joints.
    """

    def __init__(self, law: Any, residual: ResidualModel) -> None:
        n = law.regressor.robot.n
        if residual.n != n:
            raise ConfigError(f"residual model for {residual.n} joints: expected {n}")
        self.law = law
        self.residual = residual
        self._delta = np.full(n, np.nan)
        self._delta_rate = np.full(n, np.nan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.law, name)

    def set_deformation(self, delta: ArrayLike, delta_rate: ArrayLike) -> None:
        """Latest dual-encoder deformation (n,) [rad] and its rate (n,) [rad/s]."""
        self._delta = np.asarray(delta, dtype=float).copy()
        self._delta_rate = np.asarray(delta_rate, dtype=float).copy()

    def residual_torque(self, q: ArrayLike, qd: ArrayLike) -> FloatArray:
        """Residual torque (n,) [N m] at the measured state and the latest deformation."""
        features = residual_features(
            self.residual.config.features, delta=self._delta, delta_rate=self._delta_rate, qd=qd, q=q
        )[0]
        return self.residual.predict(features)

    def torque(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """Law torque plus residual (n,) [N m]."""
        tau: FloatArray = self.law.torque(q, qd, qdd, theta_base) + self.residual_torque(q, qd)
        return tau

    def command(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        q_ref: ArrayLike,
        qd_ref: ArrayLike,
        qdd_ref: ArrayLike,
        theta_base: ArrayLike,
    ) -> FloatArray:
        """Law command plus residual (n,) [N m], unsaturated."""
        command: FloatArray = self.law.command(q, qd, q_ref, qd_ref, qdd_ref, theta_base) + self.residual_torque(q, qd)
        return command

    def gravity(self, q: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """The law's gravity torque (the safe fallback carries no learned residual)."""
        gravity: FloatArray = self.law.gravity(q, theta_base)
        return gravity
