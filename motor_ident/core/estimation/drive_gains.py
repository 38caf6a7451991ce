"""Drive gains (N m/A per motor) identified with the rigid-body parameters from an unloaded and a loaded run.

Currents ``i`` (N, m) [A] give joint torques only through unknown gains ``g`` (m,) at the gearbox
outputs: ``tau_joint = T^-T diag(g) i = C(i) g`` with ``C(i) = T^-T diag(i)`` (n, m). On one run,
``Y_b theta_b = C g`` is homogeneous: scaling theta_b and g together fits as well, so the overall
scale is not identifiable from currents alone. A second run of the same kind of motion carrying a
payload of KNOWN mass m fixes it (the practitioners' procedure for arms that log currents):

    unloaded rows:  Y_b theta_b                    - C g = 0
    loaded rows:    Y_b theta_b + Y_b P_r psi      - C g = - m Y_b p_m

where ``P = base(e_k)`` maps the payload's 10 inertial parameters (pinocchio's order, added to the
body it is attached to, about that body's joint frame) into base parameters, ``p_m`` is its mass
column and ``P_r`` (b, r) an orthonormal basis of the span of its other 9 columns (first moment and
inertia, unknown): ``psi`` (r,) are the payload's identifiable combinations. The stacked problem is
solved by weighted least squares (per-motor noise from the residuals). The gains' standard
deviations are the sandwich covariance of `motor_ident.core.estimation.covariance` (the estimator
every motor_ident standard deviation comes from): they include the residuals' correlation, so an
unmodelled friction shape widens them instead of leaving a confident wrong number.

A gain is only as good as the payload's signature on its motor: a payload that barely changes a
motor's torque (a vertical base axis, where the payload adds no gravity torque) fixes its gain
from a small difference between two large torques. `GainDetermination` flags such motors. The
physically consistent variant refits the base parameters with the identified gains by
``motor-ident identify --method sdp|log_cholesky`` (`motor_ident.core.estimation.consistent_fit`).

Rejected: identifying the gains from one run with the nominal base parameters fixed (the URDF's
inertias are what is being identified: any error in them goes into the gains).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.transmission import Transmission
from motor_ident.core.estimation.covariance import sandwich_covariance
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, DataError, EstimationError

FloatArray = NDArray[np.float64]

SCALE_NOT_IDENTIFIABLE = (
    "drive gains from motor currents: the overall scale is not identifiable from one run "
    "(gains and inertias scale together); record a second run of the same motion carrying a payload "
    "of known mass and give it with --payload-data FILE --payload-mass KG, or set the gains in the "
    "robot config (robot.torque_source.drive_gains)"
)


@dataclass(frozen=True, eq=False)
class CurrentRun:
    """One run: joint states and motor currents of N samples.

    Attributes:
        q, qd, qdd: joint positions, velocities, accelerations, shape (N, n).
        current: motor currents, shape (N, m) [A], transmission motor order.
    """

    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    current: FloatArray


PAYLOAD_SHARE_MIN = 0.05
"""Below this RMS share of a motor's torque in the loaded run, the payload does not determine its gain [-]."""

RELATIVE_HALF_WIDTH_MAX = 0.10
"""Above this 95 % half-width (1.96 std / gain), a gain is reported as poorly determined [-]."""


@dataclass(frozen=True)
class GainDetermination:
    """How well the payload pair determines one motor's gain.

    Attributes:
        determined: False when the payload's share is below `PAYLOAD_SHARE_MIN` or the 95 %
            half-width above `RELATIVE_HALF_WIDTH_MAX`.
        payload_share: RMS of the payload's torque on this motor over the RMS of its torque, loaded run [-].
        relative_half_width: 1.96 std / gain [-].
        reason: one sentence for the user ('' when determined).
    """

    determined: bool
    payload_share: float
    relative_half_width: float
    reason: str


def gain_determination(payload_share: float, gain: float, gain_std: float) -> GainDetermination:
    """Flag a gain the payload pair cannot determine well (thresholds in the module constants)."""
    half = 1.959964 * gain_std / abs(gain) if gain != 0.0 else float("inf")
    reasons = []
    if payload_share < PAYLOAD_SHARE_MIN:
        reasons.append(
            f"the payload changes this motor's torque by only {100.0 * payload_share:.1f} % (RMS; e.g. a vertical "
            "axis, where it adds no gravity torque): a heavier payload, or one farther off this axis, would fix it"
        )
    if half > RELATIVE_HALF_WIDTH_MAX:
        reasons.append(f"its 95 % interval is +-{100.0 * half:.0f} % of the gain")
    return GainDetermination(not reasons, float(payload_share), float(half), "; ".join(reasons))


@dataclass(frozen=True, eq=False)
class DriveGainFit:
    """Result of `identify_drive_gains`.

    Attributes:
        gains: drive gain per motor at the gearbox output (joint side), shape (m,) [N m/A].
        gains_std: their standard deviations (sandwich covariance, residual correlation included), shape (m,) [N m/A].
        theta_base: base parameters of the unloaded robot, shape (b,).
        theta_base_std: their standard deviations, shape (b,).
        payload: the payload's identifiable combinations psi, shape (r,) (see the module docstring).
        sigma: residual standard deviation per joint, shape (n,) [N m].
        condition_number: of the stacked weighted problem.
        n_unloaded, n_loaded: samples of each run.
        determination: per motor, how well the payload pair determines its gain (m entries).
    """

    gains: FloatArray
    gains_std: FloatArray
    theta_base: FloatArray
    theta_base_std: FloatArray
    payload: FloatArray
    sigma: FloatArray
    condition_number: float
    n_unloaded: int
    n_loaded: int
    determination: tuple[GainDetermination, ...] = ()


def point_payload(mass: float, position: ArrayLike) -> FloatArray:
    """Inertial parameters (10,) of a point mass [kg] at ``position`` (3,) [m] of a joint frame, pinocchio's order."""
    if not (np.isfinite(mass) and mass > 0.0):
        raise ConfigError(f"payload mass = {mass!r}: expected a number > 0 [kg]")
    inertia = pin.Inertia(float(mass), np.asarray(position, dtype=float).reshape(3), np.zeros((3, 3)))
    return np.asarray(inertia.toDynamicParameters(), dtype=float)


def payload_columns(regressor: Regressor, base: BaseParameters, joint: int) -> FloatArray:
    """``P`` (b, 10): base parameters gained per unit of each inertial parameter added to body ``joint``."""
    start = regressor.layout.inertial.start + 10 * joint
    E = np.zeros((regressor.n_parameters, 10))
    E[start : start + 10] = np.eye(10)
    return np.column_stack([base.to_base(E[:, k]) for k in range(10)])


def identify_drive_gains(
    regressor: Regressor,
    base: BaseParameters,
    transmission: Transmission,
    unloaded: CurrentRun,
    loaded: CurrentRun | None,
    *,
    payload_mass: float | None,
    payload_joint: int = -1,
    chunk_size: int = 4000,
) -> DriveGainFit:
    """Drive gains, base parameters and the payload's unknown inertial parameters in one least squares.

    Args:
        regressor: the robot's full regressor (n joints).
        base: its base parameters (b).
        transmission: joints, motors (m = n) and coupling T.
        unloaded: the run without payload.
        loaded: the run of the same kind of motion with the payload attached.
        payload_mass: the payload's mass [kg], known.
        payload_joint: index of the joint whose body carries the payload (default the last).
        chunk_size: samples per regressor chunk.

    Raises:
        EstimationError: no loaded run or no mass (the scale is not identifiable), or the stacked
            problem is singular (a motor whose current never moves, a payload that changes nothing).
        DataError: shapes disagree or data are not finite.
    """
    if loaded is None or payload_mass is None:
        raise EstimationError(SCALE_NOT_IDENTIFIABLE)
    if not (np.isfinite(payload_mass) and payload_mass > 0.0):
        raise ConfigError(f"payload mass = {payload_mass!r}: expected a number > 0 [kg]")
    n, m, b = regressor.robot.n, len(transmission.motors), base.n_base
    for name, run in (("unloaded", unloaded), ("loaded", loaded)):
        shapes = (run.q.shape, run.qd.shape, run.qdd.shape)
        if any(s != shapes[0] or len(s) != 2 or s[1] != n for s in shapes) or run.current.shape != (shapes[0][0], m):
            raise DataError(
                f"{name} run: q {run.q.shape}, qd {run.qd.shape}, qdd {run.qdd.shape}, current {run.current.shape}: "
                f"expected (N, {n}) and (N, {m})"
            )
        for field_name in ("q", "qd", "qdd", "current"):
            if not np.all(np.isfinite(getattr(run, field_name))):
                raise DataError(f"{name} run: {field_name} holds NaN or Inf: clean or cut the record first")
    P = payload_columns(regressor, base, payload_joint % n)
    U, s, _ = np.linalg.svd(P[:, 1:], full_matrices=False)
    P_r = U[:, s > 1e-9 * float(s[0])] if s.size and s[0] > 0.0 else np.zeros((b, 0))
    r = P_r.shape[1]
    known = payload_mass * P[:, 0]  # the payload's mass, in base parameters
    # Motor-side regressors T' Y_b (N, m, b) of both runs; currents are what was measured.
    M = [_motor_regressor(regressor, base, transmission, run, chunk_size) for run in (unloaded, loaded)]
    current = [unloaded.current, loaded.current]
    x = _equation_error_start(M, current, P_r, known, b, r, m)
    sigma = np.ones(m)
    for _ in range(30):
        residual, J = _residual_jacobian(x, M, current, P_r, known, b, r, m)
        sigma = np.sqrt(
            np.mean(residual**2, axis=0) * residual.shape[0] / max(residual.shape[0] - (b + r + m) / m, 1.0)
        )
        sigma = np.maximum(sigma, 1e-12)
        Jw = (J / sigma[None, :, None]).reshape(-1, b + r + m)
        rw = (residual / sigma).reshape(-1)
        step, *_ = np.linalg.lstsq(Jw, rw, rcond=None)
        x = x - step  # Gauss-Newton on r(x) = i - diag(h) M theta_run
        if float(np.linalg.norm(step)) <= 1e-10 * max(float(np.linalg.norm(x)), 1.0):
            break
    residual, J = _residual_jacobian(x, M, current, P_r, known, b, r, m)
    Jw = (J / sigma[None, :, None]).reshape(-1, b + r + m)
    cond = float(np.linalg.cond(Jw))
    if not np.isfinite(cond) or cond > 1e12:
        raise EstimationError(
            f"the stacked drive-gain problem is singular (condition number {cond:.3g}): a motor current that "
            "never changes, or a payload too light or too close to the last axis to be seen"
        )
    scores = np.einsum("smq,sm->sq", J / sigma[None, :, None] ** 2, residual)  # gradient of each sample
    covariance = sandwich_covariance(Jw.T @ Jw, scores, equations=float(residual.size), starts=[unloaded.q.shape[0]])
    std_x = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    h, h_std = x[b + r :], std_x[b + r :]
    gains = 1.0 / h
    gains_std = h_std / h**2
    theta_loaded = x[:b] + P_r @ x[b : b + r] + known
    share = np.sqrt(np.mean((M[1] @ (theta_loaded - x[:b])) ** 2, axis=0)) / np.maximum(
        np.sqrt(np.mean((M[1] @ theta_loaded) ** 2, axis=0)), 1e-300
    )
    fit_sigma = sigma * np.abs(gains)  # current noise seen as joint-side torque on each motor [N m]
    return DriveGainFit(
        gains=gains,
        gains_std=gains_std,
        theta_base=x[:b],
        theta_base_std=std_x[:b],
        payload=x[b : b + r],
        sigma=fit_sigma,
        condition_number=cond,
        n_unloaded=int(unloaded.q.shape[0]),
        n_loaded=int(loaded.q.shape[0]),
        determination=tuple(
            gain_determination(float(sh), float(g), float(sd)) for sh, g, sd in zip(share, gains, gains_std)
        ),
    )


def _motor_regressor(
    regressor: Regressor, base: BaseParameters, transmission: Transmission, run: CurrentRun, chunk_size: int
) -> FloatArray:
    """``T' Y_b`` of a run, shape (N, m, b): gearbox-output torque per base parameter."""
    N = run.q.shape[0]
    out = np.empty((N, len(transmission.motors), base.n_base))
    for start in range(0, N, chunk_size):
        sl = slice(start, min(start + chunk_size, N))
        Y_b = base.base_regressor(regressor.rows(run.q[sl], run.qd[sl], run.qdd[sl]))
        out[sl] = np.einsum("jk,sjb->skb", transmission.T, Y_b)  # tau_motor = T' tau_joint
    return out


def _equation_error_start(
    M: list[FloatArray], current: list[FloatArray], P_r: FloatArray, known: FloatArray, b: int, r: int, m: int
) -> FloatArray:
    """Start of the output-error iterations: linear least squares of ``M theta = diag(i) g`` (x holds 1/g).

    Biased (the current noise is in the regressor), close enough for Gauss-Newton to converge.
    """
    rows, rhs = [], []
    for k, (Mk, ik) in enumerate(zip(M, current)):
        payload = Mk @ P_r if k else np.zeros((Mk.shape[0], m, r))
        gain_cols = -np.einsum("mk,sk->smk", np.eye(m), ik)
        rows.append(np.concatenate([Mk, payload, gain_cols], axis=2).reshape(-1, b + r + m))
        rhs.append((-(Mk @ known) if k else np.zeros((Mk.shape[0], m))).reshape(-1))
    scale = 1.0 / np.maximum(np.linalg.norm(np.vstack(rows), axis=0), 1e-300)
    z, *_ = np.linalg.lstsq(np.vstack(rows) * scale, np.concatenate(rhs), rcond=None)
    z = z * scale
    g = z[b + r :]
    if not np.all(np.isfinite(g)) or np.any(g == 0.0):
        raise EstimationError("the drive gains cannot be started: a motor's current is zero throughout")
    return np.concatenate([z[: b + r], 1.0 / g])


def _residual_jacobian(
    x: FloatArray,
    M: list[FloatArray],
    current: list[FloatArray],
    P_r: FloatArray,
    known: FloatArray,
    b: int,
    r: int,
    m: int,
) -> tuple[FloatArray, FloatArray]:
    """Residuals ``i - diag(h) M theta_run`` (N_total, m) [A] and their Jacobian in x (N_total, m, b + r + m)."""
    theta, psi, h = x[:b], x[b : b + r], x[b + r :]
    residuals, jacobians = [], []
    for k, (Mk, ik) in enumerate(zip(M, current)):
        theta_run = theta + P_r @ psi + known if k else theta
        tau_motor = Mk @ theta_run  # (N, m)
        residuals.append(ik - h * tau_motor)
        J = np.zeros((Mk.shape[0], m, b + r + m))
        J[:, :, :b] = -h[None, :, None] * Mk
        if k:
            J[:, :, b : b + r] = -h[None, :, None] * (Mk @ P_r)
        J[:, np.arange(m), b + r + np.arange(m)] = -tau_motor
        jacobians.append(J)
    return np.vstack(residuals), np.vstack(jacobians)


def payload_attachment(robot: RobotModel, frame: str = "") -> tuple[int, FloatArray]:
    """Where a payload hangs: (index of the joint whose body carries it, frame origin in that joint's frame (3,) [m]).

    ``frame`` is a URDF frame; '' = the last link, at its centre of mass (off the last axis on most
    arms, so that the payload loads the last motor too).

    Raises:
        ConfigError: the frame is not in the URDF or hangs below a joint that is not identified.
    """
    if not frame:
        last = robot.model.getJointId(robot.joint_names[-1])
        return robot.n - 1, np.array(robot.model.inertias[last].lever, dtype=float)
    model = robot.model
    if not model.existFrame(frame):
        raise ConfigError(f"payload frame {frame!r} is not a frame of the URDF (e.g. {model.frames[-1].name!r})")
    f = model.frames[model.getFrameId(frame)]
    joint = str(model.names[f.parentJoint])
    if joint not in robot.joint_names:
        raise ConfigError(f"payload frame {frame!r} hangs below joint {joint!r}, which is not in robot.joints")
    return robot.joint_names.index(joint), np.array(f.placement.translation, dtype=float)


def with_point_payload(
    regressor: Regressor, theta: ArrayLike, mass: float, joint: int, position: ArrayLike
) -> FloatArray:
    """Full parameters ``theta`` (p,) plus a point mass [kg] at ``position`` (3,) [m] of joint ``joint``'s frame."""
    out = np.array(theta, dtype=float)
    start = regressor.layout.inertial.start + 10 * (joint % regressor.robot.n)
    out[start : start + 10] += point_payload(mass, position)
    return out
