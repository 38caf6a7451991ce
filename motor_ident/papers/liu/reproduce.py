"""Liu et al. 2023 (Liu et al., Actuators 2023): three-loop double-encoder identification, Table 4 beside ours.

What is reproduced, on the simulated ``elastic_arm6`` (`motor_ident.papers.liu.experiments`:
UR5-like arm with harmonic drives, motor and link encoders, direction-dependent link friction with
a low/high speed threshold, rotor damping and a load-dependent drive loss; the measured torque is
the motor torque with 0.02 N m noise, as on an arm without torque sensors):

- loop 1: forward and backward constant-speed passes of every joint at once at ten speeds,
  friction ``(tau_1 - tau_2) / 2`` at the same measured positions (eq. 8), the direction-dependent
  model of eq. 9-10 with its threshold lambda fitted (eq. 10);
- loops 2 and 3 on a Fourier excitation (eq. 15): WLS of the link dynamics (eq. 19-21) and GMR of
  the residual on the deformation, its rate and the joint velocity (eq. 23-33), iterated;
- the RMSE between measured and predicted torque per joint on a HELD-OUT excitation (another
  trajectory), for plain WLS (rigid body + reflected inertia + Coulomb/viscous friction, one
  least-squares problem) and for ours, beside Table 4; also the RBF alternative and loops 1-2 alone.

What differs from the paper: a simulated arm (the paper's robot and data are not available), so the
RMSE values themselves are not comparable — the relative reduction is. The paper states "more than
20 %"; its own Table 4 gives 9.9-24.6 % per joint (16.2, 18.5, 24.6, 9.9, 17.6, 18.7 %). Our check
is the stronger one asked of motor_ident: at least 20 % on every joint.

Checks (``passed``): held-out RMSE of ours at least 20 % below plain WLS on every joint; RBF below
plain WLS on every joint; the fitted friction threshold of the joints without gravity load on
their passes (shoulder pan, wrists) within 20 % of the simulated one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.elastic.directional_friction import (
    DirectionalFrictionFit,
    align_backward_pass,
    bidirectional_friction,
    fit_directional_friction,
)
from motor_ident.core.elastic.dual_encoder import deformation_rate
from motor_ident.core.elastic.residual import ResidualConfig
from motor_ident.core.elastic.three_loop import identify_three_loop
from motor_ident.core.estimation.identification import Method, identify
from motor_ident.core.estimation.least_squares import fit_metrics
from motor_ident.core.estimation.signals import savgol_derivatives
from motor_ident.core.excitation.fourier import random_fourier_trajectory
from motor_ident.io.robot_config import load_robot_config
from motor_ident.papers.liu.experiments import (
    LIU_FRICTION_THRESHOLD,
    ROBOT,
    ArmRecord,
    ArmSetup,
    arm_setup,
    bidirectional_sweeps,
    excitation_record,
    liu_friction_shape,
)
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction

FloatArray = NDArray[np.float64]

TITLE = "Liu et al. 2023 (Actuators), Table 4: held-out torque RMSE, plain WLS vs three-loop + GMR"
PAPER_RMSE_WLS = (2.3376, 2.1278, 1.5395, 0.3361, 0.7101, 0.2578)  # Table 4 [N m]
PAPER_RMSE_OURS = (1.9594, 1.7345, 1.1609, 0.3027, 0.5852, 0.2096)  # Table 4 [N m]


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


def friction_loop(setup: ArmSetup, settings: LiuSettings) -> list[DirectionalFrictionFit]:
    """Loop 1: bidirectional passes -> (tau_1 - tau_2) / 2 -> Liu et al. 2023, eq. 9-10 per joint."""
    pairs = bidirectional_sweeps(
        setup,
        settings.speeds,
        q_center=np.array(settings.q_center),
        pass_time=settings.pass_time,
        settle_time=settings.settle_time,
    )
    velocity, friction = [], []
    for pair in pairs:
        keep, tau_backward = align_backward_pass(pair.forward.q, pair.backward.q, pair.backward.effort)
        tau_f, _ = bidirectional_friction(pair.forward.effort[keep], tau_backward)
        v = np.broadcast_to(pair.speed, tau_f.shape)
        velocity += [v, -v]  # friction is odd (eq. 4): the backward pass's sample at -v
        friction += [tau_f, -tau_f]
    v_all, f_all = np.concatenate(velocity), np.concatenate(friction)
    shape = liu_friction_shape()
    return [fit_directional_friction(v_all[:, j], f_all[:, j], shape=shape) for j in range(v_all.shape[1])]


def run(
    settings: LiuSettings,
    seed: int = 0,
    progress: Any = None,
    variants: tuple[str, ...] = ("loops_1_2", "ours_gmr", "ours_rbf"),
) -> dict[str, Any]:
    """The whole experiment; returns per-joint held-out RMSE of plain WLS and of each variant, and the friction.

    Variants: ``loops_1_2`` (friction and link WLS, no residual), ``ours_gmr``, ``ours_rbf``.
    """
    setup = arm_setup()
    friction = friction_loop(setup, settings)
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
        records.append(
            _signals(excitation_record(setup, trajectory, duration, seed=seed + k), settings.derivative_window_s)
        )
    train, test = records
    if progress is not None:
        progress("loop 1: bidirectional friction", 2, 4)

    config = load_robot_config(ROBOT)
    regressor = config.build_regressor()
    plain = identify(regressor, train.q, train.qd, train.qdd, train.tau, method=Method.WLS)
    predicted = plain.base.base_regressor(regressor.rows(test.q, test.qd, test.qdd)) @ plain.fit.theta
    rmse = {"wls": fit_metrics(test.tau, predicted).rmse}
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
        )
        prediction = model.predict(test.q, test.qd, test.qdd, delta=test.delta, delta_rate=test.delta_rate)
        rmse[name] = fit_metrics(test.tau, prediction).rmse
        if progress is not None:
            progress("loops 2-3: link WLS and residual", 3 if name != variants[-1] else 4, 4)
    return {
        "rmse": rmse,
        "friction": friction,
        "joints": config.joints,
        "samples": {"train": int(train.q.shape[0]), "heldout": int(test.q.shape[0])},
        "plain_wls_condition_number": float(plain.fit.condition_number),
    }


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Run the reproduction of Liu et al.'s Table 4 (see the module docstring)."""
    settings = LiuSettings()
    result = run(settings, seed=options.seed, progress=options.progress)
    rmse = result["rmse"]
    joints = result["joints"]
    reduction = {k: 100.0 * (1.0 - v / rmse["wls"]) for k, v in rmse.items() if k != "wls"}
    paper_reduction = [100.0 * (1.0 - o / w) for w, o in zip(PAPER_RMSE_WLS, PAPER_RMSE_OURS)]
    rows: list[dict[str, Any]] = []
    for j, joint in enumerate(joints):
        rows.append(
            {
                "name": f"joint {j + 1} ({joint})",
                "paper": {
                    "rmse_wls": PAPER_RMSE_WLS[j],
                    "rmse_ours": PAPER_RMSE_OURS[j],
                    "reduction_pct": paper_reduction[j],
                },
                "ours": {
                    "rmse_wls": float(rmse["wls"][j]),
                    "rmse_ours": float(rmse["ours_gmr"][j]),
                    "reduction_pct": float(reduction["ours_gmr"][j]),
                    "reduction_rbf_pct": float(reduction["ours_rbf"][j]),
                    "reduction_loops_1_2_pct": float(reduction["loops_1_2"][j]),
                },
            }
        )
    friction: list[DirectionalFrictionFit] = result["friction"]
    for j, fit in enumerate(friction):
        rows.append(
            {
                "name": f"joint {j + 1}: friction threshold lambda [rad/s] (sim {LIU_FRICTION_THRESHOLD})",
                "paper": None,
                "ours": {"rmse_wls": None, "rmse_ours": fit.shape.direction_threshold},
            }
        )
    worst = float(np.min(reduction["ours_gmr"]))
    unloaded = (0, 3, 4, 5)  # joints whose passes carry little gravity load
    threshold_error = max(abs(friction[j].shape.direction_threshold / LIU_FRICTION_THRESHOLD - 1.0) for j in unloaded)
    checks = {
        f"held-out RMSE of three-loop + GMR at least 20 % below plain WLS on every joint (worst {worst:.1f} %)": bool(
            worst >= 20.0
        ),
        f"RBF alternative below plain WLS on every joint (worst {np.min(reduction['ours_rbf']):.1f} %)": bool(
            np.all(reduction["ours_rbf"] > 0.0)
        ),
        f"friction threshold of shoulder pan and wrists within 20 % of the simulated {LIU_FRICTION_THRESHOLD} rad/s "
        f"(worst {100 * threshold_error:.0f} %)": bool(threshold_error < 0.20),
    }
    notes = [
        "RMSE [N m] on a held-out excitation (another random Fourier trajectory), measured motor torque against "
        "prediction; 'ours' = loop 1 bidirectional friction + loops 2-3 (link WLS and GMR of the residual on "
        f"[delta, delta_rate, qd]) iterated {settings.iterations} times. Simulated arm: compare reductions, "
        "not values.",
        "The paper claims 'more than 20 %'; its Table 4 gives "
        + ", ".join(f"{r:.1f}" for r in paper_reduction)
        + " %.",
        "Friction-threshold rows: the column 'ours (GMR)' holds the fitted lambda [rad/s]; it can only be placed "
        "between two pass speeds (0.055 and 0.07 rad/s around the simulated 0.06). On the shoulder lift and elbow "
        "the drive loss mu |G(q)| varies along passes whose length grows with the speed, which moves lambda: "
        "their threshold is listed, not checked.",
        f"Training {result['samples']['train']} and held-out {result['samples']['heldout']} samples at 200 Hz.",
    ]
    return Reproduction(
        paper="liu",
        title=TITLE,
        rows=rows,
        checks=checks,
        columns=[
            ("paper WLS", "paper.rmse_wls"),
            ("paper ours", "paper.rmse_ours"),
            ("paper lower %", "paper.reduction_pct"),
            ("WLS", "ours.rmse_wls"),
            ("ours (GMR)", "ours.rmse_ours"),
            ("lower %", "ours.reduction_pct"),
            ("RBF lower %", "ours.reduction_rbf_pct"),
            ("loops 1-2 lower %", "ours.reduction_loops_1_2_pct"),
        ],
        notes=notes,
        extra={
            "rmse_wls_per_joint": rmse["wls"].tolist(),
            "rmse_ours_per_joint": rmse["ours_gmr"].tolist(),
            "rmse_rbf_per_joint": rmse["ours_rbf"].tolist(),
            "rmse_loops_1_2_per_joint": rmse["loops_1_2"].tolist(),
            "reduction_pct_per_joint": reduction["ours_gmr"].tolist(),
            "reduction_rbf_pct_per_joint": reduction["ours_rbf"].tolist(),
            "paper_reduction_pct_per_joint": paper_reduction,
            "friction": [
                {
                    "joint": joint,
                    "threshold": fit.shape.direction_threshold,
                    "names": list(fit.shape.names),
                    "values": fit.theta.tolist(),
                    "rmse": fit.rmse,
                }
                for joint, fit in zip(joints, friction)
            ],
            "seed": options.seed,
        },
    )
