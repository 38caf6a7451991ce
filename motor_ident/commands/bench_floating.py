"""``motor-ident bench``: cost of the floating-base regressor for 7, 14 and 38 DoF (iCub on a free-flyer)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from motor_ident.commands.bench import _loop, _per_sample_us

# iCub's joints kept for each size (the others locked): 1, 8 and all 32 joints, 6 base DoF each
SIZES: dict[int, tuple[str, ...] | None] = {
    7: ("torso_pitch",),
    14: (
        "l_hip_pitch",
        "l_hip_roll",
        "l_hip_yaw",
        "l_knee",
        "l_ankle_pitch",
        "l_ankle_roll",
        "torso_pitch",
        "l_shoulder_pitch",
    ),
    38: None,
}


def _interleaved(samples: int, *calls: Callable[[], object], rounds: int = 7) -> list[float]:
    """Best of ``rounds`` timings of each call [us per sample], the calls taking turns, so that a
    load that comes and goes on a shared machine weighs on each of them alike."""
    best = [np.inf] * len(calls)
    for _ in range(rounds):
        for i, call in enumerate(calls):
            t0 = time.perf_counter()
            call()
            best[i] = min(best[i], time.perf_counter() - t0)
    return [b / samples * 1e6 for b in best]


def bench_floating_base(samples: int = 500, refits: int = 50) -> list[dict[str, Any]]:
    """Per-sample cost of the floating-base rows (and with the contact wrench mapping) against
    pinocchio's free-flyer regressor, and the refit rate of the base-row WLS on its statistics."""
    import pinocchio as pin

    from motor_ident.core.estimation.least_squares import RegressionStatistics
    from motor_ident.core.floating_base.identification import structural_base_parameters
    from motor_ident.core.floating_base.model import FloatingBaseRegressor, load_floating_base_model
    from motor_ident.io.urdf_paths import example_robot_urdf

    urdf = example_robot_urdf("icub_description/robots/icub.urdf")
    rows = []
    for dof, joints in SIZES.items():
        floating = load_floating_base_model(urdf, joint_names=joints, contact_frames=("l_sole", "r_sole"))
        regressor = FloatingBaseRegressor(floating)
        rng = np.random.default_rng(0)
        Q, V, A = floating.random_states(rng, samples)
        W = rng.standard_normal((samples, 2, 6))
        model, data = floating.model, floating.model.createData()

        base = structural_base_parameters(regressor, "base")
        stats = RegressionStatistics.from_arrays(
            base.base_regressor(regressor.rows(Q, V, A, count=6)), rng.standard_normal((samples, 6))
        )
        t0 = time.perf_counter()
        for _ in range(refits):
            stats.wls(np.ones(6))
        refit_s = (time.perf_counter() - t0) / refits
        # into a reused batch, as identify's chunks: the cost of the rows, not of fresh memory
        every = np.empty((samples, floating.nv, regressor.n_parameters))
        base_rows = np.empty((samples, 6, regressor.n_parameters))
        ours, ours_base, pinocchio = _interleaved(
            samples,
            partial(regressor.rows, Q, V, A, out=every),
            partial(regressor.rows, Q, V, A, count=6, out=base_rows),
            partial(_loop, pin.computeJointTorqueRegressor, model, data, Q, V, A),
        )
        rows.append(
            {
                "dof": dof,
                "n_parameters": regressor.n_parameters,
                "n_base": base.n_base,
                "rows_us": ours,
                "base_rows_us": ours_base,
                "rows_and_wrenches_us": ours + _per_sample_us(samples, regressor.contact_forces, Q, W),
                "pinocchio_regressor_us": pinocchio,
                "over_pinocchio": ours / pinocchio,
                "base_rows_over_pinocchio": ours_base / pinocchio,
                "refit_hz": 1.0 / refit_s,
            }
        )
    return rows
