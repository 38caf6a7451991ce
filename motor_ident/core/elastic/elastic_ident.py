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
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import (
    FrictionKind,
    FrictionShape,
    fit_direction_threshold,
    friction_regressor,
)
from motor_ident.core.estimation.identification import Identification, Method, identify, structural_base_parameters
from motor_ident.core.estimation.least_squares import FitMetrics, fit_metrics
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]

RESIDUAL_KINDS = ("gmr", "rbf", "none")
FEATURES = ("delta", "delta_rate", "qd", "q")


# --------------------------------------------------------------------------- loop 1: friction


def bidirectional_friction(tau_forward: ArrayLike, tau_backward: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Friction and the static part from a forward and a backward pass at the same positions (eq. 7-8).

    Args:
        tau_forward: joint torques of the forward pass, shape (N, n) or (N,) [N m].
        tau_backward: torques of the backward pass at the same positions, same shape [N m].

    Returns:
        ``(tau_f, tau_static)``: ``(tau_1 - tau_2) / 2`` = friction at the forward velocity (plus
        M qdd where the passes accelerate) and ``(tau_1 + tau_2) / 2`` = C(q, qd) qd + G(q).
    """
    t1 = np.asarray(tau_forward, dtype=float)
    t2 = np.asarray(tau_backward, dtype=float)
    if t1.shape != t2.shape:
        raise DataError(f"forward torques {t1.shape} and backward torques {t2.shape}: expected equal shapes")
    return 0.5 * (t1 - t2), 0.5 * (t1 + t2)


def align_backward_pass(
    q_forward: ArrayLike, q_backward: ArrayLike, values: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Backward-pass samples interpolated, joint by joint, at the forward pass's measured positions.

    Each joint must move monotonically in each pass. Forward samples outside the positions the
    backward pass covered (for any joint) are dropped.

    Args:
        q_forward: positions of the forward pass (N, n) [rad].
        q_backward: positions of the backward pass (M, n) [rad], any time order.
        values: backward-pass samples to align, (M, n) (e.g. torques [N m]).

    Returns:
        ``(keep, aligned)``: boolean mask (N,) of the forward samples kept, and the aligned values
        (keep.sum(), n).

    Raises:
        DataError: shapes disagree or a joint does not move monotonically.
    """
    qf = np.atleast_2d(np.asarray(q_forward, dtype=float))
    qb = np.atleast_2d(np.asarray(q_backward, dtype=float))
    vb = np.atleast_2d(np.asarray(values, dtype=float))
    if qb.shape != vb.shape or qf.shape[1] != qb.shape[1]:
        raise DataError(
            f"q_forward {qf.shape}, q_backward {qb.shape}, values {vb.shape}: expected (N, n), (M, n), (M, n)"
        )
    keep = np.ones(qf.shape[0], dtype=bool)
    out = np.zeros_like(qf)
    for j in range(qf.shape[1]):
        order = np.argsort(qb[:, j], kind="stable")
        x = qb[order, j]
        if not np.all(np.diff(x) > 0.0):
            # quantised encoders repeat values at low speed: collapse repeats to their mean
            x, inverse = np.unique(x, return_inverse=True)
            if x.size < 2:
                raise DataError(f"joint {j} does not move in the backward pass")
            y = np.bincount(inverse, weights=vb[order, j]) / np.bincount(inverse)
        else:
            y = vb[order, j]
        keep &= (qf[:, j] >= x[0]) & (qf[:, j] <= x[-1])
        out[:, j] = np.interp(qf[:, j], x, y)
    return keep, out[keep]


@dataclass(frozen=True)
class DirectionalFrictionFit:
    """Loop 1 result for one joint: Liu et al.'s friction model with its fitted threshold.

    Attributes:
        shape: the ``directional`` shape with the fitted ``direction_threshold`` lambda [rad/s].
        theta: parameters in ``shape.names`` order (8,).
        rmse: RMS residual of the fit over the friction samples [N m].
    """

    shape: FrictionShape
    theta: FloatArray

    rmse: float

    def torque(self, v: ArrayLike) -> FloatArray:
        """Friction torque at velocities ``v`` (N,) [rad/s] -> (N,) [N m]."""
        return friction_regressor(np.atleast_1d(np.asarray(v, dtype=float)), self.shape) @ self.theta


def fit_directional_friction(
    velocity: ArrayLike,
    tau_friction: ArrayLike,
    *,
    shape: FrictionShape | None = None,
    threshold_bounds: tuple[float, float] = (1e-3, 0.5),
    robust: bool = True,
) -> DirectionalFrictionFit:
    """Fit Liu et al. 2023, eq. 9-10 to one joint's friction samples (module docstring, loop 1).

    Args:
        velocity: joint velocities (N,) [rad/s], both signs.
        tau_friction: friction torque samples (N,) [N m].
        shape: the directional shape to start from (its eps is kept); the default has eps 1e-4.
        threshold_bounds: search range of lambda [rad/s].
        robust: refine the coefficients with a soft-L1 loss (scipy.optimize.least_squares).

    Raises:
        DataError: fewer than 16 finite samples, or no samples on one side of zero.
        ConfigError: ``shape`` is not directional.
    """
    v = np.asarray(velocity, dtype=float).ravel()
    y = np.asarray(tau_friction, dtype=float).ravel()
    if v.shape != y.shape:
        raise DataError(f"velocity {v.shape} and friction {y.shape}: expected equal lengths")
    finite = np.isfinite(v) & np.isfinite(y)
    v, y = v[finite], y[finite]
    if v.size < 16 or not (np.any(v > 0.0) and np.any(v < 0.0)):
        raise DataError(f"{v.size} friction samples: expected at least 16, with both directions of motion")
    shape = FrictionShape(kind=FrictionKind.DIRECTIONAL) if shape is None else shape
    if shape.kind is not FrictionKind.DIRECTIONAL:
        raise ConfigError(f"friction.kind = {shape.kind.value}: expected directional")
    fitted, theta = fit_direction_threshold(v, y, shape, bounds=threshold_bounds)
    X = friction_regressor(v, fitted)
    if robust:
        residual0 = X @ theta - y
        scale = max(1.4826 * float(np.median(np.abs(residual0 - np.median(residual0)))), 1e-9)
        theta = scipy.optimize.least_squares(
            lambda p: X @ p - y, theta, loss="soft_l1", f_scale=2.0 * scale, method="trf"
        ).x
    rmse = float(np.sqrt(np.mean((X @ theta - y) ** 2)))
    return DirectionalFrictionFit(shape=fitted, theta=np.asarray(theta, dtype=float), rmse=rmse)


# --------------------------------------------------------------------------- loop 3: residual models


@dataclass(frozen=True)
class ResidualConfig:
    """How the residual torque of loop 3 is modelled.

    Attributes:
        kind: ``gmr`` (Gaussian Mixture Regression), ``rbf`` (RBF interpolation) or ``none``.
        features: per-joint inputs, from ``delta`` [rad], ``delta_rate`` [rad/s], ``qd`` [rad/s], ``q`` [rad].
        n_components: Gaussian components per joint (gmr).
        max_samples: training samples per joint (evenly subsampled; EM and RBF cost grow with it).
        rbf_smoothing: smoothing of the RBF fit (standardised units; 0 interpolates).
        seed: seed of the EM initialisation.
    """

    kind: str = "gmr"
    features: tuple[str, ...] = ("delta", "delta_rate", "qd")
    n_components: int = 8
    max_samples: int = 3000
    rbf_smoothing: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in RESIDUAL_KINDS:
            raise ConfigError(f"residual.kind = {self.kind!r}: expected one of {RESIDUAL_KINDS}")
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown or not self.features or len(set(self.features)) != len(self.features):
            raise ConfigError(f"residual.features = {self.features!r}: expected distinct names from {FEATURES}")
        if not (isinstance(self.n_components, int) and self.n_components >= 1):
            raise ConfigError(f"residual.n_components = {self.n_components!r}: expected an integer >= 1")
        if not (isinstance(self.max_samples, int) and self.max_samples >= 50):
            raise ConfigError(f"residual.max_samples = {self.max_samples!r}: expected an integer >= 50")
        if not (np.isfinite(self.rbf_smoothing) and self.rbf_smoothing >= 0.0):
            raise ConfigError(f"residual.rbf_smoothing = {self.rbf_smoothing!r}: expected a finite number >= 0")


def residual_features(
    features: Sequence[str],
    *,
    delta: ArrayLike,
    delta_rate: ArrayLike,
    qd: ArrayLike,
    q: ArrayLike | None = None,
) -> FloatArray:
    """Stack the named per-joint inputs: arrays (N, n) (or (n,)) -> (N, n, len(features))."""
    arrays = {"delta": delta, "delta_rate": delta_rate, "qd": qd, "q": q}
    stacked = []
    for name in features:
        if arrays[name] is None:
            raise DataError(f"residual feature {name!r} was asked for but not given")
        stacked.append(np.atleast_2d(np.asarray(arrays[name], dtype=float)))
    shapes = {x.shape for x in stacked}
    if len(shapes) != 1:
        raise DataError(f"residual features {list(features)} have shapes {sorted(shapes)}: expected (N, n) each")
    return np.stack(stacked, axis=-1)


def _single_blas_thread() -> Any:
    """Context limiting BLAS to one thread: EM makes thousands of tiny triangular solves, which a
    multi-threaded OpenBLAS on a shared machine runs several times slower (measured 14 s -> 3 s)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


class GaussianMixtureRegression:
    """Conditional mean of a Gaussian mixture over [x, y] (Liu et al. 2023, eq. 28-33), vectorised.

    Built from the mixture parameters (e.g. a fitted ``gmr.GMM``): priors (K,), means (K, d+1),
    covariances (K, d+1, d+1), the output being the last dimension.
    """

    def __init__(self, priors: ArrayLike, means: ArrayLike, covariances: ArrayLike) -> None:
        priors = np.asarray(priors, dtype=float)
        means = np.asarray(means, dtype=float)
        cov = np.asarray(covariances, dtype=float)
        K, dim = means.shape
        d = dim - 1
        self.mean_x = means[:, :d]
        self.mean_y = means[:, d]
        cov_xx = cov[:, :d, :d] + 1e-9 * np.eye(d)
        self.chol = np.linalg.cholesky(cov_xx)  # (K, d, d)
        self.chol_inv = np.linalg.inv(self.chol)  # small (d x d): one einsum per prediction, no loop
        # regression vector S_yx S_xx^-1 per component
        self.gain = np.linalg.solve(cov_xx, cov[:, :d, d][:, :, None])[:, :, 0]  # (K, d)
        log_det = 2.0 * np.log(np.diagonal(self.chol, axis1=1, axis2=2)).sum(axis=1)
        self.log_weight = np.log(np.maximum(priors, 1e-300)) - 0.5 * log_det - 0.5 * d * np.log(2.0 * np.pi)
        self.n_inputs = d
        self.n_components = K
        self.mixture = (priors, means, cov)  # to warm-start a refit

    def predict(self, x: ArrayLike) -> FloatArray:
        """Conditional mean E[y | x] for inputs (N, d) -> (N,)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        diff = x[:, None, :] - self.mean_x[None, :, :]  # (N, K, d)
        z = np.einsum("kij,nkj->nki", self.chol_inv, diff)  # whitened: L^-1 (x - mu) per component
        log_h = self.log_weight[None, :] - 0.5 * np.einsum("nkd,nkd->nk", z, z)
        log_h -= log_h.max(axis=1, keepdims=True)
        h = np.exp(log_h)
        h /= h.sum(axis=1, keepdims=True)
        experts = self.mean_y[None, :] + np.einsum("kd,nkd->nk", self.gain, diff)
        return np.einsum("nk,nk->n", h, experts)


class ResidualModel:
    """Loop 3: one residual regressor per joint on standardised features (module docstring).

    Use `ResidualModel.fit`; `predict` maps features (N, n, f) to residual torques (N, n) [N m].
    """

    def __init__(self, config: ResidualConfig, n: int) -> None:
        self.config = config
        self.n = n
        self._x_mean = np.zeros((n, len(config.features)))
        self._x_std = np.ones((n, len(config.features)))
        self._y_mean = np.zeros(n)
        self._y_std = np.ones(n)
        self._limit = np.zeros(n)
        self._active = np.ones((n, len(config.features)), dtype=bool)
        self._models: list[Any] = []
        self._stacked: tuple[FloatArray, ...] | None = None

    @classmethod
    def fit(
        cls,
        features: ArrayLike,
        residual: ArrayLike,
        config: ResidualConfig,
        *,
        warm_start: ResidualModel | None = None,
    ) -> ResidualModel:
        """Fit on features (N, n, f) and residual torques (N, n) [N m].

        ``warm_start``: a previous fit of the same config whose mixtures start EM (a backfitting
        pass changes the residual little, so EM converges in a few steps instead of ~100).

        Raises:
            DataError: shapes disagree, too few finite samples.
        """
        X = np.asarray(features, dtype=float)
        y = np.asarray(residual, dtype=float)
        if X.ndim != 3 or y.shape != X.shape[:2] or X.shape[2] != len(config.features):
            raise DataError(
                f"features {X.shape} and residual {y.shape}: expected (N, n, {len(config.features)}) and (N, n)"
            )
        model = cls(config, X.shape[1])
        if config.kind == "none":
            return model
        for j in range(model.n):
            finite = np.all(np.isfinite(X[:, j]), axis=1) & np.isfinite(y[:, j])
            xj, yj = X[finite, j], y[finite, j]
            if xj.shape[0] < max(20, 5 * config.n_components):
                raise DataError(f"joint {j}: {xj.shape[0]} finite residual samples are too few to fit")
            step = max(1, int(np.ceil(xj.shape[0] / config.max_samples)))
            xj, yj = xj[::step], yj[::step]
            spread = xj.std(axis=0)
            # a feature that never varies carries no information and makes the fits singular: left out
            model._active[j] = spread > 1e-12 * np.maximum(np.abs(xj).max(axis=0), 1e-300)
            model._x_mean[j], model._x_std[j] = xj.mean(axis=0), np.where(model._active[j], spread, 1.0)
            model._y_mean[j], model._y_std[j] = yj.mean(), max(float(yj.std()), 1e-12)
            model._limit[j] = 1.5 * float(np.max(np.abs(yj)))
            zx = ((xj - model._x_mean[j]) / model._x_std[j])[:, model._active[j]]
            zy = (yj - model._y_mean[j]) / model._y_std[j]
            previous = None
            if warm_start is not None and warm_start.config == config and j < len(warm_start._models):
                if np.array_equal(warm_start._active[j], model._active[j]):
                    previous = warm_start._models[j]
            model._models.append(model._fit_one(zx, zy, previous) if model._active[j].any() else None)
        model._stack_mixtures()
        return model

    def _stack_mixtures(self) -> None:
        """Stack every joint's mixture (all GMR, every feature active) for one vectorised prediction."""
        self._stacked = None
        models = self._models
        if not models or not all(isinstance(m, GaussianMixtureRegression) for m in models) or not self._active.all():
            return
        self._stacked = tuple(
            np.stack([getattr(m, key) for m in models])
            for key in ("mean_x", "mean_y", "chol_inv", "gain", "log_weight")
        )

    def _fit_one(self, zx: FloatArray, zy: FloatArray, previous: Any = None) -> Any:
        cfg = self.config
        if cfg.kind == "rbf":
            from scipy.interpolate import RBFInterpolator

            return RBFInterpolator(zx, zy, kernel="thin_plate_spline", smoothing=cfg.rbf_smoothing)
        from gmr import GMM

        if isinstance(previous, GaussianMixtureRegression):
            priors, means, covariances = (np.array(x, copy=True) for x in previous.mixture)
            gmm = GMM(cfg.n_components, priors, means, covariances, random_state=np.random.RandomState(cfg.seed))
        else:
            gmm = GMM(n_components=cfg.n_components, random_state=np.random.RandomState(cfg.seed))
        with _single_blas_thread():
            gmm.from_samples(np.column_stack([zx, zy]), init_params="kmeans++", oracle_approximating_shrinkage=True)
        return GaussianMixtureRegression(gmm.priors, gmm.means, gmm.covariances)

    def predict(self, features: ArrayLike) -> FloatArray:
        """Residual torques (N, n) [N m] for features (N, n, f) (or (n, f)); 0 where a feature is not finite."""
        X = np.asarray(features, dtype=float)
        single = X.ndim == 2
        X = X[None] if single else X
        if X.ndim != 3 or X.shape[1:] != (self.n, len(self.config.features)):
            raise DataError(f"features {X.shape}: expected (N, {self.n}, {len(self.config.features)})")
        out = np.zeros(X.shape[:2])
        if self._stacked is not None:
            out = self._predict_stacked(X)
        elif self.config.kind != "none":
            for j, model in enumerate(self._models):
                finite = np.all(np.isfinite(X[:, j]), axis=1)
                if not finite.any():
                    continue
                z = ((X[finite, j] - self._x_mean[j]) / self._x_std[j])[:, self._active[j]]
                if model is None:  # no feature varied in training: the mean residual
                    zy = np.zeros(z.shape[0])
                elif isinstance(model, GaussianMixtureRegression):
                    zy = model.predict(z)
                else:
                    zy = model(z)
                y = self._y_mean[j] + self._y_std[j] * np.asarray(zy, dtype=float).ravel()
                out[finite, j] = np.clip(np.nan_to_num(y), -self._limit[j], self._limit[j])
        return out[0] if single else out

    def _predict_stacked(self, X: FloatArray) -> FloatArray:
        """All joints' GMR at once (same equations as `GaussianMixtureRegression.predict`), (N, n)."""
        assert self._stacked is not None
        mean_x, mean_y, chol_inv, gain, log_weight = self._stacked
        finite = np.all(np.isfinite(X), axis=2)  # (N, n)
        z = (np.where(finite[:, :, None], X, 0.0) - self._x_mean) / self._x_std  # (N, n, d)
        diff = z[:, :, None, :] - mean_x[None]  # (N, n, K, d)
        w = np.einsum("jkab,njkb->njka", chol_inv, diff)
        log_h = log_weight[None] - 0.5 * np.einsum("njka,njka->njk", w, w)
        log_h -= log_h.max(axis=2, keepdims=True)
        h = np.exp(log_h)
        h /= h.sum(axis=2, keepdims=True)
        zy = np.einsum("njk,njk->nj", h, mean_y[None] + np.einsum("jkd,njkd->njk", gain, diff))
        y = np.clip(np.nan_to_num(self._y_mean + self._y_std * zy), -self._limit, self._limit)
        return np.where(finite, y, 0.0)


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
        link = identify(regressor, q, qd, qdd, tau - tau_f - tau_u, method=Method.WLS, base=base)
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
        return self.law.torque(q, qd, qdd, theta_base) + self.residual_torque(q, qd)

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
        return self.law.command(q, qd, q_ref, qd_ref, qdd_ref, theta_base) + self.residual_torque(q, qd)

    def gravity(self, q: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """The law's gravity torque (the safe fallback carries no learned residual)."""
        return self.law.gravity(q, theta_base)


__all__ = [
    "DirectionalFrictionFit",
    "GaussianMixtureRegression",
    "ResidualConfig",
    "ResidualFeedforward",
    "ResidualModel",
    "ThreeLoopModel",
    "align_backward_pass",
    "bidirectional_friction",
    "fit_directional_friction",
    "identify_three_loop",
    "residual_features",
]
