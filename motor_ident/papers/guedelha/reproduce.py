"""Guedelha et al. 2021 (Guedelha, Traversaro, Pucci): friction and motor parameters on iCub's coupled joints.

The shipped ``icub_right_leg`` and ``icub_torso`` configs simulated at 100 Hz with sensor noise
(`motor_ident.sim.actuator`, motor chains: not rigid-body robots, so ``--engine mujoco`` is refused)
and identified by Guedelha et al.'s two-phase procedure (`motor_ident.papers.guedelha.protocol`,
`motor_ident.core.actuators.actuator_ident`). The Stribeck velocity v_s is IDENTIFIED (outer
search on the phase-1 residual, `fit_stribeck_velocity`), not handed to the fit.

Rows (`motor_ident.papers.reproduction.row`; key claims decide the verdict, docs/reproductions.md):

- recovery (REQUIRED checks): Table 1 sigma_s+, sigma_s-, K_v of the six leg joints within 5 % (the
  simulator's truth IS Table 1, so these rows test our procedure, not the paper), the torso's
  friction within 5 % (motor by motor, T exact), leg and torso K_pwm* within 2 % of the simulator's
  (the paper publishes none), the identified v_s within 20 % of the simulated 1 deg/s. K_v is in
  the paper's N m s/deg and includes the back-EMF (the stator is closed at PWM = 0). Fig. 10's
  Stribeck knee values are simulator inputs too: recovery rows, reported (Fig. 10's K_v ~ 0.31
  N m s/deg disagrees with Table 1's 0.69; we simulate Table 1).
- paper, KEY CLAIMS: Fig. 10 (knee) - the Coulomb + viscous K_c above the Stribeck K_c (paper 1.0
  vs 0.85 N m); the Stribeck residual near rest below half the Coulomb + viscous one on every leg
  joint (Coulomb + viscous "misses the static friction"). Both are claims about the model choice,
  so they are tested on the leg with friction of ANOTHER law (`other_law_plant`: Szabó &
  Szádeczky-Kardoss 2021's arctan law with the same static and Coulomb levels); on the Table 1
  plant, whose friction is the Stribeck model fitted, they follow from the simulator's input and
  are recovery rows. The abstract's "improved accuracy with respect to classical closed loop
  methods" is not implemented (no closed-loop identification to compare). Sec. 3.4.2's claim that identifying
  motor by motor (the other motors braked) is less sensitive to bad coupling ratios than joint by
  joint. That last one is NOT reproduced: the paper's method maps the joint torques to the moving
  motor with the NOMINAL column of T; with every ratio 5 % off its worst K_pwm* error would have to
  be below 0.8 x the joint-wise one, and in our simulated torso it is not (about 5.1 % for both: a
  wrong column scales the mapped torque by the same ratio error either way). Our extension (the
  moving motor's column measured from the motion itself) removes the sensitivity and is an ours
  row beside it.
- paper (reported): Fig. 10's Coulomb + viscous knee values; PWM feedforward torque tracking with
  and without friction compensation (the paper's controller did not compensate friction yet,
  sec. 4.1.2).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape
from motor_ident.io.robot_config import load_robot_config
from motor_ident.papers.guedelha.coupled import (
    feedforward_tracking,
    identify_joint_wise,
    identify_motor_wise,
    perturbed_coupling,
    run_group_experiments,
    worst_errors,
)
from motor_ident.papers.guedelha.protocol import ProtocolConfig, identify_uncoupled
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction, row
from motor_ident.sim.actuator import ActuatorPlant, ActuatorSimConfig, plant_from_config

TITLE = "Guedelha, Traversaro & Pucci 2021: iCub friction and motor parameters on coupled joints"
DEG = np.pi / 180.0  # [rad/deg]; K_v [N m s/deg] = K_v [N m s/rad] * DEG

# Guedelha et al. 2021, Table 1: joint -> (sigma_s+ [N m], sigma_s- [N m], K_v [N m s/deg]).
PAPER_TABLE1: dict[str, tuple[float, float, float]] = {
    "r_hip_pitch": (1.31, 2.24, 1.16),
    "r_hip_roll": (2.49, 0.96, 0.50),
    "r_hip_yaw": (1.30, 2.58, 1.22),
    "r_knee": (1.27, 1.95, 0.69),
    "r_ankle_pitch": (2.90, 0.71, 1.32),
    "r_ankle_roll": (2.05, 1.29, 1.20),
}
# Guedelha et al. 2021, Fig. 10 (knee): Coulomb + viscous K_c, K_v; Stribeck sigma_s+, sigma_s-, K_c, K_v.
PAPER_FIG10 = {"cv_fc": 1.0, "cv_kv": 0.30, "st_sp": 1.27, "st_sn": 1.95, "st_fc": 0.85, "st_kv": 0.31}

# Experiment lengths [s] (module constants so a test can shorten them).
FRICTION_DURATION_S = 30.0
PWM_DURATION_S = 15.0
TRACKING_DURATION_S = 20.0
COUPLING_ERROR = 0.05
FRICTION_TOLERANCE = 0.05  # Table 1 recovery
STRIBECK_VELOCITY_TOLERANCE = 0.20  # identified v_s against the simulated one
STRIBECK_VELOCITY_RANGE: tuple[float, float] | None = (0.002, 0.5)  # [rad/s]; None: the simulator's v_s
ROBUSTNESS_RATIO = 0.8  # "less sensitive": motor-wise error below this fraction of joint-wise
OTHER_LAW_STICTION_GAIN = 300.0  # K_v of the arctan law the model-choice claims are tested on [s/rad]
ENGINE = "iCub motor chains (motor_ident.sim.actuator); not a rigid-body robot: --engine does not apply"


def _recovery(name: str, truth: float, ours: float, tolerance: float, *, required: bool = True) -> dict[str, Any]:
    error = abs(ours / truth - 1.0)
    return row(
        name,
        "recovery",
        paper=truth,
        ours=float(ours),
        reproduced=bool(error < tolerance),
        required=required,
        criterion=f"|ours / truth - 1| = {100 * error:.1f} % (needs < {100 * tolerance:g} %)",
    )


def other_law_plant(plant: ActuatorPlant, stribeck_velocity: float) -> ActuatorPlant:
    """The same chains with friction of another law than the Stribeck model being fitted.

    Szabó & Szádeczky-Kardoss 2021's arctan law, tau_s (2/pi) atan(K_v v) + tau_sc (2/pi) atan(delta v)
    + tau_v v: static level (sigma_s+ + sigma_s-) / 2 of the chain, decaying to its Coulomb level
    algebraically (1 / v) instead of exponentially, delta = 1 / v_s, `OTHER_LAW_STICTION_GAIN`.
    """
    law = FrictionShape(
        kind=FrictionKind.ARCTAN, stiction_gain=OTHER_LAW_STICTION_GAIN, stribeck_gain=1.0 / stribeck_velocity
    )
    chains = []
    for chain in plant.chains:
        names = chain.friction.names
        fc, fv = chain.friction_values[names.index("fc")], chain.friction_values[names.index("fv")]
        static = 0.5 * sum(chain.breakaway)
        chains.append(replace(chain, friction=law, friction_values=np.array([static, fc - static, fv])))
    return replace(plant, chains=tuple(chains))


def model_choice_rows(results: list[Any], plant: ActuatorPlant, *, other_law: bool) -> list[dict[str, Any]]:
    """Fig. 10's K_c ordering and the near-rest residuals (Stribeck vs Coulomb + viscous) of the leg.

    ``other_law``: the data's friction is not the Stribeck model (the paper's claims about the model
    choice, key claims); else it is (recovery rows: the pass follows from the simulator's input).
    """
    knee = results[plant.transmission.motors.index("r_knee")]
    cv, st = knee.coulomb_viscous, knee.stribeck
    ratios = [r.low_velocity_rmse["stribeck"] / r.low_velocity_rmse["coulomb_viscous"] for r in results]
    data = "data friction of another law (arctan)" if other_law else "data friction IS the Stribeck model fitted"
    kind, note = ("paper", "") if other_law else ("recovery", "; reported: follows from the simulator's input")
    return [
        row(
            f"Fig. 10 knee: Coulomb+viscous K_c above the Stribeck K_c [N m], {data}",
            kind,
            paper=f"{PAPER_FIG10['cv_fc']} > {PAPER_FIG10['st_fc']}",
            ours=f"{cv.value('fc'):.3f} > {st.value('fc'):.3f}",
            reproduced=bool(cv.value("fc") > st.value("fc")),
            required=other_law,
            criterion="the ordering" + note,
        ),
        row(
            f"near rest (|v| < 3 deg/s): Stribeck residual / Coulomb+viscous residual, worst leg joint, {data}",
            kind,
            paper="C+V misses the static friction",
            ours=max(ratios),
            reproduced=bool(max(ratios) < 0.5),
            required=other_law,
            criterion="needs < 0.5 on every leg joint: " + ", ".join(f"{x:.2f}" for x in ratios) + note,
        ),
    ]


def _leg_rows(leg_results: list[Any], leg_plant: Any, true_vs: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for result in leg_results:
        sp, sn, kv = PAPER_TABLE1[result.motor]
        st = result.stribeck
        rows += [
            _recovery(f"Table 1 {result.motor} sigma_s+ [N m]", sp, st.value("static_pos"), FRICTION_TOLERANCE),
            _recovery(f"Table 1 {result.motor} sigma_s- [N m]", sn, st.value("static_neg"), FRICTION_TOLERANCE),
            _recovery(f"Table 1 {result.motor} K_v [N m s/deg]", kv, st.value("fv") * DEG, FRICTION_TOLERANCE),
            _recovery(
                f"{result.motor} Stribeck velocity v_s [deg/s], identified",
                true_vs / DEG,
                st.shape.stribeck_velocity / DEG,
                STRIBECK_VELOCITY_TOLERANCE,
            ),
        ]
    for result, chain in zip(leg_results, leg_plant.chains, strict=True):
        rows.append(_recovery(f"leg {result.motor} K_pwm* [N m]", chain.motor.k_pwm, result.motor_fit.k_pwm, 0.02))
    knee = leg_results[leg_plant.transmission.motors.index("r_knee")]
    cv, st = knee.coulomb_viscous, knee.stribeck
    rows += model_choice_rows(leg_results, leg_plant, other_law=False)
    for name, key, ours in (
        ("Coulomb+viscous K_c [N m]", "cv_fc", cv.value("fc")),
        ("Coulomb+viscous K_v [N m s/deg]", "cv_kv", cv.value("fv") * DEG),
    ):
        rows.append(
            row(
                f"Fig. 10 knee {name}",
                "paper",
                paper=PAPER_FIG10[key],
                ours=float(ours),
                criterion="reported: a fit of the simpler model to data simulated with Table 1's friction"
                + (
                    " (Fig. 10's Stribeck K_v disagrees with Table 1's 0.69; we simulate Table 1)"
                    if key == "cv_kv"
                    else ""
                ),
            )
        )
    # Fig. 10's Stribeck values are what the simulator runs (Table 1's sigma_s+-, Fig. 10's K_c; K_v from
    # Table 1): recovering them tests our procedure, not the paper
    knee_chain = leg_plant.chains[leg_plant.transmission.motors.index("r_knee")]
    knee_fc, knee_fv, knee_sp, knee_sn = knee_chain.friction_values
    for name, key, truth, ours in (
        ("sigma_s+ [N m]", "st_sp", knee_sp, st.value("static_pos")),
        ("sigma_s- [N m]", "st_sn", knee_sn, st.value("static_neg")),
        ("K_c [N m]", "st_fc", knee_fc, st.value("fc")),
        ("K_v [N m s/deg]", "st_kv", (knee_fv + knee_chain.motor.back_emf) * DEG, st.value("fv") * DEG),
    ):
        error = abs(ours / truth - 1.0)
        rows.append(
            row(
                f"Fig. 10 knee Stribeck {name}: simulator input recovered",
                "recovery",
                paper=float(truth),
                ours=float(ours),
                criterion=f"reported: |ours / truth - 1| = {100 * error:.1f} % (Fig. 10 prints {PAPER_FIG10[key]})",
            )
        )
    return rows


def _torso_rows(worst: dict[str, tuple[float, float]], off: str) -> list[dict[str, Any]]:
    exact = worst["motor-wise, T exact"]
    measured = worst[f"motor-wise, column measured, {off}"]
    nominal = worst[f"motor-wise, nominal column, {off}"]
    joint_off = worst[f"joint-wise, {off}"]
    rows = [
        row(
            f"sec. 3.4.2, {off}: motor by motor (paper's method, nominal column) vs joint by joint, worst K_pwm* "
            "error [%]",
            "paper",
            paper="motor by motor less sensitive",
            ours=f"{nominal[1]:.2f} vs {joint_off[1]:.2f}",
            reproduced=bool(nominal[1] < ROBUSTNESS_RATIO * joint_off[1]),
            required=True,  # a key claim of the paper, not reproduced in our simulation (module docstring)
            criterion=f"needs motor-wise < {ROBUSTNESS_RATIO} x joint-wise (friction: {nominal[0]:.2f} vs "
            f"{joint_off[0]:.2f} %)",
        ),
        row(
            "torso motor-wise, T exact: worst friction / K_pwm* error [%]",
            "recovery",
            paper=0.0,
            ours=f"{exact[0]:.2f} / {exact[1]:.2f}",
            reproduced=bool(exact[0] < 100 * FRICTION_TOLERANCE and exact[1] < 2.0),
            required=True,
            criterion=f"needs < {100 * FRICTION_TOLERANCE:g} % / < 2 %",
        ),
        row(
            f"torso motor-wise, column measured (our extension), {off}: worst friction / K_pwm* error [%]",
            "ours",
            paper=0.0,
            ours=f"{measured[0]:.2f} / {measured[1]:.2f}",
            reproduced=bool(measured[0] < 100 * FRICTION_TOLERANCE and measured[1] < 2.0),
            criterion=f"needs < {100 * FRICTION_TOLERANCE:g} % / < 2 % (our extension, not the paper's method)",
        ),
    ]
    for label, (friction, gain) in worst.items():
        if label.startswith("joint-wise") or "nominal" in label:
            rows.append(
                row(
                    f"torso {label}: worst friction / K_pwm* error [%]",
                    "recovery",
                    paper=0.0,
                    ours=f"{friction:.2f} / {gain:.2f}",
                    criterion="reported",
                )
            )
    return rows


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Identify the simulated leg and torso as Guedelha et al. 2021 does and compare with the paper and the truth."""
    progress = options.progress or (lambda stage, done, total: None)
    protocol = ProtocolConfig(
        friction_duration=FRICTION_DURATION_S,
        pwm_duration=PWM_DURATION_S,
        stribeck_velocity_range=STRIBECK_VELOCITY_RANGE,
        sim=ActuatorSimConfig(seed=options.seed),
    )
    stages = 4

    # ---- right leg: Table 1 and Fig. 10 --------------------------------------------------------------
    progress("Guedelha et al. 2021", 0, stages)
    leg = load_robot_config("icub_right_leg")
    leg_plant = plant_from_config(leg)
    true_shape = leg.joint_parameters[0].friction
    leg_results = identify_uncoupled(leg_plant, true_shape, protocol)
    rows = _leg_rows(leg_results, leg_plant, true_shape.stribeck_velocity)
    leg_friction, leg_gain = (100.0 * e for e in worst_errors(leg_results, leg_plant))  # [%]
    other_results = identify_uncoupled(other_law_plant(leg_plant, true_shape.stribeck_velocity), true_shape, protocol)
    rows += model_choice_rows(other_results, leg_plant, other_law=True)
    rows.append(
        row(
            "abstract: improved accuracy with respect to classical closed-loop methods on coupled joints",
            "paper",
            paper="more accurate than closed loop",
            required=True,
            implemented=False,
            criterion="not implemented: motor_ident has no closed-loop (current-controlled) identification of the "
            "coupled joints to run beside the open-loop method; the joint-by-joint comparison below is sec. 3.4.2's",
        )
    )

    # ---- torso: motor-wise vs joint-wise, exact and wrong coupling -----------------------------------
    progress("Guedelha et al. 2021", 1, stages)
    torso = load_robot_config("icub_torso")
    torso_plant = plant_from_config(torso)
    group = torso_plant.transmission.groups[0]
    shape = torso.motor_drives()[0].friction
    motor_records = run_group_experiments(torso_plant, group.name, mode="motor", protocol=protocol)
    joint_records = run_group_experiments(torso_plant, group.name, mode="joint", protocol=protocol)
    progress("Guedelha et al. 2021", 2, stages)
    wrong = perturbed_coupling(group, ratio_error=COUPLING_ERROR)
    off = f"T {100 * COUPLING_ERROR:g} % off"
    variants = {
        "motor-wise, T exact": identify_motor_wise(motor_records, shape, protocol, coupling=group.T),
        f"motor-wise, column measured, {off}": identify_motor_wise(motor_records, shape, protocol),
        f"motor-wise, nominal column, {off}": identify_motor_wise(motor_records, shape, protocol, coupling=wrong),
        "joint-wise, T exact": identify_joint_wise(joint_records, shape, protocol, coupling=group.T),
        f"joint-wise, {off}": identify_joint_wise(joint_records, shape, protocol, coupling=wrong),
    }
    worst: dict[str, tuple[float, float]] = {}
    for label, results in variants.items():
        friction, gain = worst_errors(results, torso_plant)
        worst[label] = (100.0 * friction, 100.0 * gain)  # [%]
    for result, chain in zip(variants["motor-wise, T exact"], torso_plant.chains, strict=True):
        rows.append(
            _recovery(
                f"torso {result.motor} K_pwm* [N m], motor-wise, T exact",
                chain.motor.k_pwm,
                result.motor_fit.k_pwm,
                0.02,
            )
        )
    rows += _torso_rows(worst, off)

    # ---- PWM feedforward on the leg ------------------------------------------------------------------
    progress("Guedelha et al. 2021", 3, stages)
    runs = feedforward_tracking(
        leg_plant, leg_results, replace(protocol.sim, seed=options.seed + 5), TRACKING_DURATION_S
    )
    tracking = {compensate: rmse for compensate, (rmse, _) in runs.items()}
    rows.append(
        row(
            "leg torque tracking RMSE [N m], PWM feedforward without -> with friction compensation",
            "paper",
            paper="(no number: friction not compensated yet, sec. 4.1.2)",
            ours=f"{tracking[False]:.3f} -> {tracking[True]:.3f}",
            criterion="reported",
        )
    )
    progress("Guedelha et al. 2021", 4, stages)

    return Reproduction(
        paper="guedelha",
        title=TITLE,
        rows=rows,
        columns=[("paper (recovery: sim truth)", "paper.value"), ("ours", "ours.value")],
        engine=ENGINE,
        notes=[
            "Simulated iCub right leg (Table 1 friction) and torso (3 motors through a differential), 100 Hz, "
            "torque noise 0.05 N m, encoder quantisation, velocity and acceleration noise.",
            "Table 1 rows are recovery rows: the simulator's truth is Table 1.",
            "The Stribeck velocity is "
            + (
                "given (the simulator's)"
                if STRIBECK_VELOCITY_RANGE is None
                else f"identified in [{STRIBECK_VELOCITY_RANGE[0]:g}, {STRIBECK_VELOCITY_RANGE[1]:g}] rad/s, not given"
            )
            + ".",
        ],
        extra={
            "engine_requested": options.engine,
            "leg_worst_friction_error_pct": leg_friction,
            "leg_worst_kpwm_error_pct": leg_gain,
            "stribeck_velocity_deg_s": {r.motor: r.stribeck.shape.stribeck_velocity / DEG for r in leg_results},
            "torso_worst_errors_pct": {k: {"friction": v[0], "k_pwm": v[1]} for k, v in worst.items()},
            "tracking_rmse_without_compensation": tracking[False],
            "tracking_rmse_with_compensation": tracking[True],
        },
    )
