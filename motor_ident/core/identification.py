"""Offline identification: regressor -> base parameters -> estimator -> held-out validation.

`identify` is what ``motor-ident identify`` runs; the online identifier node uses the same
`Regressor`, `BaseParameters` and estimators on its sliding buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.base_params import BaseParameters, base_parameters
from motor_ident.core.estimation import Fit, FitMetrics, fit_metrics, ols, pulled_to_nominal, wls
from motor_ident.core.model import random_states
from motor_ident.core.regressor import Regressor
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]


class Method(str, Enum):
    """Estimator used by `identify`."""

    OLS = "ols"
    WLS = "wls"
    NOMINAL = "nominal"


def structural_base_parameters(regressor: Regressor, *, samples: int = 400, seed: int = 0) -> BaseParameters:
    """Base parameters of the model itself, from random states spread over the joint limits.

    This is structural identifiability: what no trajectory can separate. Whether a given record
    excites the rest is told by the condition number of the fit.
    """
    rng = np.random.default_rng(seed)
    q, v, a = random_states(regressor.robot, rng, samples)
    return base_parameters(regressor.rows(q, v, a), regressor.names)


@dataclass(frozen=True, eq=False)
class Identification:
    """Result of `identify`.

    Attributes:
        fit: the estimator's result on the base parameters (training part).
        base: the full <-> base parameter map.
        theta: full parameter vector consistent with the base estimate (dependent parameters
            taken from the nominal model), shape (p,).
        names: full parameter names, length p.
        heldout: metrics on the held-out part, or None without validation.
        n_train: training samples; n_heldout: held-out samples.
    """

    fit: Fit
    base: BaseParameters
    theta: FloatArray
    names: tuple[str, ...]
    heldout: FitMetrics | None
    n_train: int
    n_heldout: int


def identify(
    regressor: Regressor,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau: ArrayLike,
    *,
    method: Method | str = Method.WLS,
    theta_nominal: ArrayLike | None = None,
    alpha: float = 0.9,
    validate_fraction: float = 0.0,
    base: BaseParameters | None = None,
) -> Identification:
    """Identify the base parameters from joint data.

    Args:
        regressor: the full regressor of the robot.
        q, qd, qdd: joint positions, velocities, accelerations, each shape (N, n).
        tau: measured joint torques, shape (N, n) [N m].
        method: ``ols``, ``wls`` or ``nominal`` (pulled toward ``theta_nominal`` with ``alpha``).
        theta_nominal: full nominal parameters (p,); used for the dependent parameters of the
            returned full vector and by the ``nominal`` method. Zeros when None.
        alpha: data weight of the ``nominal`` method, in (0, 1].
        validate_fraction: fraction of samples at the END of the record held out for validation.
        base: base parameter map (computed structurally when None).

    Raises:
        DataError: shapes disagree, data is not finite, or too few samples remain.
    """
    q, qd, qdd, tau = (np.asarray(x, dtype=float) for x in (q, qd, qdd, tau))
    n = regressor.robot.n
    if not (q.shape == qd.shape == qdd.shape == tau.shape) or q.ndim != 2 or q.shape[1] != n:
        raise DataError(f"q {q.shape}, qd {qd.shape}, qdd {qdd.shape}, tau {tau.shape}: expected (N, {n}) each")
    if not 0.0 <= validate_fraction < 1.0:
        raise ConfigError(f"validate = {validate_fraction!r}: expected a fraction in [0, 1)")
    method = Method(method)
    N = q.shape[0]
    n_heldout = int(round(N * validate_fraction))
    n_train = N - n_heldout
    base = structural_base_parameters(regressor) if base is None else base
    if n_train * n < 2 * base.n_base:
        raise DataError(f"{n_train} training samples are too few for {base.n_base} base parameters")
    theta_ref = np.zeros(regressor.n_parameters) if theta_nominal is None else np.asarray(theta_nominal, dtype=float)
    Y = base.base_regressor(regressor.rows(q, qd, qdd))
    train = slice(0, n_train)
    if method is Method.OLS:
        fit = ols(Y[train], tau[train])
    elif method is Method.WLS:
        fit = wls(Y[train], tau[train])
    else:
        fit = pulled_to_nominal(Y[train], tau[train], base.to_base(theta_ref), alpha)
    heldout = None
    if n_heldout:
        heldout = fit_metrics(tau[n_train:], Y[n_train:] @ fit.theta)
    return Identification(
        fit=fit,
        base=base,
        theta=base.to_full(fit.theta, theta_ref),
        names=regressor.names,
        heldout=heldout,
        n_train=n_train,
        n_heldout=n_heldout,
    )
