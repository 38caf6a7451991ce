"""Direction-dependent friction from forward and backward passes at the same positions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import (
    FrictionKind,
    FrictionShape,
    fit_direction_threshold,
    friction_regressor,
)
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]


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
