"""Optimised excitation: a finite Fourier series under joint limits, chosen by an identifiability criterion.

The trajectory is the Fourier series of `motor_ident.core.excitation.fourier`
(Szabó & Szádeczky-Kardoss 2021, eq. 22). Its
coefficients (a, b) are optimised for one of four criteria on the base regressor L sampled over
one period (rows of all samples and joints stacked, optionally weighted per joint, e.g. by
1 / sigma_j so that L -> Sigma^-1/2 L as in WLS):

``cond``       2-norm condition number of L (Gautier and Khalil; Swevers et al.).
``frobenius``  CondF(L'L) = |L'L|_F |(L'L)^-1|_F (Szabó & Szádeczky-Kardoss 2021, eq. 20-21), computed from the singular
               values s of L as sqrt(sum s^4 * sum s^-4).
``block``      weighted block condition number of Liu et al. 2023, eq. 11-14, see below.
``dopt``       D-optimality, -log det(L'L / N) with N samples (the information per sample, so the
               value does not grow with the sampling rate).

Constraints (Szabó & Szádeczky-Kardoss 2021, eq. 21, Liu et al. 2023, eq. 16):

- rest to rest: qd = qdd = 0 at t = 0 and, by periodicity, at t = t_f = 1 / f_f. For joint i with
  harmonics l = 1..M these are the linear equalities sum_l a_il = 0 and sum_l l b_il = 0
  (eq. 22 at t = 0). They are eliminated rather than imposed: the coefficients are written in an
  orthonormal basis of their null space, so the optimiser sees only inequalities. q(0) = q(t_f)
  holds for any full period.
- q within the URDF position limits, |qd| within the URDF velocity limits and |qdd| within a
  configured acceleration limit, imposed at a grid of times over one period. These are linear in
  the coefficients (given q0), so they are passed with their exact Jacobian. After the optimiser
  stops, the trajectory is checked on a grid ten times finer and, if it overshoots anywhere
  (between grid points, or by the solver's tolerance), shrunk toward q0, which keeps the
  rest-to-rest conditions and scales q - q0, qd and qdd alike. Liu et al. 2023, eq. 16 bounds the same
  quantities by the sum of the coefficients' magnitudes instead; that is safe but conservative
  (the peaks of different harmonics rarely coincide), so the sampled form is used here.
- optionally |tau| within a fraction of the URDF effort limits, with tau from RNEA (rotor
  inertia included) plus the nominal friction, at the criterion's samples (nonlinear).

Weighted block condition number (Liu et al. 2023, eq. 11-14; the extracted text is garbled, so it is
derived again here). Liu et al. 2023 weights the regressor, Gamma* = Omega^1/2 Gamma with Omega from the
noise (cond(Gamma*) <= cond(Omega^1/2) cond(Gamma)), drops the friction columns (their many zeros
inflate the condition number) and splits Gamma* by the term each column block comes from:

    Gamma* = Gamma*_alpha + Gamma*_beta + Gamma*_gamma,
    Gamma*_alpha = Y(q, qd, qdd) - Y(q, qd, 0)   (inertia: M(q) qdd, and rotor inertia)
    Gamma*_beta  = Y(q, qd, 0)   - Y(q, 0, 0)    (Coriolis and centrifugal: C(q, qd) qd)
    Gamma*_gamma = Y(q, 0, 0)                    (gravity: g(q))

which is exact since RNEA has no cross terms between qd and qdd. The criterion is

    co = (w_alpha + w_beta + w_gamma) cond(Gamma*) + w_alpha cond(Gamma*_alpha)
         + w_beta cond(Gamma*_beta) + w_gamma cond(Gamma*_gamma).

A block does not involve every base parameter (gravity involves only first moments), so each
block's condition number is taken over the base columns it excites; which columns those are is
decided once, structurally, from random states (nonzero columns, then an independent subset by
pivoted QR), so the criterion stays a continuous function of the coefficients. Liu et al. 2023 derives
the weights from "the variance of the corresponding columns" without a formula; here they are
configuration (default 1, 1, 1).

Optimisation: multi-start SLSQP (or trust-constr) from random feasible trajectories, seeded and
reproducible. The objective is the logarithm of cond / frobenius / block (same minimiser, far
better scaled for finite-difference gradients) and the D-criterion as is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.excitation.criteria import (
    _SINGULAR_OBJECTIVE,
    Criterion,
    condition_number,
    d_optimality,
    frobenius_condition,
)
from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from motor_ident.core.excitation.limits import ExcitationLimits
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.model import inverse_dynamics, random_states
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class ExcitationConfig:
    """Settings of the excitation optimisation.

    Attributes:
        criterion: what to minimise.
        harmonics: M, harmonics per joint (>= 2: rest to rest removes two degrees of freedom).
        base_frequency: f_f [Hz]; the period is 1 / f_f.
        samples: samples per period for the criterion (50-100 keeps it fast).
        constraint_samples: samples per period where the limits are imposed.
        check_samples: samples per period of the final limit check.
        starts: number of random starts.
        seed: seed of the random starts.
        max_iterations: iterations per start.
        joint_weights: per-joint row weights of the regressor (e.g. 1 / sigma_j), None for 1.
        block_weights: (w_alpha, w_beta, w_gamma) of the block criterion.
        rigid_only: evaluate ``cond`` / ``frobenius`` / ``dopt`` on the rigid-body base columns only
            (friction columns dropped, as ``block`` always does): the matrix Liu et al. 2023 compares
            its criteria on (Table 2).
        optimise_offset: optimise q0 as well (else fixed at mid-range).
        method: ``SLSQP`` or ``trust-constr``.
        start_fill: random starts are scaled to this fraction of the largest feasible amplitude.
    """

    criterion: Criterion = Criterion.COND
    harmonics: int = 5
    base_frequency: float = 0.1
    samples: int = 100
    constraint_samples: int = 200
    check_samples: int = 2000
    starts: int = 8
    seed: int = 0
    max_iterations: int = 200
    joint_weights: tuple[float, ...] | None = None
    block_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    rigid_only: bool = False
    optimise_offset: bool = False
    method: str = "SLSQP"
    start_fill: float = 0.8

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "criterion", Criterion(self.criterion))
        except ValueError:
            allowed = ", ".join(c.value for c in Criterion)
            raise ConfigError(f"criterion = {self.criterion!r}: expected one of {allowed}") from None
        for key, low in (
            ("harmonics", 2),
            ("samples", 10),
            ("constraint_samples", 10),
            ("check_samples", 10),
            ("starts", 1),
            ("max_iterations", 1),
        ):
            value = getattr(self, key)
            if not isinstance(value, int | np.integer) or value < low:
                raise ConfigError(f"{key} = {value!r}: expected an integer >= {low}")
        if not (np.isfinite(self.base_frequency) and self.base_frequency > 0.0):
            raise ConfigError(f"base_frequency = {self.base_frequency!r}: expected > 0 Hz")
        if self.method not in ("SLSQP", "trust-constr"):
            raise ConfigError(f"method = {self.method!r}: expected SLSQP or trust-constr")
        if not 0.0 < self.start_fill <= 1.0:
            raise ConfigError(f"start_fill = {self.start_fill!r}: expected 0 < fraction <= 1")
        if self.joint_weights is not None:
            w = tuple(float(x) for x in self.joint_weights)
            if not all(np.isfinite(x) and x > 0.0 for x in w):
                raise ConfigError(f"joint_weights = {list(w)}: expected finite numbers > 0")
            object.__setattr__(self, "joint_weights", w)
        bw = tuple(float(x) for x in self.block_weights)
        if len(bw) != 3 or not all(np.isfinite(x) and x >= 0.0 for x in bw) or sum(bw) <= 0.0:
            raise ConfigError(f"block_weights = {list(bw)}: expected three numbers >= 0, not all zero")
        object.__setattr__(self, "block_weights", bw)


@dataclass(frozen=True, eq=False)
class ExcitationResult:
    """Outcome of `design_excitation`.

    Attributes:
        trajectory: the best trajectory (rest to rest, within the limits).
        criterion: the criterion minimised.
        criterion_value: its value for ``trajectory``.
        condition_number: 2-norm condition number of the unweighted base regressor at the
            criterion's samples (comparable across criteria).
        history: criterion value after each iteration, one array per start.
        start_values: final criterion value of each start, shape (starts,).
        best_start: index of the start that gave ``trajectory``.
        evaluations: number of criterion evaluations over all starts.
    """

    trajectory: FourierTrajectory
    criterion: Criterion
    criterion_value: float
    condition_number: float
    history: tuple[FloatArray, ...]
    start_values: FloatArray
    best_start: int
    evaluations: int


@dataclass(frozen=True)
class Violation:
    """Largest excess over each limit on a fine grid (0 when respected) and the boundary residuals.

    Attributes:
        position, velocity, acceleration: largest excess [rad], [rad/s], [rad/s^2].
        rest: largest |qd| [rad/s] or |qdd| [rad/s^2] at t = 0 and t = t_f.
        closure: largest |q(t_f) - q(0)| [rad].
    """

    position: float
    velocity: float
    acceleration: float
    rest: float
    closure: float

    @property
    def worst(self) -> float:
        """The largest of all entries."""
        return max(self.position, self.velocity, self.acceleration, self.rest, self.closure)


def _rest_to_rest_basis(harmonics: int) -> FloatArray:
    """Orthonormal basis Z (2M, 2M - 2) of the coefficients [a; b] of one joint with qd(0) = qdd(0) = 0.

    From eq. 22 at t = 0: qd(0) = sum_l a_l and qdd(0) = w_f sum_l l b_l.
    """
    M = harmonics
    Z = np.zeros((2 * M, 2 * M - 2))
    Z[:M, : M - 1] = scipy.linalg.null_space(np.ones((1, M)))
    Z[M:, M - 1 :] = scipy.linalg.null_space(np.arange(1, M + 1, dtype=float)[None, :])
    return Z


def _unit_responses(times: FloatArray, harmonics: int, base_frequency: float) -> tuple[FloatArray, ...]:
    """q - q0, qd, qdd at ``times`` (N,) of each unit coefficient of one joint, each (N, 2M).

    Column k is the response to [a; b] = e_k, evaluated by `FourierTrajectory` itself so that
    eq. 22 lives in one place.
    """
    M = harmonics
    eye = np.eye(2 * M)
    unit = FourierTrajectory(a=eye[:, :M], b=eye[:, M:], q0=np.zeros(2 * M), base_frequency=base_frequency)
    return unit.evaluate(times)


class ExcitationProblem:
    """The optimisation problem: regressor, base parameters, limits and the precomputed pieces.

    Decision vector x (all float): the rest-to-rest coordinates z_i (2M - 2) of each joint i, in
    joint order, then q0 (n) when ``config.optimise_offset``.
    """

    def __init__(
        self,
        regressor: Regressor,
        base: BaseParameters,
        limits: ExcitationLimits,
        config: ExcitationConfig,
        *,
        theta_nominal: ArrayLike | None = None,
    ) -> None:
        """Set up the problem.

        Args:
            regressor: full regressor of the robot.
            base: its base parameters (e.g. `structural_base_parameters`).
            limits: bounds on q, qd, qdd (and tau).
            config: criterion and optimiser settings.
            theta_nominal: full parameters (p,) whose friction is added to RNEA for the torque
                bound (rigid-body torque only when None).

        Raises:
            ConfigError: sizes disagree.
        """
        robot = regressor.robot
        if limits.n != robot.n:
            raise ConfigError(f"limits for {limits.n} joints: expected {robot.n} ({list(robot.joint_names)})")
        if config.joint_weights is not None and len(config.joint_weights) != robot.n:
            raise ConfigError(f"joint_weights = {list(config.joint_weights)}: expected {robot.n} values")
        if base.n_full != regressor.n_parameters:
            raise ConfigError(f"base parameters of {base.n_full} full parameters: expected {regressor.n_parameters}")
        self.regressor, self.base, self.limits, self.config = regressor, base, limits, config
        self.n, self.harmonics = robot.n, config.harmonics
        self.period = 1.0 / config.base_frequency
        self.q0 = limits.centre
        self.Z = _rest_to_rest_basis(config.harmonics)
        self.n_z = self.Z.shape[1]
        self.n_vars = self.n * self.n_z + (self.n if config.optimise_offset else 0)
        self.times = np.arange(config.samples) * self.period / config.samples
        self.weights = np.ones(self.n) if config.joint_weights is None else np.asarray(config.joint_weights)
        self.theta_nominal = None if theta_nominal is None else np.asarray(theta_nominal, dtype=float)
        self._data = robot.create_data()
        self._constraint_rows(np.arange(config.constraint_samples) * self.period / config.constraint_samples)
        friction_columns: set[int] = set()
        for s in (*regressor.layout.friction, *regressor.layout.motor_friction):
            friction_columns.update(range(s.start, s.stop))
        self.rigid_base_columns = np.array(
            [k for k, j in enumerate(base.independent) if j not in friction_columns], dtype=np.int64
        )
        self.block_columns = self._structural_block_columns() if config.criterion is Criterion.BLOCK else None
        self.evaluations = 0

    # -- trajectory <-> decision vector ---------------------------------------------------------

    def trajectory(self, x: ArrayLike) -> FourierTrajectory:
        """The trajectory of a decision vector x (n_vars,)."""
        x = np.asarray(x, dtype=float)
        z = x[: self.n * self.n_z].reshape(self.n, self.n_z)
        c = z @ self.Z.T  # (n, 2M)
        q0 = x[self.n * self.n_z :] if self.config.optimise_offset else self.q0
        M = self.harmonics
        return FourierTrajectory(a=c[:, :M], b=c[:, M:], q0=q0, base_frequency=self.config.base_frequency)

    def coordinates(self, trajectory: FourierTrajectory) -> FloatArray:
        """Decision vector of the rest-to-rest projection of ``trajectory`` (same harmonics)."""
        if trajectory.a.shape != (self.n, self.harmonics):
            raise ConfigError(f"trajectory coefficients {trajectory.a.shape}: expected ({self.n}, {self.harmonics})")
        z = np.hstack([trajectory.a, trajectory.b]) @ self.Z  # least squares, Z orthonormal
        parts = [z.ravel()]
        if self.config.optimise_offset:
            parts.append(trajectory.q0)
        return np.concatenate(parts)

    # -- limits ----------------------------------------------------------------------------------

    def _constraint_rows(self, times: FloatArray) -> None:
        """Linear inequalities G x <= h imposing the limits at ``times``."""
        Q, QD, QDD = (R @ self.Z for R in _unit_responses(times, self.harmonics, self.config.base_frequency))
        lim = self.limits
        blocks_G, blocks_h = [], []
        for i in range(self.n):
            cols = slice(i * self.n_z, (i + 1) * self.n_z)

            def add(rows: FloatArray, bound: float, sign: float, offset: bool, i: int = i, cols: slice = cols) -> None:
                G = np.zeros((rows.shape[0], self.n_vars))
                G[:, cols] = sign * rows
                h = np.full(rows.shape[0], bound)
                if offset:
                    if self.config.optimise_offset:
                        G[:, self.n * self.n_z + i] = sign
                    else:
                        h = h - sign * self.q0[i]
                blocks_G.append(G)
                blocks_h.append(h)

            if np.isfinite(lim.position_upper[i]):
                add(Q, lim.position_upper[i], 1.0, True)
            if np.isfinite(lim.position_lower[i]):
                add(Q, -lim.position_lower[i], -1.0, True)
            for rows, bound in ((QD, lim.velocity[i]), (QDD, lim.acceleration[i])):
                add(rows, bound, 1.0, False)
                add(rows, bound, -1.0, False)
        self.G = np.vstack(blocks_G)
        self.h = np.concatenate(blocks_h)

    def feasible_scale(self, trajectory: FourierTrajectory, samples: int | None = None) -> float:
        """Largest s such that q0 + s (q - q0), s qd, s qdd respect the limits at every time.

        Evaluated on a grid of ``samples`` per period, then refined around the three tightest grid
        points of every joint and quantity (100 points within one grid step each side), so peaks
        between grid points are found to ~1e-8 relative. ``inf`` for a trajectory that does not
        move; < 1 when it overshoots somewhere.
        """
        samples = self.config.check_samples if samples is None else samples
        step = self.period / samples
        grid = np.arange(samples, dtype=float) * step
        ratios = self._limit_ratios(trajectory, grid)  # (4, N, n)
        worst = np.argsort(ratios, axis=1)[:, :3, :]  # three tightest grid points per quantity and joint
        centres = np.unique(grid[worst.ravel()])
        local = (centres[:, None] + np.linspace(-step, step, 101)[None, :]).ravel()
        return float(min(np.min(ratios), np.min(self._limit_ratios(trajectory, local))))

    def _limit_ratios(self, trajectory: FourierTrajectory, times: FloatArray) -> FloatArray:
        """Per time and joint, the factor by which the motion could grow before each limit, (4, N, n)."""
        q, qd, qdd = trajectory.evaluate(times)
        dq = q - trajectory.q0
        lim = self.limits
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.stack(
                [
                    np.where(dq > 0.0, (lim.position_upper - trajectory.q0) / dq, np.inf),
                    np.where(dq < 0.0, (lim.position_lower - trajectory.q0) / dq, np.inf),
                    lim.velocity / np.abs(qd),
                    lim.acceleration / np.abs(qdd),
                ]
            )
        return np.where(np.isnan(out), np.inf, out)

    def violation(self, trajectory: FourierTrajectory, samples: int | None = None) -> Violation:
        """How far ``trajectory`` exceeds each limit on a fine grid, and its boundary residuals."""
        samples = self.config.check_samples if samples is None else samples
        t = np.arange(samples + 1) * self.period / samples  # includes t_f
        q, qd, qdd = trajectory.evaluate(t)
        lim = self.limits
        return Violation(
            position=float(max(np.max(q - lim.position_upper), np.max(lim.position_lower - q), 0.0)),
            velocity=float(max(np.max(np.abs(qd) - lim.velocity), 0.0)),
            acceleration=float(max(np.max(np.abs(qdd) - lim.acceleration), 0.0)),
            rest=float(np.max(np.abs(np.concatenate([qd[[0, -1]], qdd[[0, -1]]])))),
            closure=float(np.max(np.abs(q[-1] - q[0]))),
        )

    @staticmethod
    def scaled(trajectory: FourierTrajectory, factor: float) -> FourierTrajectory:
        """The trajectory with q - q0, qd and qdd multiplied by ``factor``."""
        return FourierTrajectory(
            a=factor * trajectory.a,
            b=factor * trajectory.b,
            q0=trajectory.q0,
            base_frequency=trajectory.base_frequency,
        )

    def fit_to_limits(self, trajectory: FourierTrajectory, fill: float = 1.0) -> FourierTrajectory:
        """The trajectory scaled so that its tightest limit is reached at ``fill`` (<= 1) of the way."""
        s = self.feasible_scale(trajectory)
        if not np.isfinite(s):
            raise ConfigError("the trajectory does not move: all its coefficients are zero")
        return self.scaled(trajectory, fill * s * (1.0 - 1e-9))

    def torque(self, trajectory: FourierTrajectory) -> FloatArray:
        """Joint torques along the criterion's samples, shape (N, n) [N m]: RNEA plus nominal friction."""
        q, qd, qdd = trajectory.evaluate(self.times)
        robot = self.regressor.robot
        tau = np.array([inverse_dynamics(robot, self._data, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])
        if self.theta_nominal is not None:
            tau += self.regressor.friction_torque(qd, self.theta_nominal)
        return tau

    # -- criteria --------------------------------------------------------------------------------

    def _structural_block_columns(self) -> tuple[IntArray, IntArray, IntArray]:
        """Rigid base columns excited by the inertia, velocity and gravity blocks (see module docstring)."""
        rng = np.random.default_rng(0)
        q, v, a = random_states(self.regressor.robot, rng, 200)
        out = []
        for block in self._blocks(q, v, a):
            W = block.reshape(-1, block.shape[-1])
            norms = np.linalg.norm(W, axis=0)
            present = np.flatnonzero(norms > 1e-8 * norms.max())
            _, R, perm = scipy.linalg.qr(W[:, present], mode="economic", pivoting=True)
            diag = np.abs(np.diag(R))
            rank = int(np.sum(diag > 1e-8 * diag[0]))
            out.append(np.sort(present[perm[:rank]]))
        return out[0], out[1], out[2]

    def _blocks(self, q: FloatArray, v: FloatArray, a: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Inertia, velocity and gravity parts of the rigid base regressor, each (N, n, r_rigid)."""
        zero = np.zeros_like(q)
        cols = self.base.independent[self.rigid_base_columns]
        full = self.regressor.rows(q, v, a)[..., cols]
        moving = self.regressor.rows(q, v, zero)[..., cols]
        gravity = self.regressor.rows(q, zero, zero)[..., cols]
        return full - moving, moving - gravity, gravity

    def base_regressor(self, trajectory: FourierTrajectory, weighted: bool = True) -> FloatArray:
        """Stacked base regressor along the criterion's samples, shape (N n, r), rows weighted per joint."""
        q, qd, qdd = trajectory.evaluate(self.times)
        L = self.base.base_regressor(self.regressor.rows(q, qd, qdd))
        if weighted:
            L = L * self.weights[None, :, None]
        return L.reshape(-1, L.shape[-1])

    def criterion_value(self, trajectory: FourierTrajectory, criterion: Criterion | str | None = None) -> float:
        """Value of ``criterion`` (the configured one by default) for ``trajectory``."""
        criterion = self.config.criterion if criterion is None else Criterion(criterion)
        self.evaluations += 1
        if criterion is Criterion.BLOCK:
            if self.block_columns is None:
                self.block_columns = self._structural_block_columns()
            q, qd, qdd = trajectory.evaluate(self.times)
            w = self.weights[None, :, None]
            alpha, beta, gamma = (B * w for B in self._blocks(q, qd, qdd))
            total = (alpha + beta + gamma).reshape(-1, alpha.shape[-1])
            wa, wb, wg = self.config.block_weights
            value = (wa + wb + wg) * condition_number(total)
            for weight, block, cols in zip((wa, wb, wg), (alpha, beta, gamma), self.block_columns):
                if weight > 0.0:
                    value += weight * condition_number(block[..., cols].reshape(-1, cols.size))
            return float(value)
        L = self.base_regressor(trajectory)
        if self.config.rigid_only:
            L = L[:, self.rigid_base_columns]
        if criterion is Criterion.COND:
            return condition_number(L)
        if criterion is Criterion.FROBENIUS:
            return frobenius_condition(L)
        return d_optimality(L, self.times.size)

    def all_criteria(self, trajectory: FourierTrajectory) -> dict[str, float]:
        """Every criterion and the unweighted condition numbers (all base columns, rigid-body ones), for reports."""
        values = {c.value: self.criterion_value(trajectory, c) for c in Criterion}
        L = self.base_regressor(trajectory, weighted=False)
        values["condition_number"] = condition_number(L)
        values["condition_number_rigid"] = condition_number(L[:, self.rigid_base_columns])
        return values

    def objective(self, x: ArrayLike) -> float:
        """What the optimiser minimises: log of the criterion (its value for ``dopt``)."""
        value = self.criterion_value(self.trajectory(x))
        if self.config.criterion is Criterion.DOPT:
            return value if np.isfinite(value) else _SINGULAR_OBJECTIVE
        return float(np.log(value)) if np.isfinite(value) and value > 0.0 else _SINGULAR_OBJECTIVE

    def random_start(self, rng: np.random.Generator, fill: float | None = None) -> FourierTrajectory:
        """A random rest-to-rest trajectory scaled to ``fill`` of its largest feasible amplitude.

        Drawn by `random_fourier_trajectory` (velocity amplitude = the velocity limits), projected
        on the rest-to-rest coefficients, then scaled to the limits.
        """
        fill = self.config.start_fill if fill is None else fill
        raw = random_fourier_trajectory(
            rng,
            n=self.n,
            harmonics=self.harmonics,
            base_frequency=self.config.base_frequency,
            velocity_amplitude=self.limits.velocity,
            q0=self.q0,
        )
        return self.fit_to_limits(self.trajectory(self.coordinates(raw)), fill)
