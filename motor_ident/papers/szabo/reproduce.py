"""Szabó & Szádeczky-Kardoss 2021 (Szabo, Szadeczky-Kardoss 2021): LS and WLS on the 3-DoF DH arm, Table 2 beside ours.

What is reproduced: the shipped ``szabo_3dof`` config (Table 1 DH arm, arctan friction of
eq. 7-9 with the Table 2 friction values, no rotor inertia), an excitation optimised for the
paper's criterion (Frobenius condition number of L'L, eq. 20-21, rest to rest), torques
corrupted by independent Gaussian noise sigma = [0.5, 0.3, 0.7] N m, and a Monte Carlo of LS
(eq. 17) and WLS (eq. 19) on the base regressor, WLS weighing each joint by the noise variance
estimated from the run's LS residuals (eq. 18-19), not by the true one.

What differs from the paper, and why:

- The paper gives no masses or inertias; those of the shipped URDF are our choice. Its base
  parameters are also written in the DH frames, ours in the URDF joint frames (pinocchio's
  parameters about each joint frame), so the 15 inertial combinations are different expressions
  of different numbers: each of those Table 2 rows is "not implemented"
  (`motor_ident.papers.szabo.table2`), and their common claim (unbiased) is one key claim on ours.
- The friction rows are the same physical parameters in both: the paper's exact values are
  ours, and its LS/WLS means and variances stand beside ours. Variances depend on the
  trajectory and the number of samples, which the paper does not give (we use one 10 s period
  at 100 Hz), so they are compared (ratio in the criterion), not judged.
- The data are RNEA plus the fitted friction model on the exact q, qd, qdd (the paper notes that
  the joint-angle noise of its Simulink runs was negligible next to the torque noise). On such
  data every friction mean is unbiased, joint 2's too, where Table 2 shows tau_v(2) and tau_sc(2)
  biased: `motor_ident.papers.szabo.sweep` tries the setups that could cause it (other friction
  shapes, Simscape's friction block, velocity noise) and none acting on every joint does.

Key claims (the verdict): each of the 9 friction rows of Table 2 (LS and WLS means unbiased, or
for joint 2's tau_v and tau_sc biased with the paper's sign and size within 3x); the inertial base
parameters unbiased; WLS variance below LS on every parameter (Table 2: all 24). On the exact
plant the data come from the fitted model itself, so the unbiased rows follow from Gauss-Markov:
their criteria say so (weak). Reported with a verdict, not key: 24 identifiable parameters
(structural), the sweep.
Checks: the estimated noise std within 5 % of the true one (recovery); the empirical WLS variance
over the Cramer-Rao bound diag((L' Sigma^-1 L)^-1) within [0.7, 1.4], widened for few runs to the
two-sided chi-square interval at family-wise level 1 % (Bonferroni over the parameters); the
model equal to RNEA plus friction; the optimised trajectory better conditioned than a random one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.stats
from numpy.typing import NDArray

from motor_ident.core.actuators.friction import friction_regressor
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.excitation.criteria import Criterion
from motor_ident.core.excitation.design import ExcitationConfig, ExcitationProblem
from motor_ident.core.excitation.fourier import FourierTrajectory
from motor_ident.core.excitation.limits import limits_from_robot
from motor_ident.core.excitation.optimise import baseline_trajectory, design_excitation
from motor_ident.core.rigid_body.model import inverse_dynamics
from motor_ident.io.robot_config import load_robot_config
from motor_ident.io.trajectory import load_trajectory
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction, row
from motor_ident.papers.szabo.plant_data import record_tracking
from motor_ident.papers.szabo.sweep import UNBIASED_SD, SweepCase, pattern_sweep, sweep_rows
from motor_ident.papers.szabo.table2 import PAPER_KEYS, PAPER_TABLE2, table2_rows

FloatArray = NDArray[np.float64]

TITLE = "Szabó & Szádeczky-Kardoss 2021 (ACTA IMEKO), Table 2: exact, LS and WLS (mean, variance)"
ROBOT = "szabo_3dof"
SIGMA = (0.5, 0.3, 0.7)  # torque noise per joint [N m] (paper, Figure 2 and Table 2)
N_IDENTIFIABLE = 24  # paper, section 6
ENGINES = {
    "pinocchio": "RNEA (pinocchio) plus the friction of eq. 7-9 on the exact trajectory, as the paper's Simulink data",
    "mujoco": "MuJoCo plant (motor_ident.sim.engines.make_plant) tracking the excitation with computed torque + PD: "
    "independent dynamics and friction, command delay, encoder quantisation",
}


@dataclass(frozen=True)
class SzaboSettings:
    """Settings of the reproduction (the paper's where it gives them).

    Attributes:
        sigma: torque noise std per joint [N m].
        harmonics, base_frequency: the Fourier series (f_f [Hz]).
        rate: sampling rate of the identification data [Hz].
        periods: periods of the trajectory recorded.
        acceleration_limit: |qdd| bound [rad/s^2] (the paper's values are not given).
        position_margin: kept from the URDF position limits [rad].
        criterion: excitation criterion (the paper's: Frobenius condition number of L'L).
        samples: criterion samples per period; max_iterations: per start.
        data_stiction_gain, data_stribeck_gain: K_v and delta (eq. 7-8) of the friction that
            GENERATES the torques [s/rad]; the fit keeps the config's (50, 5). None (default): the
            config's, so that data and model share the friction shape as in the paper's Simulink
            data (`motor_ident.papers.szabo.sweep` shows that no other shape gives Table 2's pattern).
    """

    sigma: tuple[float, float, float] = SIGMA
    harmonics: int = 5
    base_frequency: float = 0.1
    rate: float = 100.0
    periods: int = 1
    acceleration_limit: float = 5.0
    position_margin: float = 0.05
    criterion: Criterion = Criterion.FROBENIUS
    samples: int = 60
    max_iterations: int = 100
    data_stiction_gain: float | None = None
    data_stribeck_gain: float | None = None


@dataclass(frozen=True, eq=False)
class MonteCarlo:
    """Estimates of the Monte Carlo runs and the quantities to compare them with.

    Attributes:
        names: base parameter expressions (r,).
        exact: exact base parameters (r,).
        ls, wls: estimates, shape (runs, r); WLS weighs each joint by the noise variance estimated
            from that run's LS residuals (eq. 18-19), not by the true one.
        wls_sigma: those estimated noise std per run and joint, shape (runs, n) [N m].
        crb: Cramer-Rao bound (L' Sigma^-1 L)^-1 with the TRUE Sigma, shape (r, r).
        ls_covariance: LS covariance under the heteroscedastic noise, (L'L)^-1 L' Sigma L (L'L)^-1.
        model_error: largest |L theta_exact - (RNEA + friction of the fitted shape)| [N m] (on a
            plant: largest |L theta_truth - measured torque|).
        shape_error: RMS of the data's torque minus L theta_exact, per joint [N m]: the model error
            the fit cannot absorb (friction shape, and on a plant everything the model lacks).
        tracking_rms: RMS tracking error on a plant [rad] (0 without one).
        n_base: number of base parameters.
    """

    names: list[str]
    exact: FloatArray
    ls: FloatArray
    wls: FloatArray
    wls_sigma: FloatArray
    crb: FloatArray
    ls_covariance: FloatArray
    model_error: float
    shape_error: FloatArray
    n_base: int
    tracking_rms: float = 0.0


def monte_carlo(
    trajectory: FourierTrajectory,
    *,
    runs: int,
    seed: int,
    settings: SzaboSettings = SzaboSettings(),
    progress: Any = None,
    engine: str = "pinocchio",
) -> MonteCarlo:
    """LS and WLS on ``runs`` noisy copies of the torques along ``trajectory`` (szabo_3dof).

    Args:
        trajectory: the excitation, joints in the config's order.
        runs: number of noise draws.
        seed: seed of the noise.
        settings: noise and sampling.
        progress: optional ``progress(stage, done, total)``.
        engine: ``pinocchio``: torques of the exact trajectory from RNEA plus the data's friction
            (the paper's way); otherwise the arm tracks the trajectory on that plant
            (`motor_ident.papers.szabo.plant_data`) and the exact values are the plant's truth.
    """
    config = load_robot_config(ROBOT)
    regressor = config.build_regressor()
    robot = regressor.robot
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    theta_base = base.to_base(theta)
    n_samples = int(round(settings.periods * settings.rate / trajectory.base_frequency))
    if engine == "pinocchio":
        t = np.arange(n_samples) / settings.rate
        q, qd, qdd = trajectory.evaluate(t)
        data = robot.create_data()
        tau_rigid = np.array([inverse_dynamics(robot, data, q[k], qd[k], qdd[k]) for k in range(n_samples)])
        tau_model = tau_rigid + regressor.friction_torque(qd, theta)
        tau_exact = tau_rigid + data_friction(regressor, qd, theta, settings)
        tracking_rms = 0.0
    else:
        record = record_tracking(ROBOT, trajectory, n_samples / settings.rate, settings.rate, engine)
        q, qd, qdd, tau_exact, tracking_rms = record.q, record.qd, record.qdd, record.tau, record.tracking_rms
        theta = record.truth
        theta_base = base.to_base(theta)
        tau_model = tau_exact
    L = base.base_regressor(regressor.rows(q, qd, qdd))  # (N, n, r)
    model_error = float(np.max(np.abs(L @ theta_base - tau_model)))
    shape_error = np.sqrt(np.mean((tau_exact - L @ theta_base) ** 2, axis=0))
    sigma = np.asarray(settings.sigma, dtype=float)
    rng = np.random.default_rng(seed)
    ls_estimates, wls_estimates, wls_sigma = [], [], []
    for k in range(runs):
        tau = tau_exact + rng.standard_normal(tau_exact.shape) * sigma
        stats = RegressionStatistics.from_arrays(L, tau)
        ls = stats.ols()
        ls_estimates.append(ls.theta)
        fit = stats.wls(ls.sigma)  # sigma_j^2 = |e_j|^2 / (N - r / n) from the LS residuals (eq. 18-19)
        wls_estimates.append(fit.theta)
        wls_sigma.append(fit.sigma)
        if progress is not None:
            progress("Monte Carlo", k + 1, runs)
    A = RegressionStatistics.from_arrays(L, np.zeros(L.shape[:2])).A  # per joint L_j'L_j, (n, r, r)
    crb = np.linalg.inv(np.einsum("j,jik->ik", 1.0 / sigma**2, A))
    info_inv = np.linalg.inv(A.sum(axis=0))
    ls_covariance = info_inv @ np.einsum("j,jik->ik", sigma**2, A) @ info_inv
    return MonteCarlo(
        names=base.expressions(),
        exact=theta_base,
        ls=np.asarray(ls_estimates),
        wls=np.asarray(wls_estimates),
        wls_sigma=np.asarray(wls_sigma),
        crb=crb,
        ls_covariance=ls_covariance,
        model_error=model_error,
        shape_error=shape_error,
        n_base=base.n_base,
        tracking_rms=tracking_rms,
    )


def data_friction(regressor: Any, qd: FloatArray, theta: FloatArray, settings: SzaboSettings) -> FloatArray:
    """Friction torque (N, n) [N m] of the data: the config's values with the data's K_v and delta (eq. 7-9)."""
    out = np.zeros_like(qd)
    for j, (shape, cols) in enumerate(zip(regressor.friction, regressor.layout.friction, strict=True)):
        data_shape = replace(
            shape,
            stiction_gain=settings.data_stiction_gain or shape.stiction_gain,
            stribeck_gain=settings.data_stribeck_gain or shape.stribeck_gain,
        )
        out[:, j] = friction_regressor(qd[:, j], data_shape) @ np.asarray(theta)[cols]
    return out


def optimised_trajectory(
    *, starts: int, seed: int, settings: SzaboSettings = SzaboSettings(), progress: Any = None
) -> tuple[FourierTrajectory, dict[str, Any]]:
    """The excitation of the reproduction and its conditioning beside random baselines.

    Returns:
        The trajectory, and a dict with ``criterion_value``, ``condition_number``,
        ``baseline_condition_number`` (random, default amplitude, shrunk into the limits) and
        ``baseline_full_range_condition_number`` (random, scaled to the limits).
    """
    config = load_robot_config(ROBOT)
    regressor = config.build_regressor()
    problem = ExcitationProblem(
        regressor,
        structural_base_parameters(regressor),
        limits_from_robot(
            regressor.robot, acceleration=settings.acceleration_limit, position_margin=settings.position_margin
        ),
        ExcitationConfig(
            criterion=settings.criterion,
            harmonics=settings.harmonics,
            base_frequency=settings.base_frequency,
            samples=settings.samples,
            starts=starts,
            seed=seed,
            max_iterations=settings.max_iterations,
        ),
    )
    result = design_excitation(
        problem, progress=None if progress is None else (lambda k, _v: progress("excitation", k, starts))
    )
    rng = np.random.default_rng(seed + 1)
    baseline = problem.all_criteria(baseline_trajectory(problem, rng))
    full_range = problem.all_criteria(baseline_trajectory(problem, rng, fill_limits=True))
    return result.trajectory, {
        "criterion": settings.criterion.value,
        "criterion_value": result.criterion_value,
        "condition_number": result.condition_number,
        "baseline_condition_number": baseline["condition_number"],
        "baseline_full_range_condition_number": full_range["condition_number"],
    }


def variance_ratio_bounds(runs: int, n_parameters: int) -> tuple[float, float]:
    """Accepted range of (empirical variance / true variance) per parameter.

    [0.7, 1.4], widened where needed to the chi-square interval of a sample variance of ``runs``
    draws at family-wise level 1 % over ``n_parameters`` (Bonferroni).
    """
    dof = runs - 1
    alpha = 0.01 / n_parameters
    low = float(scipy.stats.chi2.ppf(alpha / 2.0, dof) / dof)
    high = float(scipy.stats.chi2.ppf(1.0 - alpha / 2.0, dof) / dof)
    return min(0.7, low), max(1.4, high)


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Run the reproduction of Szabó & Szádeczky-Kardoss's Table 2 (see the module docstring)."""
    settings = SzaboSettings()
    if options.trajectory is not None:
        trajectory = load_trajectory(options.trajectory).select(load_robot_config(ROBOT).joints)
        conditioning: dict[str, Any] = {"trajectory_file": str(options.trajectory)}
    else:
        trajectory, conditioning = optimised_trajectory(
            starts=options.starts, seed=options.seed, settings=settings, progress=options.progress
        )
    mc = monte_carlo(
        trajectory,
        runs=options.runs,
        seed=options.seed,
        settings=settings,
        progress=options.progress,
        engine=options.engine,
    )
    cases = sweep(trajectory, settings, options.seed)
    runs = options.runs
    ls_var, wls_var = mc.ls.var(axis=0, ddof=1), mc.wls.var(axis=0, ddof=1)
    crb = np.diag(mc.crb)
    ratio = wls_var / crb
    low, high = variance_ratio_bounds(runs, mc.n_base)
    friction = np.array([n.split(".")[-1] in ("tau_s", "tau_sc", "tau_v") for n in mc.names])
    z_ls = (mc.ls.mean(axis=0) - mc.exact) / np.sqrt(ls_var)
    z_wls = (mc.wls.mean(axis=0) - mc.exact) / np.sqrt(wls_var)
    inertial_worst = float(np.max(np.abs(np.concatenate([z_ls[~friction], z_wls[~friction]]))))
    inertial_bound = max(UNBIASED_SD, 3.0 / np.sqrt(runs))
    wls_not_worse = float(np.mean(wls_var <= ls_var))
    # on the exact plant the data come from the model being fitted (eq. 7-9 with the fitted shape, white noise):
    # unbiased LS and WLS then follow from Gauss-Markov, so a pass there is weak; say so in the rows
    weak = (
        "; weak on this plant: the data come from the fitted model itself, so unbiased estimates follow from "
        "Gauss-Markov"
        if options.engine == "pinocchio"
        else ""
    )
    sigma_hat = mc.wls_sigma.mean(axis=0)

    rows = table2_rows(mc, runs, weak=weak)
    rows += [
        row(
            "inertial base parameters: LS and WLS unbiased, largest |mean - exact| / sd",
            "paper",
            paper={"exact": "<= 0.16 sd on all 15 rows"},
            ours={"exact": inertial_worst},
            reproduced=inertial_worst <= inertial_bound,
            required=True,
            criterion=f"needs <= {inertial_bound:.2f} sd on our 15 (URDF-frame) inertial base parameters{weak}",
        ),
        *sweep_rows(cases),
        row(
            "identifiable (base) parameters",
            "paper",
            paper={"exact": N_IDENTIFIABLE},
            ours={"exact": int(mc.n_base)},
            reproduced=mc.n_base == N_IDENTIFIABLE,
            criterion="equal (structural: follows from the arm's kinematics and friction model, not from data)",
        ),
        row(
            "WLS variance <= LS variance, fraction of the parameters",
            "paper",
            paper={"exact": "24 of 24 (Table 2)"},
            ours={"exact": wls_not_worse},
            reproduced=bool(np.all(wls_var <= ls_var)),
            required=True,
            criterion=f"{int(np.sum(wls_var <= ls_var))} of {wls_var.size} (needs all, as Table 2; expected of WLS "
            "with per-joint variances that differ, Gauss-Markov)",
        ),
    ]
    for k, name in enumerate(mc.names):
        if not friction[k]:
            rows.append(
                row(
                    f"{name}: WLS variance / Cramer-Rao bound",
                    "self-check",
                    ours={
                        "exact": float(mc.exact[k]),
                        "ls_mean": float(mc.ls[:, k].mean()),
                        "ls_var": float(ls_var[k]),
                        "wls_mean": float(mc.wls[:, k].mean()),
                        "wls_var": float(wls_var[k]),
                        "crb_var": float(crb[k]),
                        "bias_sd": float(z_ls[k]),
                    },
                    reproduced=bool(low <= ratio[k] <= high),
                    criterion=f"{ratio[k]:.2f} (needs [{low:.2f}, {high:.2f}]; variances estimated, bound with the "
                    "true ones)",
                )
            )
    rows += [
        row(
            "noise std estimated from the LS residuals (eq. 18-19), mean over the runs [N m]",
            "recovery",
            paper={"exact": ", ".join(f"{x:g}" for x in settings.sigma)},
            ours={"exact": ", ".join(f"{x:.3f}" for x in sigma_hat)},
            reproduced=bool(np.all(np.abs(sigma_hat / np.asarray(settings.sigma) - 1.0) < 0.05))
            if options.engine == "pinocchio"
            else None,
            required=options.engine == "pinocchio",
            criterion="needs within 5 %" if options.engine == "pinocchio" else "reported: the plant adds model error",
        ),
        row(
            "regressor x exact parameters = RNEA + friction of the fitted shape, max error [N m]",
            "self-check",
            ours={"exact": mc.model_error},
            reproduced=mc.model_error < 1e-8 if options.engine == "pinocchio" else None,
            criterion="< 1e-8" if options.engine == "pinocchio" else "not applicable: the plant is not our model",
        ),
        row(
            "data torque minus regressor x exact parameters, RMS per joint [N m]",
            "recovery",
            ours={"exact": ", ".join(f"{x:.3f}" for x in mc.shape_error)},
            criterion="the model error the fit cannot absorb (friction shape; on a plant also delay, quantisation, "
            f"tracking {mc.tracking_rms:.4f} rad RMS)",
        ),
    ]
    if "baseline_full_range_condition_number" in conditioning:
        better = conditioning["condition_number"] < conditioning["baseline_full_range_condition_number"]
        rows.append(
            row(
                "optimised trajectory: cond, against a random one in the same limits",
                "self-check",
                ours={"exact": conditioning["condition_number"]},
                reproduced=bool(better),
                criterion=f"needs < {conditioning['baseline_full_range_condition_number']:.1f} (random, full range)",
            )
        )
    notes = [
        f"{runs} Monte Carlo runs, noise sigma = {list(settings.sigma)} N m, {mc.n_base} base "
        f"parameters, one {1 / settings.base_frequency:.0f} s period at {settings.rate:.0f} Hz "
        f"({int(round(settings.periods * settings.rate / settings.base_frequency))} samples); WLS weighs each joint by "
        "the noise variance estimated from the run's LS residuals (eq. 18-19).",
        "Data: "
        + (
            "RNEA plus the fitted friction model itself (the paper's Simulink data, as it describes them)."
            if settings.data_stiction_gain is None and settings.data_stribeck_gain is None
            else f"friction shape K_v = {settings.data_stiction_gain}, delta = {settings.data_stribeck_gain} "
            "(fitted: the config's)."
        )
        + " No setup acting on every joint gives Table 2's joint-2 bias (sweep row); see docs/reproductions.md.",
        "Inertial rows: the paper gives no masses or inertias and writes its base parameters in DH frames; ours are "
        "the URDF's own choice, in its joint frames: each of Table 2's inertial rows is 'not implemented', their "
        "common claim (unbiased) is checked on ours.",
        "Variances depend on trajectory length and sampling, which the paper does not state: compared in the "
        "criterion (ours / paper), not judged.",
    ]
    return Reproduction(
        paper="szabo",
        title=TITLE,
        rows=rows,
        engine=ENGINES[options.engine],
        columns=[
            ("exact", "ours.exact"),
            ("LS mean", "ours.ls_mean"),
            ("LS var", "ours.ls_var"),
            ("WLS mean", "ours.wls_mean"),
            ("WLS var", "ours.wls_var"),
            ("CRB var", "ours.crb_var"),
            ("bias [sd]", "ours.bias_sd"),
            ("paper exact", "paper.exact"),
            ("paper LS mean", "paper.ls_mean"),
            ("paper LS var", "paper.ls_var"),
            ("paper WLS mean", "paper.wls_mean"),
            ("paper WLS var", "paper.wls_var"),
            ("paper bias [sd]", "paper.bias_sd"),
        ],
        notes=notes,
        extra={
            "engine_requested": options.engine,
            "data_friction_shape": {
                "stiction_gain": settings.data_stiction_gain,
                "stribeck_gain": settings.data_stribeck_gain,
            },
            "runs": runs,
            "seed": options.seed,
            "sigma": list(settings.sigma),
            "wls_sigma_estimated": sigma_hat.tolist(),
            "n_base_parameters": int(mc.n_base),
            "variance_ratio_bounds": [low, high],
            "wls_variance_not_above_ls_fraction": wls_not_worse,
            "model_error_nm": mc.model_error,
            "excitation": conditioning,
            "pattern_sweep": [
                {
                    "family": c.family,
                    "setup": c.label,
                    "pattern": c.pattern,
                    "distance_sd": c.distance,
                    "bias_sd": dict(zip(mc.names, (float(x) for x in c.bias_sd), strict=True)),
                }
                for c in cases
            ],
            "trajectory": {
                "a": trajectory.a.tolist(),
                "b": trajectory.b.tolist(),
                "q0": trajectory.q0.tolist(),
                "base_frequency": trajectory.base_frequency,
            },
            "paper_table2": [{"expression": r[0], **dict(zip(PAPER_KEYS, r[1:]))} for r in PAPER_TABLE2],
        },
    )


def sweep(trajectory: FourierTrajectory, settings: SzaboSettings, seed: int) -> list[SweepCase]:
    """`motor_ident.papers.szabo.sweep.pattern_sweep` along ``trajectory`` sampled as the Monte Carlo's data."""
    config = load_robot_config(ROBOT)
    regressor = config.build_regressor()
    robot = regressor.robot
    n_samples = int(round(settings.periods * settings.rate / trajectory.base_frequency))
    q, qd, qdd = trajectory.evaluate(np.arange(n_samples) / settings.rate)
    data = robot.create_data()
    tau_rigid = np.array([inverse_dynamics(robot, data, q[k], qd[k], qdd[k]) for k in range(n_samples)])
    return pattern_sweep(
        regressor,
        structural_base_parameters(regressor),
        config.nominal_parameters(regressor),
        q,
        qd,
        qdd,
        tau_rigid,
        np.asarray(settings.sigma, dtype=float),
        seed,
    )
