"""Optimised excitation: multi-start search from a baseline trajectory."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.optimize
from numpy.typing import NDArray

from motor_ident.core.excitation.criteria import condition_number
from motor_ident.core.excitation.design import ExcitationProblem, ExcitationResult
from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def baseline_trajectory(
    problem: ExcitationProblem,
    rng: np.random.Generator,
    *,
    velocity_amplitude: float = 1.0,
    fill_limits: bool = False,
) -> FourierTrajectory:
    """A random Fourier trajectory within the same limits and harmonics, to compare an optimum with.

    Args:
        problem: gives the limits, harmonics, base frequency and q0 (mid-range).
        rng: random generator.
        velocity_amplitude: bound on each joint's speed of the draw [rad/s] (capped at the
            velocity limits): `random_fourier_trajectory` as the excitation node uses it.
        fill_limits: project the draw on the rest-to-rest coefficients and scale it until its
            tightest limit is reached (a random trajectory that uses the limits fully) instead
            of only shrinking it when it exceeds a limit.
    """
    if fill_limits:
        return problem.random_start(rng, fill=1.0)
    raw = random_fourier_trajectory(
        rng,
        n=problem.n,
        harmonics=problem.harmonics,
        base_frequency=problem.config.base_frequency,
        velocity_amplitude=np.minimum(velocity_amplitude, problem.limits.velocity),
        q0=problem.q0,
    )
    return raw if problem.feasible_scale(raw) >= 1.0 else problem.fit_to_limits(raw)


def _optimise_from(problem: ExcitationProblem, start: FourierTrajectory) -> tuple[FourierTrajectory, float, FloatArray]:
    """One local optimisation; returns the feasible result, its criterion value and the history."""
    config = problem.config
    history = [problem.criterion_value(start)]

    def record(x: FloatArray, *_: object) -> bool:
        history.append(problem.criterion_value(problem.trajectory(x)))
        return False

    x0 = problem.coordinates(start)
    nonlinear = problem.limits.torque is not None
    tmax = np.inf if problem.limits.torque is None else problem.limits.torque  # (n,) [N m]

    def torque_margin(x: FloatArray) -> FloatArray:
        tau = problem.torque(problem.trajectory(x))
        return np.concatenate([(tmax - tau).ravel(), (tmax + tau).ravel()])

    if config.method == "SLSQP":
        constraints: list[dict[str, object]] = [
            {"type": "ineq", "fun": lambda x: problem.h - problem.G @ x, "jac": lambda x: -problem.G}
        ]
        if nonlinear:
            constraints.append({"type": "ineq", "fun": torque_margin})
        result = scipy.optimize.minimize(
            problem.objective,
            x0,
            method="SLSQP",
            constraints=constraints,
            callback=record,
            options={"maxiter": config.max_iterations, "ftol": 1e-6},
        )
    else:
        cons: list[scipy.optimize.LinearConstraint | scipy.optimize.NonlinearConstraint] = [
            scipy.optimize.LinearConstraint(problem.G, -np.inf, problem.h)
        ]
        if nonlinear:
            cons.append(scipy.optimize.NonlinearConstraint(torque_margin, 0.0, np.inf))
        result = scipy.optimize.minimize(
            problem.objective,
            x0,
            method="trust-constr",
            constraints=cons,
            callback=record,
            options={"maxiter": config.max_iterations},
        )
    trajectory = problem.trajectory(result.x)
    if problem.feasible_scale(trajectory) < 1.0:
        trajectory = problem.fit_to_limits(trajectory)
    value = problem.criterion_value(trajectory)
    outside_torque = nonlinear and bool(np.any(torque_margin(problem.coordinates(trajectory)) < -1e-6))
    if outside_torque or not value <= history[0]:
        # The solver ended outside the torque bound or worse than it began: keep the start.
        trajectory, value = start, history[0]
    history.append(value)
    return trajectory, value, np.asarray(history)


def design_excitation(
    problem: ExcitationProblem, *, progress: Callable[[int, float], None] | None = None
) -> ExcitationResult:
    """Multi-start optimisation of the excitation (seeded by ``problem.config.seed``).

    Args:
        problem: the set-up problem.
        progress: called as ``progress(starts_done, best_value)`` after each start.

    Returns:
        The best trajectory over all starts with its criterion and history.
    """
    config = problem.config
    rng = np.random.default_rng(config.seed)
    best: tuple[FourierTrajectory, float, int] | None = None
    histories: list[FloatArray] = []
    values: list[float] = []
    for k in range(config.starts):
        start = problem.random_start(rng)
        trajectory, value, history = _optimise_from(problem, start)
        histories.append(history)
        values.append(value)
        if best is None or value < best[1]:
            best = (trajectory, value, k)
        if progress is not None:
            progress(k + 1, best[1])
    assert best is not None
    trajectory, value, index = best
    return ExcitationResult(
        trajectory=trajectory,
        criterion=config.criterion,
        criterion_value=value,
        condition_number=condition_number(problem.base_regressor(trajectory, weighted=False)),
        history=tuple(histories),
        start_values=np.asarray(values),
        best_start=index,
        evaluations=problem.evaluations,
    )
