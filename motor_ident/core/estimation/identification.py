"""Offline identification: regressor -> base parameters -> estimator -> held-out validation.

`identify` is what ``motor-ident identify`` runs; the online identifier node uses the same
`Regressor`, `BaseParameters` and estimators on its sliding buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from enum import Enum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistency import ConsistencyChecker, ConsistencyResult
from motor_ident.core.estimation.consistent_fit import consistent_least_squares
from motor_ident.core.estimation.constraints import physical_constraints
from motor_ident.core.estimation.covariance import with_residual_covariance
from motor_ident.core.estimation.least_squares import Fit, FitMetrics, RegressionStatistics
from motor_ident.core.rigid_body.base_params import BaseParameters, base_parameters
from motor_ident.core.rigid_body.model import random_states
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]
LARGEST_VALUE = 1e50
"""Largest |q|, |qd|, |qdd|, |tau| `identify` takes: the regressor's products of larger values overflow."""


def check_magnitude(name: str, x: ArrayLike) -> None:
    """Refuse data whose finite values reach beyond `LARGEST_VALUE` (NaN and Inf are left to the caller).

    Raises:
        DataError: ``name reaches ...``, with the first such sample.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        beyond = np.isfinite(x) & (np.abs(x) > LARGEST_VALUE)
    if beyond.any():
        k = int(np.flatnonzero(np.atleast_1d(beyond).reshape(max(x.shape[:1]), -1).any(axis=1))[0])
        raise DataError(
            f"{name} reaches {np.max(np.abs(x[beyond])):.3g} (first at sample {k}): beyond {LARGEST_VALUE:.0e} its "
            "products overflow in the least squares; check its unit or a damaged sample"
        )


CACHE_BYTES = 128 * 2**20
"""Base regressors up to this size are kept for the covariance's second pass instead of being recomputed."""


class Method(str, Enum):
    """Estimator used by `identify`."""

    OLS = "ols"
    WLS = "wls"
    GLS = "gls"
    NOMINAL = "nominal"
    SDP = "sdp"
    LOG_CHOLESKY = "log_cholesky"


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
            taken from the nominal model; physically valid bodies for ``sdp`` and
            ``log_cholesky``), shape (p,).
        names: full parameter names, length p.
        heldout: metrics on the held-out part, or None without validation.
        n_train: training samples; n_heldout: held-out samples.
        consistency: physical validity of an ``ols`` / ``wls`` / ``nominal`` estimate within its
            noise (`ConsistencyChecker.check_within_noise`, 99 %), when requested; else None.
    """

    fit: Fit
    base: BaseParameters
    theta: FloatArray
    names: tuple[str, ...]
    heldout: FitMetrics | None
    n_train: int
    n_heldout: int
    consistency: ConsistencyResult | None = None


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
    chunk_size: int = 5000,
    progress: Callable[[float], None] | None = None,
    check_consistency: bool = False,
) -> Identification:
    """Identify the base parameters from joint data.

    The regressor is built and reduced to sufficient statistics chunk by chunk, so memory does not
    grow with the record's length.

    Args:
        regressor: the full regressor of the robot.
        q, qd, qdd: joint positions, velocities, accelerations, each shape (N, n).
        tau: measured joint torques, shape (N, n) [N m].
        method: ``ols``, ``wls``, ``gls`` (full cross-joint noise covariance from the OLS
            residuals, `RegressionStatistics.gls`), ``nominal`` (pulled toward ``theta_nominal`` with ``alpha``), or
            physically consistent weighted least squares (every body's pseudo-inertia PSD,
            friction with its sign; `motor_ident.core.estimation.consistency`) solved as an SDP (``sdp``)
            or by log-Cholesky least squares (``log_cholesky``). Their reported covariance is
            the unconstrained WLS one. Every covariance is the sandwich of
            `motor_ident.core.estimation.covariance` (residual correlation included): a second
            pass over the training samples, from kept regressors up to `CACHE_BYTES`.
        theta_nominal: full nominal parameters (p,); used for the dependent parameters of the
            returned full vector and by the ``nominal`` method. Zeros when None.
        alpha: data weight of the ``nominal`` method, in (0, 1].
        validate_fraction: fraction of samples at the END of the record held out for validation.
        base: base parameter map (computed structurally when None).
        chunk_size: samples per regressor chunk.
        progress: called with the fraction of samples processed, from 0 to 1.
        check_consistency: tell whether an ``ols`` / ``wls`` / ``nominal`` estimate has
            physically valid links behind it, within its noise (an SDP; about 0.1-0.5 s plus
            cvxpy's import).

    Raises:
        DataError: shapes disagree, data is not finite or beyond `LARGEST_VALUE`, or too few samples remain.
    """
    q, qd, qdd, tau = (np.asarray(x, dtype=float) for x in (q, qd, qdd, tau))
    n = regressor.robot.n
    if not (q.shape == qd.shape == qdd.shape == tau.shape) or q.ndim != 2 or q.shape[1] != n:
        raise DataError(f"q {q.shape}, qd {qd.shape}, qdd {qdd.shape}, tau {tau.shape}: expected (N, {n}) each")
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd), ("tau", tau)):
        if not np.all(np.isfinite(x)):
            raise DataError(f"{name} contains NaN or Inf: clean or cut the record first")
        check_magnitude(name, x)
    if not 0.0 <= validate_fraction < 1.0:
        raise ConfigError(f"validate = {validate_fraction!r}: expected a fraction in [0, 1)")
    method = Method(method)
    N = q.shape[0]
    n_heldout = int(round(N * validate_fraction))
    n_train = N - n_heldout
    if validate_fraction > 0.0 and n_heldout == 0:
        raise DataError(f"validate = {validate_fraction!r} holds out no sample of {N}: hold out a larger fraction")
    base = structural_base_parameters(regressor) if base is None else base
    if n_train * n < 2 * base.n_base:
        raise DataError(f"{n_train} training samples are too few for {base.n_base} base parameters")
    train = RegressionStatistics(n, base.n_base, cross=method is Method.GLS)
    heldout_stats = RegressionStatistics(n, base.n_base)
    buffer = np.zeros((min(chunk_size, N), n, regressor.n_parameters))
    keep = n_train * n * base.n_base * 8 <= CACHE_BYTES
    kept: list[tuple[FloatArray, FloatArray]] = []
    for start in range(0, N, chunk_size):
        stop = min(start + chunk_size, N)
        Y = base.base_regressor(
            regressor.rows(q[start:stop], qd[start:stop], qdd[start:stop], out=buffer[: stop - start])
        )
        split = min(max(n_train - start, 0), stop - start)
        if split:
            train.add(Y[:split], tau[start : start + split])
            if keep:
                kept.append((Y[:split], tau[start : start + split]))
        if split < stop - start:
            heldout_stats.add(Y[split:], tau[start + split : stop])
        if progress is not None:
            progress(stop / N)
    result = fit_statistics(
        regressor,
        base,
        train,
        heldout_stats if n_heldout else None,
        method=method,
        theta_nominal=theta_nominal,
        alpha=alpha,
        check_consistency=check_consistency,
    )
    chunks = kept if keep else base_regressor_chunks(regressor, base, q[:n_train], qd, qdd, tau, chunk_size)
    fit = with_residual_covariance(result.fit, train, chunks, samples=n_train, alpha=alpha)
    return replace(result, fit=fit)


def base_regressor_chunks(
    regressor: Regressor,
    base: BaseParameters,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau: FloatArray,
    chunk_size: int = 5000,
) -> Iterator[tuple[FloatArray, FloatArray]]:
    """Base regressor and torques of the first ``len(q)`` samples, chunk by chunk: (Y (N_c, n, b), tau (N_c, n))."""
    for start in range(0, q.shape[0], chunk_size):
        stop = min(start + chunk_size, q.shape[0])
        yield base.base_regressor(regressor.rows(q[start:stop], qd[start:stop], qdd[start:stop])), tau[start:stop]


def fit_statistics(
    regressor: Regressor,
    base: BaseParameters,
    train: RegressionStatistics,
    heldout: RegressionStatistics | None = None,
    *,
    method: Method | str = Method.WLS,
    theta_nominal: ArrayLike | None = None,
    alpha: float = 0.9,
    check_consistency: bool = False,
) -> Identification:
    """The estimate of `identify` from sufficient statistics of the base regressor.

    `identify` accumulates them from arrays; statistics of several chunks of a recording, merged
    with `RegressionStatistics.merge`, give the same estimate as the whole recording. Arguments as
    in `identify`; ``heldout``: statistics of held-out samples, or None.
    """
    method = Method(method)
    theta_ref = np.zeros(regressor.n_parameters) if theta_nominal is None else np.asarray(theta_nominal, dtype=float)
    if method is Method.OLS:
        fit = train.ols()
    elif method is Method.WLS:
        fit = train.wls()
    elif method is Method.GLS:
        fit = train.gls()
    elif method is Method.NOMINAL:
        fit = train.pulled_to_nominal(base.to_base(theta_ref), alpha)
    else:
        fit = train.wls()
        consistent = consistent_least_squares(
            train,
            physical_constraints(regressor),
            base=base,
            theta_nominal=theta_nominal,
            sigma=fit.sigma,
            method=method.value,
        )
        fit = replace(fit, theta=consistent.theta_data, method=method.value, **asdict(consistent.metrics))
        theta_ref = consistent.theta
    consistency = None
    if check_consistency and method in (Method.OLS, Method.WLS, Method.GLS, Method.NOMINAL):
        checker = ConsistencyChecker(physical_constraints(regressor), base, theta_ref)
        consistency = checker.check_within_noise(fit.theta, train, fit.sigma)
    return Identification(
        fit=fit,
        base=base,
        theta=base.to_full(fit.theta, theta_ref),
        names=regressor.names,
        heldout=heldout.metrics(fit.theta) if heldout is not None else None,
        n_train=int(round(train.count)),
        n_heldout=int(round(heldout.count)) if heldout is not None else 0,
        consistency=consistency,
    )
