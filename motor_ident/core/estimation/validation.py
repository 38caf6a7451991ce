"""Validation on a separate recording: prediction metrics and a per-joint verdict.

Identified parameters are judged on a trajectory they were not fitted to (the practice of the
field: FIGAROH, FloBaRoID and dynamic_calibration all do it). Per joint, with measured torque
``tau`` and prediction ``tau_pred`` (N samples):

- RMSE ``sqrt(mean(e^2))`` [N m], ``e = tau - tau_pred``;
- NRMSE, RMSE over the range of the measurement (`fit_metrics`);
- relative residual error ``RRE = 100 ||e|| / ||tau||`` [%];
- R^2 centred ``1 - e'e / sum (tau - mean)^2`` and uncentred ``1 - e'e / tau'tau``
  (Kolathaya et al. 2016, eq. 104).

`AcceptanceLimits` holds per-joint limits (RRE at most, R^2 at least); `judge` checks them and
that the identified model predicts no joint worse than the nominal one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.least_squares import fit_metrics
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]

DEFAULT_MAX_RRE = 25.0
"""Default acceptance limit on the relative residual error of every joint [%]."""


@dataclass(frozen=True, eq=False)
class PredictionMetrics:
    """Per-joint agreement of a prediction with measured torques, each shape (n,)."""

    rmse: FloatArray
    nrmse: FloatArray
    rre: FloatArray
    r2: FloatArray
    r2_uncentred: FloatArray


def prediction_metrics(tau: ArrayLike, tau_predicted: ArrayLike) -> PredictionMetrics:
    """Metrics of the module docstring for measured ``tau`` and ``tau_predicted``, both (N, n) [N m].

    Raises:
        DataError: shapes differ, no samples, or non-finite values.
    """
    tau = np.asarray(tau, dtype=float)
    pred = np.asarray(tau_predicted, dtype=float)
    if tau.shape != pred.shape or tau.ndim != 2 or tau.shape[0] == 0:
        raise DataError(f"measured {tau.shape} and predicted {pred.shape} torques: expected the same (N, n), N > 0")
    if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(pred))):
        raise DataError("measured or predicted torques hold NaN or Inf")
    base = fit_metrics(tau, pred)
    norm = np.linalg.norm(tau, axis=0)
    err = np.linalg.norm(tau - pred, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rre = np.where(norm > 0.0, 100.0 * err / np.where(norm > 0.0, norm, 1.0), np.where(err > 0.0, np.inf, 0.0))
    return PredictionMetrics(rmse=base.rmse, nrmse=base.nrmse, rre=rre, r2=base.r2, r2_uncentred=base.r2_uncentred)


@dataclass(frozen=True)
class AcceptanceLimits:
    """Per-joint acceptance limits of a validation.

    Attributes:
        max_rre: joint name -> largest relative residual error [%]; ``*`` for every other joint.
        min_r2: joint name -> smallest centred R^2; ``*`` for every other joint.
        not_worse_than_nominal: also fail a joint the nominal model predicts better.
    """

    max_rre: Mapping[str, float] = field(default_factory=lambda: {"*": DEFAULT_MAX_RRE})
    min_r2: Mapping[str, float] = field(default_factory=dict)
    not_worse_than_nominal: bool = True

    def __post_init__(self) -> None:
        for key, limits in (("max_rre", self.max_rre), ("min_r2", self.min_r2)):
            for joint, value in limits.items():
                if not np.isfinite(value):
                    raise ConfigError(f"acceptance {key}.{joint} = {value!r}: expected a finite number")
        for joint, value in self.max_rre.items():
            if value <= 0.0:
                raise ConfigError(f"acceptance max_rre.{joint} = {value!r} %: expected > 0")

    def limit(self, key: str, joint: str) -> float | None:
        """The limit ``key`` (``max_rre`` or ``min_r2``) of ``joint``, or None."""
        limits = self.max_rre if key == "max_rre" else self.min_r2
        return limits.get(joint, limits.get("*"))

    def unknown_joints(self, joints: Sequence[str]) -> list[str]:
        """Joint names the limits mention that are not in ``joints``."""
        named = set(self.max_rre) | set(self.min_r2)
        return sorted(named - set(joints) - {"*"})


@dataclass(frozen=True)
class Verdict:
    """Outcome of `judge`: ``passed``, the failed checks (``reasons``) and every check made."""

    passed: bool
    reasons: tuple[str, ...]
    checks: tuple[str, ...]


def judge(
    joints: Sequence[str],
    identified: PredictionMetrics,
    nominal: PredictionMetrics | None,
    limits: AcceptanceLimits,
) -> Verdict:
    """Check every joint's metrics against ``limits``.

    Raises:
        ConfigError: the limits name a joint that is not in ``joints``.
    """
    unknown = limits.unknown_joints(joints)
    if unknown:
        raise ConfigError(f"acceptance limits name joints {unknown} that are not in the robot's joints {list(joints)}")
    reasons: list[str] = []
    checks: list[str] = []
    for j, name in enumerate(joints):
        max_rre = limits.limit("max_rre", name)
        if max_rre is not None:
            ok = bool(identified.rre[j] <= max_rre)
            line = f"{name}: RRE {identified.rre[j]:.3g} % {'<=' if ok else '>'} {max_rre:g} %"
            checks.append(line)
            if not ok:
                reasons.append(line)
        min_r2 = limits.limit("min_r2", name)
        if min_r2 is not None:
            ok = bool(identified.r2[j] >= min_r2)
            line = f"{name}: R2 {identified.r2[j]:.4f} {'>=' if ok else '<'} {min_r2:g}"
            checks.append(line)
            if not ok:
                reasons.append(line)
        if limits.not_worse_than_nominal and nominal is not None:
            ok = bool(identified.rre[j] <= nominal.rre[j])
            line = (
                f"{name}: RRE {identified.rre[j]:.3g} % {'<=' if ok else '>'} the nominal model's "
                f"{nominal.rre[j]:.3g} %"
            )
            checks.append(line)
            if not ok:
                reasons.append(line)
    return Verdict(passed=not reasons, reasons=tuple(reasons), checks=tuple(checks))


def parse_limits(text: str, key: str) -> dict[str, float]:
    """``"20"`` or ``"elbow=15,wrist=30,*=20"`` -> {joint: limit} (``*`` for every other joint).

    Raises:
        ConfigError: not of that form (the message names ``key``).
    """
    out: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        joint, _, value = item.rpartition("=")
        try:
            out[joint.strip() or "*"] = float(value)
        except ValueError:
            raise ConfigError(
                f"{key} {text!r}: expected a number or joint=number pairs, e.g. 20 or elbow=15,*=20"
            ) from None
    if not out:
        raise ConfigError(f"{key} {text!r}: expected a number or joint=number pairs")
    return out
