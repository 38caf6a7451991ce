"""Joint friction models that stay linear in their parameters.

Every model here is ``tau_friction = friction_regressor(v, shape) @ theta_friction``: the shape
constants (smoothing, Stribeck velocity, thresholds) are fixed by configuration and only the
linear coefficients are identified. Friction torque has the sign of the velocity: it is the torque
the actuator must supply to overcome friction, so a measured joint torque reads

    tau_joint = M(q) qdd + h(q, qd) + tau_friction(qd).

`smooth_sign` is the single sign/smoothing function used by the regressor, the estimators, the
simulator and the feedforward.

Models (per joint, velocity ``v`` in rad/s or m/s):

``coulomb_viscous``  [sign(v), v]                    -> [fc, fv]
``stribeck``         Guedelha et al. 2021, eq. 26-31              -> [fc, fv, static_pos, static_neg]
``arctan``           Szabó & Szádeczky-Kardoss 2021, eq. 7-9                -> [tau_s, tau_sc, tau_v]
``directional``      Liu et al. 2023, eq. 9-10 (linear part) -> [kc_pos, kc_neg, kv1_pos, kv2_pos, kv3_pos,
                                                         kv1_neg, kv2_neg, kv3_neg]
``none``             no columns.
A constant ``offset`` column can be appended to any of them.

Stribeck model, derived again from Guedelha et al. 2021, section 3.2.2 (the extracted text of eq. 29-31 has
lost its signs). With ``x = |v| / v_s`` and the direction weights ``w+ = [v > 0]``,
``w- = [v < 0]`` (both 0 at rest, so a resting joint gets no friction torque, like sign(0) = 0):

    tau_f(v) = (w+ - w-) fc (1 - e^-x) + fv v + static_pos w+ e^-x - static_neg w- e^-x

so ``tau_f(0+) = static_pos``, ``tau_f(0-) = -static_neg`` and ``tau_f -> fc sign(v) + fv v`` far
from zero (eq. 23-25). Guedelha et al. 2021 uses ``x = |v|`` (``v_s = 1``); the Stribeck velocity ``v_s`` is
configurable here. The zero-slope condition at 0+ (Guedelha et al. 2021, section 4.1.2) is
``fc / v_s + fv - static_pos / v_s = 0``, a linear equality returned by `zero_slope_constraint`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar

from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


class FrictionKind(str, Enum):
    """Which friction model a joint uses."""

    NONE = "none"
    COULOMB_VISCOUS = "coulomb_viscous"
    STRIBECK = "stribeck"
    ARCTAN = "arctan"
    DIRECTIONAL = "directional"


_NAMES: dict[FrictionKind, tuple[str, ...]] = {
    FrictionKind.NONE: (),
    FrictionKind.COULOMB_VISCOUS: ("fc", "fv"),
    FrictionKind.STRIBECK: ("fc", "fv", "static_pos", "static_neg"),
    FrictionKind.ARCTAN: ("tau_s", "tau_sc", "tau_v"),
    FrictionKind.DIRECTIONAL: (
        "kc_pos",
        "kc_neg",
        "kv1_pos",
        "kv2_pos",
        "kv3_pos",
        "kv1_neg",
        "kv2_neg",
        "kv3_neg",
    ),
}


@dataclass(frozen=True)
class FrictionShape:
    """Fixed shape constants of one joint's friction model (the YAML ``friction:`` block).

    Attributes:
        kind: the model.
        smoothing_velocity: velocity scale of `smooth_sign` [rad/s]; 0 means a hard sign.
        stribeck_velocity: Stribeck velocity v_s of the ``stribeck`` model [rad/s].
        stiction_gain: K_v of Szabó & Szádeczky-Kardoss 2021, eq. 8, slope of the arctan sign approximation [s/rad].
        stribeck_gain: delta of Szabó & Szádeczky-Kardoss 2021, eq. 7, shape of the Stribeck term [s/rad].
        direction_threshold: lambda of Liu et al. 2023, eq. 9, low/high speed threshold [rad/s].
        direction_eps: eps of Liu et al. 2023, eq. 10, tanh transition width [rad/s].
        offset: append a constant torque column (sensor or gravity-compensation offset) [N m].
    """

    kind: FrictionKind = FrictionKind.COULOMB_VISCOUS
    smoothing_velocity: float = 0.0
    stribeck_velocity: float = 0.1
    stiction_gain: float = 100.0
    stribeck_gain: float = 20.0
    direction_threshold: float = 0.05
    direction_eps: float = 1e-4
    offset: bool = False
    names: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            kind = FrictionKind(self.kind)
        except ValueError:
            allowed = ", ".join(k.value for k in FrictionKind)
            raise ConfigError(f"friction.kind = {self.kind!r}: expected one of {allowed}") from None
        object.__setattr__(self, "kind", kind)
        for key in ("smoothing_velocity", "direction_threshold"):
            value = getattr(self, key)
            if not np.isfinite(value) or value < 0.0:
                raise ConfigError(f"friction.{key} = {value!r}: expected a finite number >= 0")
        for key in ("stribeck_velocity", "stiction_gain", "stribeck_gain", "direction_eps"):
            value = getattr(self, key)
            if not np.isfinite(value) or value <= 0.0:
                raise ConfigError(f"friction.{key} = {value!r}: expected a finite number > 0")
        names = _NAMES[kind] + (("offset",) if self.offset else ())
        object.__setattr__(self, "names", names)

    @property
    def n_parameters(self) -> int:
        """Number of linear friction parameters (columns) of this joint."""
        return len(self.names)


def smooth_sign(v: ArrayLike, smoothing_velocity: float = 0.0) -> FloatArray:
    """Sign of ``v``, smoothed as ``tanh(v / smoothing_velocity)`` when that scale is > 0.

    Args:
        v: velocities, any shape [rad/s].
        smoothing_velocity: velocity at which the output reaches tanh(1) = 0.76 [rad/s].

    Returns:
        Array of the shape of ``v`` with values in [-1, 1].
    """
    v = np.asarray(v, dtype=float)
    gain = 1.0 / smoothing_velocity if smoothing_velocity > 0.0 else math.inf
    if math.isfinite(gain):
        return np.tanh(v * gain)
    out: FloatArray = np.sign(v)
    return out


def _stribeck_terms(v: FloatArray, shape: FrictionShape) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Direction weights (w_pos, w_neg) and Stribeck decay ``exp(-|v| / v_s)`` of the ``stribeck``
    model at velocities ``v`` (N,) [rad/s]."""
    if shape.smoothing_velocity > 0.0:
        s = smooth_sign(v, shape.smoothing_velocity)
        w_pos, w_neg = 0.5 * (1.0 + s), 0.5 * (1.0 - s)
    else:  # hard sign: a resting joint (v = 0) gets no friction, as sign(0) = 0
        w_pos = (v > 0.0).astype(float)
        w_neg = (v < 0.0).astype(float)
    return w_pos, w_neg, np.exp(-np.abs(v) / shape.stribeck_velocity)


def friction_regressor(v: ArrayLike, shape: FrictionShape) -> FloatArray:
    """Friction regressor of one joint, vectorised over samples.

    Args:
        v: joint velocities, shape (N,) [rad/s].
        shape: the joint's friction model.

    Returns:
        Array of shape (N, shape.n_parameters): ``tau_friction = result @ theta_friction``.
    """
    v = np.atleast_1d(np.asarray(v, dtype=float))
    kind = shape.kind
    columns: list[FloatArray]
    if kind is FrictionKind.NONE:
        columns = []
    elif kind is FrictionKind.COULOMB_VISCOUS:
        columns = [smooth_sign(v, shape.smoothing_velocity), v]
    elif kind is FrictionKind.STRIBECK:
        w_pos, w_neg, decay = _stribeck_terms(v, shape)
        columns = [(w_pos - w_neg) * (1.0 - decay), v, w_pos * decay, -w_neg * decay]
    elif kind is FrictionKind.ARCTAN:
        columns = [
            (2.0 / np.pi) * np.arctan(shape.stiction_gain * v),
            (2.0 / np.pi) * np.arctan(shape.stribeck_gain * v),
            v,
        ]
    else:  # DIRECTIONAL, Liu et al. 2023, eq. 9-10 with tanh direction weights
        s = np.tanh(v / shape.direction_eps)
        w_pos, w_neg = 0.5 * (1.0 + s), 0.5 * (1.0 - s)
        fast = (np.abs(v) >= shape.direction_threshold).astype(float)
        v2, v3 = v * v, v * v * v
        columns = [
            s * w_pos,
            s * w_neg,
            fast * w_pos * v,
            fast * w_pos * v2,
            fast * w_pos * v3,
            fast * w_neg * v,
            fast * w_neg * v2,
            fast * w_neg * v3,
        ]
    if shape.offset:
        columns.append(np.ones_like(v))
    if not columns:
        return np.zeros((v.shape[0], 0))
    return np.stack(columns, axis=1)


def friction_torque(v: ArrayLike, theta: ArrayLike, shape: FrictionShape) -> FloatArray:
    """Friction torque of one joint, shape (N,) [N m], for parameters ``theta`` (shape (p,))."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (shape.n_parameters,):
        raise ConfigError(
            f"friction parameters have shape {theta.shape}: expected ({shape.n_parameters},) "
            f"for the {shape.kind.value} model ({', '.join(shape.names)})"
        )
    tau: FloatArray = friction_regressor(v, shape) @ np.asarray(theta, dtype=float)
    return tau


def joints_friction_torque(
    v: FloatArray, shape: FrictionShape, coefficients: FloatArray, out: FloatArray
) -> FloatArray:
    """Friction torque of several joints sharing one model, each with its own parameters, at one
    instant: ``out[j] = friction_regressor(v[j]) @ coefficients[j]`` (the control path's form).

    Coulomb + viscous and Stribeck (the common models, the joints' and the motor chains') are
    computed without building the regressor (the same `smooth_sign` and Stribeck terms); the
    other models go through `friction_regressor`.

    Args:
        v: the joints' velocities (J,) [rad/s].
        shape: their friction model.
        coefficients: parameters per joint (J, shape.n_parameters).
        out: the result (J,) [N m].
    """
    if shape.kind is FrictionKind.COULOMB_VISCOUS and not shape.offset:
        np.multiply(smooth_sign(v, shape.smoothing_velocity), coefficients[:, 0], out=out)
        out += coefficients[:, 1] * v
        return out
    if shape.kind is FrictionKind.STRIBECK and not shape.offset:  # [fc, fv, static_pos, static_neg]
        w_pos, w_neg, decay = _stribeck_terms(v, shape)
        np.multiply((w_pos - w_neg) * (1.0 - decay), coefficients[:, 0], out=out)
        out += coefficients[:, 1] * v
        out += coefficients[:, 2] * (w_pos * decay)
        out -= coefficients[:, 3] * (w_neg * decay)
        return out
    np.einsum("km,km->k", friction_regressor(v, shape), coefficients, out=out)
    return out


def zero_slope_constraint(shape: FrictionShape) -> FloatArray:
    """Row ``c`` with ``c @ theta = 0`` forcing d tau_f / dv = 0 at v = 0+ (Stribeck model only).

    Raises:
        ConfigError: the model is not ``stribeck``.
    """
    if shape.kind is not FrictionKind.STRIBECK:
        raise ConfigError(f"the zero-slope constraint needs friction.kind = stribeck, got {shape.kind.value}")
    c = np.zeros(shape.n_parameters)
    c[:4] = [1.0 / shape.stribeck_velocity, 1.0, -1.0 / shape.stribeck_velocity, 0.0]
    return c


def fit_friction(
    v: ArrayLike,
    tau_friction: ArrayLike,
    shape: FrictionShape,
    *,
    zero_slope: bool = False,
) -> FloatArray:
    """Least-squares friction parameters of one joint from velocity and friction torque samples.

    Args:
        v: velocities, shape (N,) [rad/s].
        tau_friction: friction torque samples, shape (N,) [N m].
        shape: the model to fit.
        zero_slope: impose `zero_slope_constraint` (Stribeck only) as an equality constraint,
            solved through the KKT system of the constrained least-squares problem.

    Returns:
        Parameters, shape (shape.n_parameters,), in the order of ``shape.names``.
    """
    X = friction_regressor(v, shape)
    y = np.asarray(tau_friction, dtype=float)
    A = X.T @ X
    b = X.T @ y
    if not zero_slope:
        unconstrained: FloatArray = np.linalg.lstsq(A, b, rcond=None)[0]
        return unconstrained
    c = zero_slope_constraint(shape)
    p = shape.n_parameters
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = A
    kkt[:p, p] = c
    kkt[p, :p] = c
    rhs = np.concatenate([b, [0.0]])
    constrained: FloatArray = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:p]
    return constrained


def fit_direction_threshold(
    v: ArrayLike,
    tau_friction: ArrayLike,
    shape: FrictionShape,
    *,
    bounds: tuple[float, float] = (1e-3, 0.5),
) -> tuple[FrictionShape, FloatArray]:
    """Find Liu et al.'s low/high speed threshold lambda by a bounded 1-D search.

    For each candidate lambda the directional model is linear, so the inner problem is least
    squares; the outer search minimises its residual over ``bounds`` [rad/s].

    Returns:
        The shape with the best ``direction_threshold`` and the parameters fitted with it.
    """
    if shape.kind is not FrictionKind.DIRECTIONAL:
        raise ConfigError("fit_direction_threshold needs friction.kind = directional")
    v = np.asarray(v, dtype=float)
    y = np.asarray(tau_friction, dtype=float)

    def residual(threshold: float) -> float:
        trial = replace(shape, direction_threshold=float(threshold))
        theta = fit_friction(v, y, trial)
        return float(np.sum((friction_regressor(v, trial) @ theta - y) ** 2))

    # The residual is piecewise constant in lambda between sample speeds: a coarse grid first,
    # then a bounded Brent refinement around the best grid point.
    grid = np.geomspace(bounds[0], bounds[1], 40)
    costs = [residual(t) for t in grid]
    k = int(np.argmin(costs))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    best = minimize_scalar(residual, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    threshold = float(best.x) if best.fun <= costs[k] else float(grid[k])
    fitted = replace(shape, direction_threshold=threshold)
    return fitted, fit_friction(v, y, fitted)
