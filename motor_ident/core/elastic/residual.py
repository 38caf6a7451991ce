"""Residual torque models (GMR, RBF) on deformation features."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.interpolate import RBFInterpolator

from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]

RESIDUAL_KINDS = ("gmr", "rbf", "none")
FEATURES = ("delta", "delta_rate", "qd", "q")


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
        out: FloatArray = np.einsum("nk,nk->n", h, experts)
        return out


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
            return RBFInterpolator(zx, zy, kernel="thin_plate_spline", smoothing=cfg.rbf_smoothing)
        from gmr import GMM  # here: gmr (scikit-learn) costs ~1.3 s at import (measured, idle)

        samples = np.column_stack([zx, zy])
        if isinstance(previous, GaussianMixtureRegression):
            priors, means, covariances = (np.array(x, copy=True) for x in previous.mixture)
            warm = GMM(cfg.n_components, priors, means, covariances, random_state=np.random.RandomState(cfg.seed))
            try:
                with _single_blas_thread():
                    warm.from_samples(samples, init_params="kmeans++", oracle_approximating_shrinkage=True)
                return GaussianMixtureRegression(warm.priors, warm.means, warm.covariances)
            except (ValueError, np.linalg.LinAlgError):
                pass  # a warm-started component lost all its samples (EM divides by zero): start afresh
        gmm = GMM(n_components=cfg.n_components, random_state=np.random.RandomState(cfg.seed))
        with _single_blas_thread():
            gmm.from_samples(samples, init_params="kmeans++", oracle_approximating_shrinkage=True)
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
