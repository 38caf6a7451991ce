"""Floating-base identification: base parameters of the base rows (and joint rows), estimators,
total mass and whole-body centre of mass with their uncertainties.

The base rows (6 per sample) need only the contact wrenches; the joint rows need joint torques.
`structural_base_parameters` tells what each set of rows can determine: Ayusawa et al. (2014)
show that the base rows alone carry every inertial parameter combination the whole-body
equations do, so adding joint-torque rows adds equations (better conditioning), not new
parameters; `compare_row_sets` checks this on the model at hand and lists the parameters neither
determines (a body's parameters about an axis it cannot turn, a mass lumped with its parent's).

Estimation reuses the fixed-base machinery: the rows are the "joints" of a
`RegressionStatistics` (one noise level per row, so forces and torques are weighted by their own
noise), `ols` / `wls`, and `consistent_least_squares` (``sdp`` / ``log_cholesky``) over every
body's pseudo-inertia.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistent_fit import consistent_least_squares
from motor_ident.core.estimation.constraints import PhysicalConstraints, min_pseudo_inertia_eigenvalues
from motor_ident.core.estimation.covariance import estimator_information, with_residual_covariance
from motor_ident.core.estimation.identification import CACHE_BYTES
from motor_ident.core.estimation.least_squares import Fit, FitMetrics, RegressionStatistics, fit_metrics
from motor_ident.core.estimation.nearest_consistent import PRIOR_RELATIVE_SPREAD
from motor_ident.core.estimation.spectral_covariance import (
    LowFrequencyTransform,
    at_least,
    band,
    coloured_noise_covariance,
)
from motor_ident.core.floating_base.export import link_lengths, prior_spread
from motor_ident.core.floating_base.model import ROOT_JOINT, FloatingBaseRegressor
from motor_ident.core.floating_base.stance import stance_states
from motor_ident.core.rigid_body.base_params import UNIDENTIFIABLE, BaseParameters, base_parameters
from motor_ident.errors import ConfigError, DataError, EstimationError

FloatArray = NDArray[np.float64]

ROW_SETS = ("base", "all")
"""``base``: the 6 base rows (contact wrenches only); ``all``: base rows + joint rows (joint torques too)."""

METHODS = ("ols", "wls", "sdp", "log_cholesky")

DETERMINED_TOLERANCE = 0.01
"""A linear function of the parameters (total mass, a CoM axis) counts as determined by the data
when the parameters the data leave undetermined enter it with coefficients below this fraction of
its largest coefficient."""

CHUNK_SAMPLES = 2000  # samples whose regressor rows are built at once (memory: samples x rows x parameters)


def row_count(regressor: FloatingBaseRegressor, rows: str) -> int:
    """Rows per sample of a row set (`ROW_SETS`)."""
    if rows not in ROW_SETS:
        raise ConfigError(f"rows = {rows!r}: expected one of {ROW_SETS}")
    return 6 if rows == "base" else 6 + regressor.floating.n


TILT_AXES = ("x", "y")
"""World axes about which `identify_floating_base` estimates a constant error of the base
orientation (a tilt: a rotation about the vertical changes no wrench)."""


def tilt_columns(
    regressor: FloatingBaseRegressor, Q: FloatArray, V: FloatArray, A: FloatArray, theta: FloatArray, rows: int
) -> FloatArray:
    """Change of the predicted rows per radian of base tilt about each world axis of `TILT_AXES`, (N, rows, 2).

    The base orientation R_WB of ``Q`` is replaced by exp(eps e_j) R_WB: in the base frame only gravity's
    direction changes (V and A are base-frame quantities), by -eps (R_WB' e_j) x g. Full parameters ``theta``
    (p,) weigh the rows (the change is bilinear: `identify_floating_base` weighs them with the URDF's
    and rescales the tilt by the ratio of the URDF's total mass to the identified one).
    """
    eps = 1e-6
    base = regressor.rows(Q, V, A, count=rows) @ theta
    out = np.empty((Q.shape[0], rows, len(TILT_AXES)))
    for j in range(len(TILT_AXES)):
        turn = pin.Quaternion(pin.exp3(eps * np.eye(3)[j]))
        tilted = Q.copy()
        tilted[:, 3:7] = [(turn * pin.Quaternion(np.asarray(x))).coeffs() for x in Q[:, 3:7]]
        out[:, :, j] = (regressor.rows(tilted, V, A, count=rows) @ theta - base) / eps
    return out


def structural_base_parameters(
    regressor: FloatingBaseRegressor,
    rows: str = "base",
    *,
    stance: Sequence[str] = (),
    supports: Sequence[Sequence[str]] = (),
    standing: ArrayLike | None = None,
    samples: int | None = None,
    seed: int = 0,
) -> BaseParameters:
    """Base parameters of the base rows (``rows="base"``) or of all rows, from random states.

    Structural identifiability: what no motion can separate, whatever the data. Without
    ``stance`` the base moves freely (any motion of the model); with ``stance`` (sole frames) the
    states keep those soles still at their poses in ``standing`` (a configuration (7 + n,), e.g. a
    record's first sample; `stance_states`): what data recorded in that stance can determine at
    best. A foot standing still the whole time shows its weight but not, e.g., its vertical centre
    of mass or its inertia. ``supports`` (sets of sole frames) is a contact schedule: the states
    of each set together, e.g. both feet, then the left alone (the right leg moving freely), then
    the right alone. ``samples`` defaults to 6 p equations in all (iCub, 330 parameters: 330
    states of the base rows).
    """
    k = row_count(regressor, rows)
    samples = samples or -(-6 * regressor.n_parameters // k)
    rng = np.random.default_rng(seed)
    sets = [tuple(x) for x in supports] or ([tuple(stance)] if stance else [])
    if sets:
        states = [stance_states(regressor.floating, s, rng, -(-samples // len(sets)), standing=standing) for s in sets]
        Q, V, A = (np.concatenate([x[i] for x in states]) for i in range(3))
    else:
        Q, V, A = regressor.floating.random_states(rng, samples)
    return base_parameters(regressor.rows(Q, V, A, count=k), regressor.names)


@dataclass(frozen=True)
class RowSetComparison:
    """What the base rows and all rows determine (`compare_row_sets`).

    Attributes:
        n_base_rows, n_all_rows: base parameters of the base rows and of all rows.
        unidentifiable: parameters with no effect on either row set.
        only_with_joint_rows: parameters unidentifiable from the base rows but in a combination of all rows.
    """

    n_base_rows: int
    n_all_rows: int
    n_full: int
    unidentifiable: tuple[str, ...]
    only_with_joint_rows: tuple[str, ...]

    def summary(self) -> str:
        """A few lines a user reads."""
        lines = [
            f"base rows (contact wrenches only): {self.n_base_rows} base parameters of {self.n_full}",
            f"base + joint rows (joint torques too): {self.n_all_rows} base parameters of {self.n_full}",
        ]
        if self.n_base_rows == self.n_all_rows and not self.only_with_joint_rows:
            lines.append("the joint rows add equations, no new parameter (Ayusawa et al. 2014)")
        else:
            lines.append(f"determined only with joint torques: {', '.join(self.only_with_joint_rows) or '-'}")
        lines.append(
            f"unidentifiable from any data ({len(self.unidentifiable)}): {', '.join(self.unidentifiable) or '-'}"
        )
        return "\n".join(lines)


def compare_row_sets(base_rows: BaseParameters, all_rows: BaseParameters) -> RowSetComparison:
    """Compare the base parameters of the base rows with those of all rows."""
    names = base_rows.names
    c_base, c_all = base_rows.classes(), all_rows.classes()
    return RowSetComparison(
        n_base_rows=base_rows.n_base,
        n_all_rows=all_rows.n_base,
        n_full=len(names),
        unidentifiable=tuple(n for n, c in zip(names, c_all) if c == UNIDENTIFIABLE),
        only_with_joint_rows=tuple(
            n for n, a, b in zip(names, c_all, c_base) if a != UNIDENTIFIABLE and b == UNIDENTIFIABLE
        ),
    )


def floating_constraints(regressor: FloatingBaseRegressor) -> PhysicalConstraints:
    """Physical validity of every body (pseudo-inertia PSD, mass >= 0), no bounds."""
    b = len(regressor.floating.body_names)
    return PhysicalConstraints(
        names=tuple(regressor.names),
        body_names=regressor.floating.body_names,
        inertial=slice(0, 10 * b),
        nonnegative=np.zeros(0, dtype=np.int64),
        mass_bounds=np.tile([0.0, np.inf], (b, 1)),
        com_lower=np.full((b, 3), -np.inf),
        com_upper=np.full((b, 3), np.inf),
    )


@dataclass(frozen=True)
class Estimate:
    """An estimate (scalar or vector) with its standard deviation (from the covariance it was given).

    ``identifiable`` per component: False where the data cannot determine it; the value there
    takes the undetermined part from the nominal model and ``std`` covers the determined part only.
    """

    value: FloatArray
    std: FloatArray
    identifiable: NDArray[np.bool_]


WEAK_COM_STD = 0.001
"""A whole-body CoM axis whose standard deviation exceeds this [m] counts as weakly determined:
the data see it only through small motions (a standing robot's vertical CoM through its pelvis
tilts), so small systematic errors of the sensors move it by several standard deviations (on the
simulated iCub: the vertical CoM 7-33 mm off with standard deviations of 3-6 mm)."""


def weakly_determined(com: Estimate) -> NDArray[np.bool_]:
    """Per CoM axis (3,), whether its standard deviation exceeds `WEAK_COM_STD`."""
    return np.asarray(com.std > WEAK_COM_STD, dtype=bool)


def _linear_functional(base: BaseParameters, C: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
    """W (r, k) with P' W closest to C' (C (k, p)), and per row of C whether it lies in the row space of P."""
    P = base.projection
    W = np.asarray(np.linalg.lstsq(P.T, C.T, rcond=None)[0], dtype=float)
    residual = np.max(np.abs(P.T @ W - C.T), axis=0)
    # undetermined coefficients below 1 % of the functional's own: e.g. a foot tilted by 0.1 deg
    # mixes 0.002 of its (undetermined) vertical first moment into the horizontal CoM
    return W, residual <= DETERMINED_TOLERANCE * np.max(np.abs(C), axis=1)


def determined_masses(base: BaseParameters) -> NDArray[np.bool_]:
    """Per body, whether its own mass is determined by the data (not only inside a combination), (b,)."""
    b = base.n_full // 10
    C = np.zeros((b, base.n_full))
    C[np.arange(b), 10 * np.arange(b)] = 1.0
    return _linear_functional(base, C)[1]


def total_mass(base: BaseParameters, covariance: ArrayLike, theta_full: ArrayLike) -> Estimate:
    """Total mass [kg] of full parameters consistent with the base estimate, with its std."""
    c = np.zeros((1, base.n_full))
    c[0, 0::10] = 1.0
    W, ok = _linear_functional(base, c)
    w = W[:, 0]
    return Estimate(
        np.array(float(c[0] @ np.asarray(theta_full, dtype=float))),
        np.array(float(np.sqrt(max(w @ np.asarray(covariance) @ w, 0.0)))),
        ok,
    )


def centre_of_mass(
    regressor: FloatingBaseRegressor,
    q_reference: ArrayLike,
    base: BaseParameters,
    covariance: ArrayLike,
    theta_full: ArrayLike,
) -> Estimate:
    """Whole-body centre of mass (3,) [m] in the world at configuration ``q_reference`` (7 + n,)
    of full parameters ``theta_full``, with its standard deviation by the delta method."""
    C = _mass_functionals(regressor, q_reference)
    W, ok = _linear_functional(base, C)
    h = C @ np.asarray(theta_full, dtype=float)
    com = h[:3] / h[3]
    J = (W[:, :3] - np.outer(W[:, 3], com)).T / h[3]  # d com / d theta_base, (3, r)
    cov = J @ np.asarray(covariance, dtype=float) @ J.T
    return Estimate(com, np.sqrt(np.clip(np.diag(cov), 0.0, None)), ok[:3] & ok[3])


def _mass_functionals(regressor: FloatingBaseRegressor, q_reference: ArrayLike) -> FloatArray:
    """C (4, p): first moment of the whole body in the world (3 rows) and its mass, linear in theta."""
    model = regressor.floating.model
    data = model.createData()
    pin.forwardKinematics(model, data, np.asarray(q_reference, dtype=float))
    order = [ROOT_JOINT, *regressor.floating.robot.joint_names]
    C = np.zeros((4, regressor.n_parameters))
    for k, name in enumerate(order):
        placement = data.oMi[model.getJointId(name)]
        C[:3, 10 * k] = placement.translation
        C[:3, 10 * k + 1 : 10 * k + 4] = placement.rotation
        C[3, 10 * k] = 1.0
    return C


def nominal_mass_and_com(
    regressor: FloatingBaseRegressor,
    q_reference: ArrayLike,
    theta_nominal: ArrayLike,
    *,
    relative_spread: float = PRIOR_RELATIVE_SPREAD,
) -> tuple[Estimate, Estimate]:
    """The URDF's total mass [kg] and CoM (3,) [m] at ``q_reference`` with the standard deviations its own
    uncertainty gives: every link's mass, first and second moments independent, each with the spread of
    `motor_ident.core.floating_base.export.prior_spread` (the export's prior), ``relative_spread`` [-] of
    the link's scale (the robot config's ``floating_base.urdf_mass_uncertainty``)."""
    theta0 = np.asarray(theta_nominal, dtype=float)
    C = _mass_functionals(regressor, q_reference)
    variance = prior_spread(theta0, link_lengths(regressor.floating), relative_spread) ** 2
    h = C @ theta0
    com = h[:3] / h[3]
    J = (C[:3] - np.outer(com, C[3])) / h[3]
    determined = np.ones(3, dtype=bool)
    return (
        Estimate(np.array(h[3]), np.array(np.sqrt(C[3] ** 2 @ variance)), np.ones((), dtype=bool)),
        Estimate(com, np.sqrt(J**2 @ variance), determined),
    )


def worse_than_nominal(estimate: Estimate, nominal: Estimate) -> NDArray[np.bool_]:
    """Per component, whether the data determine it worse than the URDF's own uncertainty does (a larger
    standard deviation than `nominal_mass_and_com`'s): there the URDF's value is the better estimate."""
    return np.asarray(np.asarray(estimate.std) > np.asarray(nominal.std), dtype=bool)


@dataclass(frozen=True, eq=False)
class FloatingIdentification:
    """Result of `identify_floating_base`.

    Attributes:
        fit: estimate of the base parameters; its covariance the residual-based sandwich of
            `motor_ident.core.estimation.covariance` around the WLS information (also for ``sdp`` /
            ``log_cholesky``), raised in every direction to at least the coloured-noise one of
            `motor_ident.core.estimation.spectral_covariance`.
        base: the full <-> base map of the row set used.
        theta: full parameters (p,): the consistent estimate for ``sdp`` / ``log_cholesky``, else
            the base estimate completed with the nominal model's dependent parameters.
        rows: ``base`` or ``all``; row_names: the rows used.
        heldout: per-row metrics on the held-out samples, or None.
        mass, com: total mass [kg] and whole-body CoM at the first sample's configuration [m], their
            std from the residual-based (sandwich) covariance of `fit`: correlated residuals (the
            model's error, filtering, a systematic sensor error) widen them.
        min_eigenvalue: smallest pseudo-inertia eigenvalue per body (>= 0: physical).
        mass_white, com_white: the same with the textbook white-noise covariance, for comparison.
        covariance_white: that covariance of the base parameters (r, r).
        unconstrained: the ``ols`` / ``wls`` base parameters (r,), for ``sdp`` and ``log_cholesky``
            those before the physical constraints (what the export starts from).
        tilt: the base orientation's constant error about the world's x and y axes [rad]
            (the estimated orientation is the true one turned by it), or None when not estimated.
    """

    fit: Fit
    base: BaseParameters
    theta: FloatArray
    rows: str
    row_names: tuple[str, ...]
    heldout: FitMetrics | None
    n_train: int
    n_heldout: int
    mass: Estimate
    com: Estimate
    min_eigenvalue: FloatArray
    mass_white: Estimate
    com_white: Estimate
    covariance_white: FloatArray
    unconstrained: FloatArray
    tilt: Estimate | None

    def covariance_at_least_white(self) -> FloatArray:
        """The residual-based covariance, never below the white-noise one in any direction (r, r).

        A short recording's residual-based covariance, estimated from few blocks of scores, can be
        singular; where it is smaller than the textbook covariance the latter holds.
        """
        return at_least(self.fit.covariance, self.covariance_white)


def identify_floating_base(
    regressor: FloatingBaseRegressor,
    Q: ArrayLike,
    V: ArrayLike,
    A: ArrayLike,
    generalized_force: ArrayLike,
    *,
    rows: str = "base",
    method: str = "wls",
    theta_nominal: ArrayLike | None = None,
    validate_fraction: float = 0.0,
    base: BaseParameters | None = None,
    alpha: float = 1.0,
    estimate_tilt: bool = True,
    chunk_size: int = CHUNK_SAMPLES,
) -> FloatingIdentification:
    """Identify the inertial parameters a floating-base record determines.

    Args:
        regressor: of the floating-base model.
        Q, V, A: (N, 7 + n), (N, 6 + n), (N, 6 + n) in pinocchio order.
        generalized_force: right-hand side (N, 6 + n): sum_c J_c' w_c, plus the joint torques on
            the joint rows when ``rows = "all"`` (`FloatingBaseRegressor.contact_forces`).
        rows: ``base`` (contact wrenches only) or ``all``.
        method: ``ols``, ``wls``, ``sdp`` or ``log_cholesky``.
        theta_nominal: full nominal parameters (p,) (the URDF's when None).
        validate_fraction: fraction of samples at the end held out.
        base: base-parameter map (structural for ``rows`` when None).
        alpha: data weight of ``sdp`` / ``log_cholesky`` in (0, 1]; below 1 the parameters the data
            leave undetermined (each link's own mass, say) are pulled toward the nominal ones.
        estimate_tilt: estimate a constant error of the base orientation (a tilt about the world's
            x and y axes, `tilt_columns`) jointly with the parameters: an IMU's orientation is an
            estimate, and a tilt of 0.5 mrad moves the CoM of a robot 0.5 m tall by 0.25 mm. The
            parameters' covariance is then the marginal one, the tilt's uncertainty included.

    Raises:
        DataError: shapes disagree, values not finite, too few samples.
        ConfigError: unknown method or row set.
    """
    if method not in METHODS:
        raise ConfigError(f"method = {method!r}: expected one of {METHODS}")
    k = row_count(regressor, rows)
    Q, V, A, F = (np.asarray(x, dtype=float) for x in (Q, V, A, generalized_force))
    N = Q.shape[0]
    if F.shape != (N, regressor.floating.nv):
        raise DataError(f"generalized force has shape {F.shape}: expected ({N}, {regressor.floating.nv})")
    for name, x in (("Q", Q), ("V", V), ("A", A), ("generalized force", F[:, :k])):
        if not np.all(np.isfinite(x)):
            raise DataError(f"{name} holds NaN or Inf")
    if not 0.0 <= validate_fraction < 1.0:
        raise ConfigError(f"validate = {validate_fraction!r}: expected a fraction in [0, 1)")
    theta0 = (
        regressor.floating.inertial_parameters() if theta_nominal is None else np.asarray(theta_nominal, dtype=float)
    )
    base = structural_base_parameters(regressor, rows) if base is None else base
    n_heldout = int(round(N * validate_fraction))
    n_train = N - n_heldout
    if n_train * k < 2 * base.n_base:
        raise DataError(f"{n_train} training samples are too few for {base.n_base} base parameters")
    r = base.n_base
    tilt = len(TILT_AXES) if estimate_tilt else 0
    train, held = RegressionStatistics(k, r + tilt), RegressionStatistics(k, r + tilt)
    keep = n_train * k * (r + tilt) * 8 <= CACHE_BYTES
    kept: list[tuple[FloatArray, FloatArray]] = []
    F = F[:, :k].copy()  # less the share of what the data leave undetermined, at the URDF's values
    for start, Y, undetermined in base_row_chunks(regressor, base, Q, V, A, k, chunk_size, theta0, tilt > 0):
        stop = start + Y.shape[0]
        F[start:stop] -= undetermined
        split = min(max(n_train - start, 0), stop - start)
        if split:
            train.add(Y[:split], F[start : start + split])
            if keep:
                kept.append((Y[:split], F[start : start + split]))
        if split < stop - start:
            held.add(Y[split:], F[start + split : stop])
    if train.count <= 0:
        raise EstimationError("no training samples")
    fit = train.ols() if method == "ols" else train.wls()
    white, fit_white_full = fit.covariance[:r, :r], fit.covariance
    chunks = kept if keep else ((Y, F[s : s + Y.shape[0]]) for s, Y, _ in base_row_chunks(
        regressor, base, Q[:n_train], V, A, k, chunk_size, theta0, tilt > 0
    ))  # fmt: skip
    transform = LowFrequencyTransform(n_train, band(F[:n_train]), fit.theta)
    fit = with_residual_covariance(fit, train, transform.passing(chunks), samples=n_train)
    weights, information = estimator_information(fit, train)
    coloured = coloured_noise_covariance(transform, information, weights)
    fit = replace(fit, covariance=at_least(fit.covariance, coloured + 1e-6 * fit_white_full))
    heldout = held.metrics(fit.theta) if n_heldout else None
    tilt_coefficients, tilt_std = fit.theta[r:], fit.std[r:]
    stats = _tilt_removed(train, fit.theta[r:]) if tilt else train
    fit = replace(fit, theta=fit.theta[:r], covariance=fit.covariance[:r, :r])  # marginal: the tilt's uncertainty in
    constraints = floating_constraints(regressor)
    unconstrained = fit.theta
    if method in ("sdp", "log_cholesky"):
        consistent = consistent_least_squares(
            stats, constraints, base=base, theta_nominal=theta0, sigma=fit.sigma, method=method, alpha=alpha
        )
        theta = consistent.theta
        fit = replace(fit, theta=consistent.theta_data, method=method, **asdict(consistent.metrics))
    else:
        theta = base.to_full(fit.theta, theta0)
    mass = total_mass(base, fit.covariance, theta)
    # the tilt's columns are weighed by the URDF's bodies: the data's are heavier or lighter by about
    # the ratio of the total masses
    scale = float(theta0[0::10].sum() / mass.value)
    tilt_estimate = Estimate(-scale * tilt_coefficients, scale * tilt_std, np.ones(tilt, dtype=bool))
    return FloatingIdentification(
        fit=fit,
        base=base,
        theta=theta,
        rows=rows,
        row_names=regressor.row_names[:k],
        heldout=heldout,
        n_train=n_train,
        n_heldout=n_heldout,
        mass=mass,
        com=centre_of_mass(regressor, Q[0], base, fit.covariance, theta),
        min_eigenvalue=min_pseudo_inertia_eigenvalues(theta, constraints),
        mass_white=total_mass(base, white, theta),
        com_white=centre_of_mass(regressor, Q[0], base, white, theta),
        covariance_white=white,
        unconstrained=unconstrained,
        tilt=tilt_estimate if tilt else None,
    )


def _tilt_removed(stats: RegressionStatistics, coefficients: FloatArray) -> RegressionStatistics:
    """Statistics of the base parameters alone with the fitted tilt's share taken off the measurements.

    The last ``t = coefficients.size`` columns of ``stats`` are the tilt's; the measurement's sum and range
    (used by the centred R^2 and the NRMSE only) are kept as they were.
    """
    r = stats.p - coefficients.size
    out = RegressionStatistics(stats.n, r)
    out.A = stats.A[:, :r, :r].copy()
    out.b = stats.b[:, :r] - stats.A[:, :r, r:] @ coefficients
    out.yy = stats.yy - 2.0 * stats.b[:, r:] @ coefficients + (stats.A[:, r:, r:] @ coefficients) @ coefficients
    out.ysum, out.count, out.counts = stats.ysum.copy(), stats.count, stats.counts.copy()
    out.ymin, out.ymax, out.masked = stats.ymin.copy(), stats.ymax.copy(), stats.masked
    return out


def base_row_chunks(
    regressor: FloatingBaseRegressor,
    base: BaseParameters,
    Q: FloatArray,
    V: FloatArray,
    A: FloatArray,
    k: int,
    chunk_size: int,
    theta_nominal: FloatArray,
    tilt: bool,
) -> Iterator[tuple[int, FloatArray, FloatArray]]:
    """First sample, base regressor (N_c, k, r) and the rows' share (N_c, k) of what ``base`` leaves undetermined
    at the full parameters ``theta_nominal``, chunk by chunk, with the `tilt_columns` appended when ``tilt``
    (N_c, k, r + 2).

    That share, ``Y theta_0 - Y_b P theta_0``, is zero where the motion keeps to the structure ``base``
    was found for (standing feet that do not move); a foot the soft welds of a simulator (or a real
    sole) let move a little shows its inertia there, which the base parameters cannot take.
    """
    buffer = np.empty((min(chunk_size, Q.shape[0]), k, regressor.n_parameters))
    theta_base = base.to_base(theta_nominal)
    for start in range(0, Q.shape[0], chunk_size):
        stop = min(start + chunk_size, Q.shape[0])
        rows_k = regressor.rows(Q[start:stop], V[start:stop], A[start:stop], count=k, out=buffer[: stop - start])
        Y = base.base_regressor(rows_k)
        undetermined = rows_k @ theta_nominal - Y @ theta_base
        if tilt:
            Y = np.concatenate(
                [Y, tilt_columns(regressor, Q[start:stop], V[start:stop], A[start:stop], theta_nominal, k)], axis=2
            )
        yield start, Y, undetermined


def predicted_wrench_metrics(
    regressor: FloatingBaseRegressor,
    theta: ArrayLike,
    Q: ArrayLike,
    V: ArrayLike,
    A: ArrayLike,
    base_force: ArrayLike,
    *,
    rows: ArrayLike | None = None,
) -> tuple[FitMetrics, FloatArray]:
    """Predicted vs measured total contact wrench on the base (the base rows) for full parameters theta.

    ``rows``: the base rows (N, 6, p) of these states when already computed.
    Returns per-row metrics (6,) and the predicted wrench (N, 6) [N, N m] in the base frame.
    """
    Y = regressor.rows(Q, V, A, count=6) if rows is None else np.asarray(rows, dtype=float)
    predicted = Y @ np.asarray(theta, dtype=float)
    return fit_metrics(np.asarray(base_force, dtype=float)[:, :6], predicted), predicted
