"""The even part of Liu et al.'s directional friction: what eq. 8 cannot see, and how loop 2 recovers it.

A forward and a backward pass at the same position q and speeds +v / -v measure (Liu et al. 2023,
eq. 5-8)::

    tau_1 = tau_link(q, +v) + f(+v),    tau_2 = tau_link(q, -v) + f(-v)

Eq. 8's ``(tau_1 - tau_2) / 2`` keeps the ODD part of the friction, ``(f(v) - f(-v)) / 2``, and
the odd part of the link torque (zero at constant speed). With direction-dependent Coulomb levels
(kc1 = ``kc_pos`` != kc2 = ``kc_neg``, eq. 9) the EVEN part ``(f(v) + f(-v)) / 2 = (kc_pos -
kc_neg) / 2`` lands in ``(tau_1 + tau_2) / 2`` beside gravity and the velocity-product terms,
where eq. 8 never looks: loop 1 alone fits kc_pos = kc_neg = their mean.

`fit_even_part` separates it with loop 2's link model, fitted JOINTLY with the even part: the
excitation rows ``tau - f_odd(qd) = Y(q, qd, qdd) theta + e tanh^2(qd / eps)`` and the pass rows
``(tau_1 + tau_2) / 2 = (Y(q, +v, 0) + Y(q, -v, 0)) / 2 theta + e tanh^2(v / eps)`` in one
weighted least squares (per-joint weights from a first unweighted pass), with kc_pos = kc + e,
kc_neg = kc - e (`with_even_part`). Fitting the link model first and reading the even part off its
residual instead leaves most of e in the link parameters: over an excitation the centrifugal
columns (qd_j^2 >= 0) have a non-zero mean and absorb a constant. `even_residual` is that check:
what the even part still lacks against a given model (zero at the joint fit's optimum, up to noise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape
from motor_ident.core.elastic.directional_friction import DirectionalFrictionFit, align_backward_pass
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.papers.liu.experiments import SweepPair

FloatArray = NDArray[np.float64]
RigidTorque = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]


@dataclass(frozen=True, eq=False)
class AlignedPair:
    """A pass pair on common positions: q (N, n) [rad], speed (n,) [rad/s], torques (N, n) [N m]."""

    q: FloatArray
    speed: FloatArray
    tau_forward: FloatArray
    tau_backward: FloatArray


def align_pairs(pairs: Sequence[SweepPair]) -> list[AlignedPair]:
    """Each backward pass interpolated at its forward pass's measured positions."""
    out = []
    for pair in pairs:
        keep, tau_backward = align_backward_pass(pair.forward.q, pair.backward.q, pair.backward.effort)
        out.append(AlignedPair(pair.forward.q[keep], pair.speed, pair.forward.effort[keep], tau_backward))
    return out


def odd_samples(pairs: Sequence[AlignedPair]) -> tuple[FloatArray, FloatArray]:
    """Eq. 8 samples mirrored as an odd function: velocities and ``(tau_1 - tau_2) / 2``, each (M, n)."""
    velocity, friction = [], []
    for pair in pairs:
        tau_f = 0.5 * (pair.tau_forward - pair.tau_backward)
        v = np.broadcast_to(pair.speed, tau_f.shape)
        velocity += [v, -v]
        friction += [tau_f, -tau_f]
    return np.concatenate(velocity), np.concatenate(friction)


def even_residual(pairs: Sequence[AlignedPair], rigid_torque: RigidTorque) -> FloatArray:
    """Even friction the model lacks, per joint (n,) [N m]: mean of (tau_1 + tau_2) / 2 minus the model's.

    Args:
        pairs: aligned pass pairs.
        rigid_torque: ``(q, qd, qdd) -> (N, n)`` torque of loops 1-2 (friction + link dynamics).
    """
    residuals = []
    for pair in pairs:
        qd = np.broadcast_to(pair.speed, pair.q.shape)
        zero = np.zeros_like(pair.q)
        model = 0.5 * (rigid_torque(pair.q, qd, zero) + rigid_torque(pair.q, -qd, zero))
        residuals.append(0.5 * (pair.tau_forward + pair.tau_backward) - model)
    return np.asarray(np.concatenate(residuals).mean(axis=0), dtype=float)


def fit_even_part(
    robot: RobotModel,
    fits: Sequence[DirectionalFrictionFit],
    pairs: Sequence[AlignedPair],
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau: FloatArray,
) -> FloatArray:
    """Even part e per joint (n,) [N m] of the friction, jointly with the link model (module doc).

    Args:
        robot: rigid-body model (rotor inertias as reflected inertia columns).
        fits: loop 1's odd fits (their kc, viscous terms and thresholds are kept).
        pairs: aligned pass pairs of loop 1.
        q, qd, qdd, tau: the excitation record (N, n).
    """
    n = robot.n
    regressor = Regressor(robot, [FrictionShape(kind=FrictionKind.NONE)] * n, reflected_inertia=True)
    base = structural_base_parameters(regressor)
    eps = np.array([fit.shape.direction_eps for fit in fits])
    odd = np.stack([fit.torque(qd[:, j]) for j, fit in enumerate(fits)], axis=1)
    blocks_y = [base.base_regressor(regressor.rows(q, qd, qdd))]
    blocks_e = [np.tanh(qd / eps) ** 2]
    targets = [tau - odd]
    for pair in pairs:
        v = np.broadcast_to(pair.speed, pair.q.shape)
        zero = np.zeros_like(pair.q)
        y_pos = base.base_regressor(regressor.rows(pair.q, v, zero))
        y_neg = base.base_regressor(regressor.rows(pair.q, -v, zero))
        blocks_y.append(0.5 * (y_pos + y_neg))
        blocks_e.append(np.tanh(v / eps) ** 2)
        odd_pair = np.stack([fit.torque(v[:, j]) + fit.torque(-v[:, j]) for j, fit in enumerate(fits)], axis=1)
        targets.append(0.5 * (pair.tau_forward + pair.tau_backward) - 0.5 * odd_pair)
    Y = np.concatenate(blocks_y)  # (N, n, r)
    E = np.concatenate(blocks_e)  # (N, n)
    b = np.concatenate(targets)  # (N, n)
    A = np.concatenate([Y, E[:, :, None] * np.eye(n)[None, :, :]], axis=2)  # (N, n, r + n)
    weights = np.ones(n)
    for _ in range(2):  # unweighted, then weighted by each joint's residual RMS
        Aw, bw = A * weights[None, :, None], b * weights[None, :]
        x = np.linalg.lstsq(Aw.reshape(-1, A.shape[2]), bw.reshape(-1), rcond=None)[0]
        rms = np.sqrt(np.mean((A @ x - b) ** 2, axis=0))
        weights = 1.0 / np.maximum(rms, 1e-9)
    return np.asarray(x[-n:], dtype=float)


def with_even_part(fits: Sequence[DirectionalFrictionFit], shift: FloatArray) -> list[DirectionalFrictionFit]:
    """Fits with kc_pos raised and kc_neg lowered by ``shift`` (n,) [N m] (the even part grows by shift)."""
    out = []
    for fit, s in zip(fits, shift, strict=True):
        theta = fit.theta.copy()
        theta[fit.shape.names.index("kc_pos")] += s
        theta[fit.shape.names.index("kc_neg")] -= s
        out.append(replace(fit, theta=theta))
    return out


def coulomb_levels(fit: DirectionalFrictionFit) -> tuple[float, float]:
    """(kc_pos, kc_neg) of a fit [N m]."""
    return float(fit.theta[fit.shape.names.index("kc_pos")]), float(fit.theta[fit.shape.names.index("kc_neg")])
