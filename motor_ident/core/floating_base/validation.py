"""Held-out evaluation of a floating-base model: the total contact wrench of a second recording.

The held-out recording goes through the same reconstruction as the training one
(`motor_ident.core.floating_base.samples.floating_samples`: the base orientation fused from the
IMU, the base position from the feet in stance, the same filter), so its states carry the same
kind of error. Two things make a model's held-out error, and `heldout_wrench` tells them apart:

- **the states**: the reconstructed base motion is not the true one (IMU orientation noise
  through a 0.5 m lever, filtering), and the sensors are noisy. No parameter set removes that
  part: the **floor** is the base parameters refitted on the held-out samples themselves (WLS,
  in-sample), the smallest error any model reaches on these states.
- **the parameters**: what the model adds above the floor, ``sqrt(nrmse^2 - floor^2)`` per row.

A model is compared on what the data determined. The training data fix the base parameters
only; the rest of a full parameter set (each standing foot's inertia and vertical first moment,
say) is the estimator's choice and multiplies the part of the reconstructed motion the feet, in
truth, never made (the reconstruction moves them by fractions of a millimetre). ``determined``
evaluates every model with its base parameters and the nominal model's undetermined rest, so
two models that agree on the base parameters score the same, as they do on the true states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.least_squares import FitMetrics, RegressionStatistics
from motor_ident.core.floating_base.identification import predicted_wrench_metrics
from motor_ident.core.floating_base.model import BASE_ROWS, FloatingBaseRegressor
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.errors import DataError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class HeldOutWrench:
    """Per base row (`BASE_ROWS`): the held-out total contact wrench's metrics (`heldout_wrench`).

    Attributes:
        identified: the model's full parameters as identified.
        determined: its base parameters, the undetermined rest the nominal's (the comparison to rank models by).
        nominal: the nominal (URDF) model.
        floor: the base parameters refitted on these samples (the states' and sensors' share).
        n_samples: held-out samples.
    """

    identified: FitMetrics
    determined: FitMetrics
    nominal: FitMetrics
    floor: FitMetrics
    n_samples: int

    @property
    def parameter_nrmse(self) -> FloatArray:
        """The parameters' share of ``determined``'s NRMSE above the floor, per row (6,)."""
        excess = self.determined.nrmse**2 - self.floor.nrmse**2
        return np.asarray(np.sqrt(np.clip(excess, 0.0, None)), dtype=float)

    @property
    def nominal_parameter_nrmse(self) -> FloatArray:
        """The nominal model's share above the floor, per row (6,)."""
        excess = self.nominal.nrmse**2 - self.floor.nrmse**2
        return np.asarray(np.sqrt(np.clip(excess, 0.0, None)), dtype=float)

    def summary(self) -> dict[str, object]:
        """JSON-ready per-row NRMSE and RMSE of each model."""
        out: dict[str, object] = {"rows": list(BASE_ROWS), "n_samples": self.n_samples}
        for name in ("identified", "determined", "nominal", "floor"):
            metrics: FitMetrics = getattr(self, name)
            out[name] = {"nrmse": [float(x) for x in metrics.nrmse], "rmse": [float(x) for x in metrics.rmse]}
        out["parameter_nrmse"] = [float(x) for x in self.parameter_nrmse]
        out["nominal_parameter_nrmse"] = [float(x) for x in self.nominal_parameter_nrmse]
        return out


def heldout_wrench(
    regressor: FloatingBaseRegressor,
    base: BaseParameters,
    theta: ArrayLike,
    theta_nominal: ArrayLike,
    Q: ArrayLike,
    V: ArrayLike,
    A: ArrayLike,
    generalized_force: ArrayLike,
) -> HeldOutWrench:
    """Evaluate full parameters ``theta`` (p,) on held-out samples (module docstring).

    Args:
        base: the base parameters the training data determined.
        theta_nominal: the nominal full parameters (p,).
        Q, V, A, generalized_force: held-out samples as `identify_floating_base` takes them.

    Raises:
        DataError: fewer samples than base parameters (no floor).
    """
    Q, V, A, F = (np.asarray(x, dtype=float) for x in (Q, V, A, generalized_force))
    theta, theta0 = np.asarray(theta, dtype=float), np.asarray(theta_nominal, dtype=float)
    if 6 * Q.shape[0] < 2 * base.n_base:
        raise DataError(f"{Q.shape[0]} held-out samples are too few for {base.n_base} base parameters")
    Y = regressor.rows(Q, V, A, count=6)
    measured = F[:, :6]
    refit = RegressionStatistics(6, base.n_base)
    undetermined = Y @ theta0 - base.base_regressor(Y) @ base.to_base(theta0)  # the URDF's, as the fit takes it
    refit.add(base.base_regressor(Y), measured - undetermined)
    floor = refit.wls().theta
    models = {
        "identified": theta,
        "determined": base.to_full(base.to_base(theta), theta0),
        "nominal": theta0,
    }
    metrics = {name: predicted_wrench_metrics(regressor, th, Q, V, A, F, rows=Y)[0] for name, th in models.items()}
    return HeldOutWrench(
        identified=metrics["identified"],
        determined=metrics["determined"],
        nominal=metrics["nominal"],
        floor=refit.metrics(floor),
        n_samples=int(Q.shape[0]),
    )
