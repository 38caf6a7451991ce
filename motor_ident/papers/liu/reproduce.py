"""Liu et al. 2023 (Liu et al., Actuators 2023): three-loop double-encoder identification, Tables 2 and 4 beside ours.

What is reproduced, on the simulated ``elastic_arm6`` (`motor_ident.papers.liu.experiments`:
UR5-like arm with harmonic drives, motor and link encoders, direction-dependent link friction with
a low/high speed threshold, rotor damping and a load-dependent drive loss; the measured torque is
the motor torque with 0.02 N m noise, as on an arm without torque sensors):

- excitation (eq. 11-16, Table 2, `motor_ident.papers.liu.table2`): Fourier trajectories under
  Table 1's limits (speeds capped at loop 1's fastest pass, 1.1 rad/s: friction is not extrapolated)
  optimised by the plain condition number and by the weighted block condition
  number, compared on the same friction-free matrix; the block one trains loops 2-3, a random
  trajectory filling the same limits is held out;
- loop 1: forward and backward constant-speed passes of every joint at once at ten speeds,
  friction ``(tau_1 - tau_2) / 2`` at the same measured positions (eq. 8), the direction-dependent
  model of eq. 9-10 with its threshold lambda fitted (eq. 10);
- loops 2 and 3: the link dynamics by the full-covariance weighted least squares of eq. 21-22
  (`identify --method gls`, as the paper prescribes: "the joint noise is correlated"; `LiuSettings.link_method`)
  and GMR of the residual on the deformation, its rate and the joint velocity (eq. 23-33),
  iterated; loop 2 also by OLS, WLS (eq. 19-21) and GLS compared on loops 1-2;
- the RMSE between measured and predicted torque per joint on the held-out excitation, for plain
  WLS (rigid body + reflected inertia + friction, one least-squares problem) and for ours, beside
  Table 4; the whole of loops 1-3 runs twice: with the drive loss switched off (mu = 0) and on.

What differs from the paper: a simulated arm (the paper's robot and data are not available), so the
RMSE values themselves are not comparable, the relative reduction is. The paper states "more than
20 %"; its own Table 4 gives 9.9-24.6 % per joint (16.2, 18.5, 24.6, 9.9, 17.6, 18.7 %).

The drive loss ``mu |tau_j| tanh(v_m / v_s)`` is a function of exactly the GMR's inputs
(tau_j = K delta + D delta_rate, v_m = qd + delta_rate): a residual chosen to be learnable. So the
rows that decide are those with mu = 0, where what the rigid model misses is rotor damping and the
rotor inertia on the deformation's acceleration; the mu-on rows are reported and labelled.

The simulated friction is ASYMMETRIC (kc1 = kc (1 + 0.25) forward, kc2 = kc (1 - 0.25) backward):
eq. 8 sees only its odd part; the even part (kc1 - kc2) / 2 is fitted from tau_1 + tau_2 jointly
with loop 2's link model (`motor_ident.papers.liu.even_part`).

Rows (`motor_ident.papers.reproduction.row`). paper, KEY CLAIMS: held-out RMSE of ours at least
20 % below plain WLS GIVEN THE SAME directional friction model (loop 1's thresholds) on every joint,
drive loss off (Table 4 and the text's "more than 20 %"); Table 2 (the block criterion's condition
number below the plain one's on the same matrix: the ordering depends on the optimiser's budget,
see `motor_ident.papers.liu.table2`); the conclusion's better fit of the high/low-speed friction
model (not implemented: our arm's friction is that model). ours (our ablation, never a key claim):
GMR (loop 3) below loops 1-2 alone on every joint. Reported: the same with the drive loss on
(matched to the GMR), the Coulomb + viscous baseline, OLS / WLS / GLS in loop 2. recovery
(REQUIRED on the unloaded joints: shoulder pan, wrists): the even part within 50 % and the
friction threshold within 20 % of the simulated ones (the threshold of the last wrist is reported
only: its step at lambda, kv1 lambda = 0.018 N m, is at the 0.02 N m torque noise). Reported:
eq. 8's own even part (zero), the odd Coulomb level, the loaded joints (their drive loss mu |G(q)|
is outside the friction model).

The elastic arm is not a rigid-body robot: ``--engine`` does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.elastic.directional_friction import DirectionalFrictionFit, fit_directional_friction
from motor_ident.core.elastic.dual_encoder import deformation_rate
from motor_ident.core.elastic.residual import ResidualConfig
from motor_ident.core.elastic.three_loop import identify_three_loop
from motor_ident.core.estimation.identification import Method, identify
from motor_ident.core.estimation.least_squares import fit_metrics
from motor_ident.core.estimation.signals import savgol_derivatives
from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.io.robot_config import load_robot_config
from motor_ident.papers.liu.even_part import (
    AlignedPair,
    align_pairs,
    even_residual,
    fit_even_part,
    odd_samples,
    with_even_part,
)
from motor_ident.papers.liu.experiments import (
    LIU_FRICTION_THRESHOLD,
    ROBOT,
    ArmRecord,
    ArmSetup,
    arm_setup,
    bidirectional_sweeps,
    excitation_record,
    liu_friction_shape,
    liu_friction_truth,
)
from motor_ident.papers.liu.table2 import DESIGNS, Table2Settings, design_table2, table1_limits, table2_rows
from motor_ident.papers.liu.table4 import PAPER_RMSE_OURS, PAPER_RMSE_WLS, estimator_rows, table4_rows
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction, row

FloatArray = NDArray[np.float64]

TITLE = "Liu et al. 2023 (Actuators), Table 4: held-out torque RMSE, plain WLS vs three-loop + GMR"
ENGINE = "elastic 6-joint arm (motor_ident.sim.elastic.ElasticArm); elastic joints: --engine does not apply"
LINK_METHODS = ("ols", "wls", "gls")  # loop 2 estimators compared (eq. 17-22)


@dataclass(frozen=True)
class LiuSettings:
    """Experiment settings (defaults: about 15 s on one core).

    Attributes:
        speeds: speeds of the bidirectional passes [rad/s].
        pass_time, settle_time: kept and discarded (settling) time of each pass [s].
        q_center: centre of the passes and of the excitation [rad].
        velocity_amplitude: per-joint bound of the excitation velocity [rad/s].
        train_s, heldout_s: durations of the training and held-out excitations [s].
        derivative_window_s: Savitzky-Golay window for velocities, accelerations and the
            deformation rate [s].
        residual: loop 3 model (GMR); rbf: the RBF alternative.
        iterations: passes of loops 2 and 3.
        asymmetry: the simulated Coulomb levels are kc (1 +- asymmetry) forward / backward (kc1 != kc2).
        drive_loss: factor on the simulated drive loss mu |tau_j| tanh(v_m / v_s) (0: switched off).
        link_method: loop 2's estimator in the three-loop pipeline: ``gls`` (the paper's eq. 22, weights
            from the non-diagonal covariance of the joints' residuals, as its text prescribes since "the
            joint noise is correlated") or ``wls`` (eq. 19-21, per-joint variances).
    """

    speeds: tuple[float, ...] = (0.02, 0.04, 0.055, 0.07, 0.1, 0.2, 0.35, 0.55, 0.8, 1.1)
    q_center: tuple[float, ...] = (0.0, -1.2, 1.2, -0.8, 0.5, 0.0)
    velocity_amplitude: tuple[float, ...] = (0.8, 0.6, 0.6, 1.0, 1.0, 1.0)
    pass_time: float = 0.6
    settle_time: float = 0.25
    train_s: float = 16.0
    heldout_s: float = 9.0
    derivative_window_s: float = 0.06
    residual: ResidualConfig = ResidualConfig(n_components=8, max_samples=1500)
    rbf: ResidualConfig = ResidualConfig(kind="rbf", max_samples=1000)
    iterations: int = 3
    asymmetry: float = 0.25
    drive_loss: float = 1.0
    link_method: str = "gls"


@dataclass(frozen=True)
class _Signals:
    """A record's identification signals, each (N, n)."""

    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray
    delta: FloatArray
    delta_rate: FloatArray


def _signals(record: ArmRecord, window_s: float) -> _Signals:
    q, qd, qdd = savgol_derivatives(record.t, record.q, window_s=window_s)
    delta, rate = deformation_rate(record.t, record.motor_position - record.q, window_s=window_s)
    return _Signals(q, qd, qdd, record.effort, delta, rate)


def friction_loop(setup: ArmSetup, settings: LiuSettings) -> tuple[list[DirectionalFrictionFit], list[AlignedPair]]:
    """Loop 1: bidirectional passes -> (tau_1 - tau_2) / 2 -> Liu et al. 2023, eq. 9-10 per joint.

    Returns the fits (symmetric: eq. 8 sees only the odd part, `motor_ident.papers.liu.even_part`)
    and the aligned pass pairs, for the even part.
    """
    pairs = align_pairs(
        bidirectional_sweeps(
            setup,
            settings.speeds,
            q_center=np.array(settings.q_center),
            pass_time=settings.pass_time,
            settle_time=settings.settle_time,
        )
    )
    v_all, f_all = odd_samples(pairs)
    shape = liu_friction_shape()
    fits = [fit_directional_friction(v_all[:, j], f_all[:, j], shape=shape) for j in range(v_all.shape[1])]
    return fits, pairs


def _loops_1_2(
    setup: ArmSetup, friction: list[DirectionalFrictionFit], train: _Signals, method: Method | str = Method.WLS
) -> Any:
    return identify_three_loop(
        setup.robot,
        friction,
        train.q,
        train.qd,
        train.qdd,
        train.tau,
        delta=train.delta,
        delta_rate=train.delta_rate,
        residual=ResidualConfig(kind="none"),
        iterations=1,
        method=method,
    )


def run(
    settings: LiuSettings,
    seed: int = 0,
    progress: Any = None,
    variants: tuple[str, ...] = ("loops_1_2", "ours_gmr", "ours_rbf"),
    train_trajectory: FourierTrajectory | None = None,
    heldout_trajectory: FourierTrajectory | None = None,
    link_methods: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The whole experiment; returns per-joint held-out RMSE of the baselines and of each variant, and the friction.

    Baselines: ``wls`` (plain WLS, the config's Coulomb + viscous friction) and ``wls_directional``
    (plain WLS given Liu et al.'s directional friction with loop 1's thresholds). Variants:
    ``loops_1_2`` (friction and link WLS, no residual), ``ours_gmr``, ``ours_rbf``. The even part of
    the friction that loop 1 cannot see is fitted jointly with loop 2's link model
    (`motor_ident.papers.liu.even_part.fit_even_part`).

    ``train_trajectory``, ``heldout_trajectory``: the training and held-out excitations (random
    Fourier series when None). ``link_methods``: loop 2 estimators (``ols``, ``wls``, ``gls``)
    to compare on loops 1-2 alone (``rmse["loops_1_2_<method>"]``, and the noise covariance GLS
    estimated in ``gls_noise_covariance``).
    """
    setup = arm_setup(asymmetry=settings.asymmetry, drive_loss=settings.drive_loss)
    odd_friction, pairs = friction_loop(setup, settings)
    if progress is not None:
        progress("loop 1: bidirectional friction", 1, 4)
    records = []
    for k, duration in enumerate((settings.train_s, settings.heldout_s)):
        trajectory = random_fourier_trajectory(
            np.random.default_rng(seed + 1 + k),
            n=setup.robot.n,
            harmonics=5,
            base_frequency=0.1,
            velocity_amplitude=np.array(settings.velocity_amplitude),
            q0=np.array(settings.q_center),
        )
        given = train_trajectory if k == 0 else heldout_trajectory
        trajectory = trajectory if given is None else given
        records.append(
            _signals(excitation_record(setup, trajectory, duration, seed=seed + k), settings.derivative_window_s)
        )
    train, test = records
    even = fit_even_part(setup.robot, odd_friction, pairs, train.q, train.qd, train.qdd, train.tau)
    friction = with_even_part(odd_friction, even)
    lacking = even_residual(pairs, _loops_1_2(setup, friction, train, settings.link_method).rigid_torque)
    if progress is not None:
        progress("loop 1: bidirectional friction", 2, 4)

    config = load_robot_config(ROBOT)
    rmse = {}
    for name, regressor in (
        ("wls", config.build_regressor()),
        ("wls_directional", Regressor(setup.robot, [fit.shape for fit in friction], reflected_inertia=True)),
    ):
        plain = identify(regressor, train.q, train.qd, train.qdd, train.tau, method=Method.WLS)
        predicted = plain.base.base_regressor(regressor.rows(test.q, test.qd, test.qdd)) @ plain.fit.theta
        rmse[name] = fit_metrics(test.tau, predicted).rmse
    noise_covariance = None
    for method in link_methods:
        model = _loops_1_2(setup, friction, train, method)
        prediction = model.predict(test.q, test.qd, test.qdd, delta=test.delta, delta_rate=test.delta_rate)
        rmse[f"loops_1_2_{method}"] = fit_metrics(test.tau, prediction).rmse
        if method == "gls":
            noise_covariance = model.link.fit.noise_covariance
    residuals = {"loops_1_2": ResidualConfig(kind="none"), "ours_gmr": settings.residual, "ours_rbf": settings.rbf}
    for name in variants:
        residual = residuals[name]
        model = identify_three_loop(
            setup.robot,
            friction,
            train.q,
            train.qd,
            train.qdd,
            train.tau,
            delta=train.delta,
            delta_rate=train.delta_rate,
            residual=residual,
            iterations=1 if residual.kind == "none" else settings.iterations,
            method=settings.link_method,
        )
        prediction = model.predict(test.q, test.qd, test.qdd, delta=test.delta, delta_rate=test.delta_rate)
        rmse[name] = fit_metrics(test.tau, prediction).rmse
        if progress is not None:
            progress("loops 2-3: link WLS and residual", 3 if name != variants[-1] else 4, 4)
    return {
        "rmse": rmse,
        "friction": friction,
        "odd_friction": odd_friction,
        "friction_truth": liu_friction_truth(settings.asymmetry),
        "even_part": even.tolist(),
        "even_part_lacking": lacking.tolist(),
        "joints": config.joints,
        "samples": {"train": int(train.q.shape[0]), "heldout": int(test.q.shape[0])},
        "gls_noise_covariance": noise_covariance,
        "torque_noise_std": setup.torque_noise_std,
    }


UNLOADED = (0, 3, 4, 5)  # joints whose passes carry little gravity load (shoulder pan, wrists)
# joints whose threshold is checked: the last wrist's step at lambda, kv1 lambda = 0.3 x 0.06 = 0.018 N m,
# is at the torque noise (0.02 N m), so its lambda is reported only
THRESHOLD_JOINTS = (0, 3, 4)
EVEN_TOLERANCE = 0.5  # even part of the friction, unloaded joints
THRESHOLD_TOLERANCE = 0.20


def _friction_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    truth = result["friction_truth"]
    for j, (odd, fit) in enumerate(zip(result["odd_friction"], result["friction"], strict=True)):
        names = fit.shape.names
        kc_pos, kc_neg = (float(truth[j][names.index(k)]) for k in ("kc_pos", "kc_neg"))
        true_even = 0.5 * (kc_pos - kc_neg)
        odd_even = 0.5 * (odd.theta[names.index("kc_pos")] - odd.theta[names.index("kc_neg")])
        ours_even = 0.5 * (fit.theta[names.index("kc_pos")] - fit.theta[names.index("kc_neg")])
        error = abs(ours_even / true_even - 1.0) if true_even else float("inf")
        loaded = j not in UNLOADED
        rows += [
            row(
                f"joint {j + 1}: even part (kc1 - kc2) / 2 [N m], eq. 8 alone",
                "recovery",
                paper={"rmse_ours": true_even},
                ours={"rmse_ours": float(odd_even)},
                reproduced=bool(abs(odd_even / true_even - 1.0) < EVEN_TOLERANCE) if true_even else None,
                criterion="(tau_1 - tau_2) / 2 sees only the odd part: reported",
            ),
            row(
                f"joint {j + 1}: even part (kc1 - kc2) / 2 [N m], tau_1 + tau_2 with loop 2's link model",
                "recovery",
                paper={"rmse_ours": true_even},
                ours={"rmse_ours": float(ours_even)},
                reproduced=bool(error < EVEN_TOLERANCE),
                required=not loaded,
                criterion=f"|ours / sim - 1| = {100 * error:.0f} % (needs < {100 * EVEN_TOLERANCE:.0f} %)"
                + (" (reported: the drive loss mu |G| of a loaded joint is not in the model)" if loaded else ""),
            ),
            row(
                f"joint {j + 1}: odd Coulomb level (kc1 + kc2) / 2 [N m]",
                "recovery",
                paper={"rmse_ours": 0.5 * (kc_pos + kc_neg)},
                ours={"rmse_ours": 0.5 * float(odd.theta[names.index("kc_pos")] + odd.theta[names.index("kc_neg")])},
                criterion="reported (rotor damping and drive loss also land in the odd part)",
            ),
        ]
        threshold = fit.shape.direction_threshold
        t_error = abs(threshold / LIU_FRICTION_THRESHOLD - 1.0)
        rows.append(
            row(
                f"joint {j + 1}: friction threshold lambda [rad/s]",
                "recovery",
                paper={"rmse_ours": LIU_FRICTION_THRESHOLD},
                ours={"rmse_ours": threshold},
                reproduced=bool(t_error < THRESHOLD_TOLERANCE),
                required=j in THRESHOLD_JOINTS,
                criterion=f"|ours / sim - 1| = {100 * t_error:.0f} % (needs < {100 * THRESHOLD_TOLERANCE:.0f} %)"
                + (" (reported: gravity load along the passes)" if loaded else "")
                + (" (reported: its step at lambda, 0.018 N m, is at the noise)" if j == 5 else ""),
            )
        )
    return rows


def _table2_note(designs: dict[str, dict[str, Any]], settings: Table2Settings) -> str:
    c = {name: designs[name]["criteria"] for name in DESIGNS}
    return (
        f"friction-free cond of the cond-optimised ({c['cond_rigid']['condition_number_rigid']:.1f}), block-optimised "
        f"({c['block']['condition_number_rigid']:.1f}) and excite's all-column cond-optimised "
        f"({c['cond']['condition_number_rigid']:.1f}) trajectories; over all base columns (friction too) "
        f"{c['cond_rigid']['condition_number']:.1f}, {c['block']['condition_number']:.1f}, "
        f"{c['cond']['condition_number']:.1f}. {settings.starts} starts x {settings.max_iterations} iterations each. "
        "On one matrix cond minimises the very number Table 2 prints; block can beat it only where that search "
        "stops short, and excite's cond included the friction columns block drops (its 44.6 vs 30.4)."
    )


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Run the reproduction of Liu et al.'s Tables 2 and 4 and eq. 21-22 (see the module docstring)."""
    settings = LiuSettings()
    table2_settings = replace(Table2Settings(), starts=options.starts)
    if options.progress is not None:
        options.progress("excitation: cond, cond (friction-free), block (eq. 11-16)", 0, 1)
    designs = design_table2(
        load_robot_config(ROBOT).build_regressor(),
        table1_limits(settings.q_center, velocity_cap=max(settings.speeds)),
        table2_settings,
        seed=options.seed,
    )
    if options.progress is not None:
        options.progress("excitation: cond, cond (friction-free), block (eq. 11-16)", 1, 1)
    excitations = {"train_trajectory": designs["block"]["trajectory"], "heldout_trajectory": designs["heldout"]}
    result = run(settings, seed=options.seed, progress=options.progress, link_methods=LINK_METHODS, **excitations)
    no_loss = run(
        replace(settings, drive_loss=0.0), seed=options.seed, variants=("loops_1_2", "ours_gmr"), **excitations
    )
    if options.progress is not None:
        options.progress("drive loss off (mu = 0): loops 1-3 again", 1, 1)
    rmse = result["rmse"]
    joints = result["joints"]
    paper_reduction = [100.0 * (1.0 - o / w) for w, o in zip(PAPER_RMSE_WLS, PAPER_RMSE_OURS)]
    rows = (
        table4_rows(no_loss, paper_reduction, matched=False, required=True)
        + table2_rows(designs, table2_settings)
        + [
            row(
                "conclusion: the friction model distinguishing high and low speeds (eq. 9-10) fits the robot's "
                "friction better",
                "paper",
                paper="better fit",
                required=True,
                implemented=False,
                criterion="not implemented: our arm's friction IS eq. 9-10's family, so a better fit than Coulomb + "
                "viscous would follow from the simulator's inputs (a recovery, not the paper's finding on a robot)",
            )
        ]
        + table4_rows(result, paper_reduction, matched=True, required=False)
        + estimator_rows(result)
        + _friction_rows(result)
    )
    gains = [100.0 * (1.0 - g / w) for g, w in zip(no_loss["rmse"]["ours_gmr"], no_loss["rmse"]["wls_directional"])]
    notes = [
        "RMSE [N m] on a held-out excitation (a random Fourier trajectory filling the same limits), measured motor "
        "torque against "
        "prediction; 'ours' = loop 1 bidirectional friction (odd part by eq. 8, even part with loop 2) + loops 2-3 "
        f"(link model by {settings.link_method.upper()}{' (eq. 22)' if settings.link_method == 'gls' else ''} and "
        f"GMR of the residual on [delta, delta_rate, qd]) iterated {settings.iterations} times, "
        "trained on the block-criterion excitation (eq. 11-16, Table 1's limits with the speeds capped at loop 1's "
        f"fastest pass, {max(settings.speeds):g} rad/s). Simulated arm: compare reductions, "
        "not values. In the GMR-vs-loops rows the WLS column holds loops 1-2.",
        "The paper claims 'more than 20 %'; its Table 4 gives "
        + ", ".join(f"{r:.1f}" for r in paper_reduction)
        + f" % ({sum(r > 20.0 for r in paper_reduction)} joint(s) of six above 20 %). Ours with the drive loss off "
        "(mu = 0, the rows that decide): "
        + ", ".join(f"{g:.1f}" for g in gains)
        + " %. With the drive loss on, the residual is a function chosen of the GMR's inputs "
        "(|tau_j| = |K delta + D delta_rate|, v_m = qd + delta_rate): those rows are reported, labelled 'matched'.",
        f"Simulated friction: Coulomb kc (1 +- {settings.asymmetry}) forward / backward (kc1 != kc2). Eq. 8 sees "
        "only the odd part; the even part is fitted with tau_1 + tau_2 jointly with loop 2's link model.",
        "Eq. 21-22: loop 2 by OLS, WLS (per-joint variances) and GLS (`identify --method gls`: the n x n covariance "
        "of the joints' residuals at one sample, the same at every sample, from the OLS residuals). The simulated "
        "torque noise is independent per joint, so GLS can only gain through correlated model error.",
        "Table 2 (`motor_ident.papers.liu.table2`): " + _table2_note(designs, table2_settings),
        f"Training {result['samples']['train']} and held-out {result['samples']['heldout']} samples at 200 Hz.",
    ]
    return Reproduction(
        paper="liu",
        title=TITLE,
        rows=rows,
        columns=[
            ("paper WLS", "paper.rmse_wls"),
            ("paper ours (recovery: sim)", "paper.rmse_ours"),
            ("paper lower %", "paper.reduction_pct"),
            ("WLS", "ours.rmse_wls"),
            ("ours", "ours.rmse_ours"),
            ("lower %", "ours.reduction_pct"),
        ],
        engine=ENGINE,
        notes=notes,
        extra={
            "engine_requested": options.engine,
            "asymmetry": settings.asymmetry,
            "rmse_per_joint": {k: v.tolist() for k, v in rmse.items()},
            "rmse_per_joint_drive_loss_off": {k: v.tolist() for k, v in no_loss["rmse"].items()},
            "gls_noise_covariance": result["gls_noise_covariance"].tolist(),
            "table2": {
                name: {"criteria": d["criteria"], "cpu_s": d["cpu_s"], "evaluations": d["evaluations"]}
                for name, d in designs.items()
                if name in DESIGNS
            },
            "paper_reduction_pct_per_joint": paper_reduction,
            "even_part": result["even_part"],
            "even_part_lacking": result["even_part_lacking"],
            "friction": [
                {
                    "joint": joint,
                    "threshold": fit.shape.direction_threshold,
                    "names": list(fit.shape.names),
                    "values": fit.theta.tolist(),
                    "truth": truth.tolist(),
                    "rmse": fit.rmse,
                }
                for joint, fit, truth in zip(joints, result["friction"], result["friction_truth"], strict=True)
            ],
            "seed": options.seed,
        },
    )
