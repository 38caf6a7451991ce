"""Kolathaya et al. 2016 (Kolathaya et al.): online identification with an R² gate, section VI, beside ours.

The online experiment of section VI on our simulated 4-DoF Valkyrie-like arm (`valkyrie_arm`
scenario, ROS-free closed loop of `motor_ident.scenario.closed_loop`, the identifier starting from a
nominal model 30 % too heavy and without friction), run for `DURATION_S` = 45 s so that the
paper's switch (Fig. 7(c), "around 35 seconds") falls inside the run. Three runs:

- the paper's buffer and the paper's gate ALONE: 50 samples refit at 3 Hz, the identified model
  used while the buffer is full and R² (eq. 104, uncentred) >= 0.95 on every joint; no hysteresis,
  no condition-number limit, no physical-consistency (SDP) check;
- the paper's buffer with our gate (hysteresis 0.02, condition number <= 1e4, SDP consistency);
- our settings at the sensor rate (500 rows at 100 Hz from 1 kHz states, refit at 10 Hz), our gate.

Rows (`motor_ident.papers.reproduction.row`):

- paper (REQUIRED): with the paper's gate alone, R² (eq. 104) at the end in [0.95, 1) on every
  joint ("right below unity", Fig. 6); the tracking-error bias lower over the last 10 s than over
  the 10 s before the switch (Fig. 7). Paper (reported): the switch time against "around 35 s"
  (within 25-45 s), since the paper does not say why its switch came 18 s after its buffer filled;
  the peak-to-peak error about unchanged (ratio in [0.5, 2]); the switch with our gate and our
  settings, beside the paper's.
- recovery: the identified base parameters at the end against the simulated plant's truth
  (relative error; reported).
- self-check: the buffer-full time (50 samples at 3 Hz: arithmetic) and Algorithm 1 (regressor
  by unit-parameter inverse dynamics) against pinocchio's regressor.

``--engine mujoco`` runs the arm on the independent MuJoCo plant (`motor_ident.sim.engines`), with
its unmodelled friction shape, command delay and encoder quantisation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from motor_ident.core.rigid_body.model import random_states
from motor_ident.core.rigid_body.regressor import unit_parameter_regressor
from motor_ident.io.robot_config import load_robot_config
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction, row
from motor_ident.scenario.closed_loop import ClosedLoop, build_closed_loop

TITLE = "Kolathaya et al. 2016, section VI: online identification with an R2 gate (Fig. 6-7)"
SCENARIO = "valkyrie_arm"
PAPER_WINDOW = 50  # samples in the buffer
PAPER_REFIT_HZ = 3.0  # refit (and sampling) rate of the buffer [Hz]
PAPER_R2_THRESHOLD = 0.95
PAPER_FILL_S = (16.0, 17.0)  # "about 16-17 seconds for the buffer to be filled"
PAPER_SWITCH_S = 35.0  # Fig. 7(c): the identified model takes over "around 35 seconds"
SWITCH_TOLERANCE_S = 10.0  # "around 35 s" read as 25-45 s
STATE_RATE_HZ = 1000.0  # the scenario's joint_states rate
DURATION_S = 45.0  # simulated time with the paper's buffer
OURS_DURATION_S = 8.0  # simulated time at the sensor rate
SPAN_S = 10.0  # error statistics over the 10 s before the switch and the last 10 s
# the paper's gate alone: R2 (eq. 104) and a full buffer, nothing else
PAPER_GATE = {"r2_hysteresis": 0.0, "max_condition_number": 1e300, "require_consistent": False}


def _run(
    overrides: dict[str, Any], duration: float, seed: int, engine: str, progress: Any, stage: str
) -> dict[str, Any]:
    """Run the closed loop; return the gate timeline, the final R² (both definitions), the errors and the recovery."""
    sim_overrides: dict[str, Any] = {"seed": seed}
    if engine != "pinocchio":
        sim_overrides["engine"] = engine
    loop: ClosedLoop = build_closed_loop(SCENARIO, {"identifier": overrides, "sim_robot": sim_overrides})
    dt = loop.sim.dt
    steps = int(round(duration / dt))
    n = len(loop.sim.joint_names)
    errors, q, qd = np.empty((steps, n)), np.empty((steps, n)), np.empty((steps, n))
    full_at = opened_at = None
    for k in range(steps):
        m, errors[k] = loop.step()
        q[k], qd[k] = m.q, m.qd
        if full_at is None and loop.identifier.window.full:
            full_at = m.t
        if opened_at is None and loop.identifier.gate_open:
            opened_at = m.t
        if progress is not None and (k + 1) % 1000 == 0:
            progress(stage, k + 1, steps)
    identifier = loop.identifier
    fit = identifier.fit
    truth = identifier.base.to_base(np.asarray(loop.sim.truth, dtype=float))
    recovery = torque_error = None
    if fit is not None:
        recovery = float(np.linalg.norm(fit.theta - truth) / np.linalg.norm(truth))
        torque_error = _torque_error(identifier.base, fit.theta, truth, q, qd, dt)
    return {
        "errors": errors,
        "dt": dt,
        "buffer_full_s": full_at,
        "gate_opened_s": opened_at,
        "gate_open_at_end": identifier.gate_open,
        "gate_reason_at_end": identifier.gate.reason,
        "r2_uncentred_end": None if fit is None else [float(x) for x in fit.r2_uncentred],
        "r2_centred_end": None if fit is None else [float(x) for x in fit.r2],
        "parameter_error_end": recovery,
        "torque_error_end": torque_error,
    }


def _torque_error(base: Any, theta: np.ndarray, truth: np.ndarray, q: np.ndarray, qd: np.ndarray, dt: float) -> float:
    """RMS of Y (theta - truth) over RMS of Y truth [-] on the last `SPAN_S` s of the run (every 10th state)."""
    regressor = load_robot_config(SCENARIO).build_regressor()
    keep = slice(max(0, q.shape[0] - int(SPAN_S / dt)), None)
    qdd = np.gradient(qd, dt, axis=0)
    Y = base.base_regressor(regressor.rows(q[keep][::10], qd[keep][::10], qdd[keep][::10]))
    reference = Y @ truth
    return float(np.sqrt(np.mean((Y @ theta - reference) ** 2)) / np.sqrt(np.mean(reference**2)))


def _error_stats(errors: np.ndarray, dt: float, start: float, stop: float) -> tuple[float, float]:
    """Norm of the per-joint mean error (bias) and mean peak-to-peak error over [start, stop) s [rad]."""
    window = errors[int(start / dt) : int(stop / dt)]
    return float(np.linalg.norm(window.mean(axis=0))), float(np.ptp(window, axis=0).mean())


def algorithm1_error(seed: int) -> float:
    """Largest |Algorithm 1 regressor - pinocchio's| over five random states of the arm."""
    regressor = load_robot_config(SCENARIO).build_regressor()
    rng = np.random.default_rng(seed)
    q, _, _ = random_states(regressor.robot, rng, 5)
    qd, qdd = rng.uniform(-2, 2, q.shape), rng.uniform(-5, 5, q.shape)
    n10 = 10 * regressor.robot.n
    return max(
        float(
            np.abs(
                unit_parameter_regressor(regressor.robot, q[k], qd[k], qdd[k])
                - regressor.rows(q[k], qd[k], qdd[k])[0, :, :n10]
            ).max()
        )
        for k in range(q.shape[0])
    )


def _fmt(x: float | None) -> str:
    return "never" if x is None else f"{x:.2f} s"


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Run the three settings and compare with the paper (module docstring)."""
    buffer = {
        "window_duration": PAPER_WINDOW / PAPER_REFIT_HZ,  # 50 samples at 3 Hz
        "sample_rate": PAPER_REFIT_HZ,
        "refit_period": 0.0,  # at every kept sample
        "r2_threshold": PAPER_R2_THRESHOLD,
        "r2_definition": "uncentred",
        "min_velocity": 0.0,  # the paper keeps every sample
    }
    seed, engine, progress = options.seed, options.engine, options.progress
    paper_run = _run({**buffer, **PAPER_GATE}, DURATION_S, seed, engine, progress, "paper's buffer, paper's gate")
    our_gate_run = _run(buffer, DURATION_S, seed, engine, progress, "paper's buffer, our gate")
    ours_run = _run({}, OURS_DURATION_S, seed, engine, progress, "sensor rate (500 rows at 100 Hz), our gate")

    opened = paper_run["gate_opened_s"]
    if opened is not None and opened >= SPAN_S:
        bias_before, ptp_before = _error_stats(paper_run["errors"], paper_run["dt"], opened - SPAN_S, opened)
    else:
        bias_before = ptp_before = float("nan")
    bias_after, ptp_after = _error_stats(paper_run["errors"], paper_run["dt"], DURATION_S - SPAN_S, DURATION_S)
    a1_error = algorithm1_error(seed)
    r2 = paper_run["r2_uncentred_end"] or []
    r2_min = min(r2) if r2 else None
    fill = paper_run["buffer_full_s"]
    switch_ok = opened is not None and abs(opened - PAPER_SWITCH_S) <= SWITCH_TOLERANCE_S
    ptp_ratio = ptp_after / ptp_before if ptp_before > 0.0 else float("nan")
    rows = [
        row(
            "paper's gate alone: R2 (eq. 104, uncentred) at the end, min over joints",
            "paper",
            paper="right below 1",
            ours=r2_min,
            reproduced=r2_min is not None and PAPER_R2_THRESHOLD <= r2_min < 1.0,
            required=True,
            criterion=f"needs [0.95, 1) on every joint: {', '.join(f'{x:.4f}' for x in r2)} (centred: "
            + ", ".join(f"{x:.4f}" for x in paper_run["r2_centred_end"] or [])
            + ")",
        ),
        row(
            "paper's gate alone: error bias before -> after the switch [rad]",
            "paper",
            paper="shifted toward 0",
            ours=f"{bias_before:.4f} -> {bias_after:.4f}",
            reproduced=bool(bias_after < bias_before),
            required=True,
            criterion=f"needs lower over the last {SPAN_S:g} s than over the {SPAN_S:g} s before the switch",
        ),
        row(
            "paper's gate alone: switch to the identified model [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=opened,
            reproduced=switch_ok,
            criterion=f"needs {PAPER_SWITCH_S - SWITCH_TOLERANCE_S:g}-{PAPER_SWITCH_S + SWITCH_TOLERANCE_S:g} s "
            f"(buffer full at {_fmt(fill)}; reported: the paper does not say why its switch came later)",
        ),
        row(
            "paper's gate alone: error peak-to-peak before -> after [rad]",
            "paper",
            paper="about unchanged",
            ours=f"{ptp_before:.4f} -> {ptp_after:.4f}",
            reproduced=bool(0.5 <= ptp_ratio <= 2.0),
            criterion=f"ratio after / before {ptp_ratio:.2f} (needs [0.5, 2])",
        ),
        row(
            "paper's buffer, our gate (hysteresis, cond <= 1e4, SDP): switch [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=our_gate_run["gate_opened_s"],
            criterion=f"for comparison; at the end: {our_gate_run['gate_reason_at_end']}",
        ),
        row(
            "sensor rate (500 rows at 100 Hz), our gate: switch [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=ours_run["gate_opened_s"],
            criterion=f"for comparison (a {OURS_DURATION_S:g} s run)",
        ),
    ]
    runs = [
        ("paper's gate alone", paper_run),
        ("paper's buffer, our gate", our_gate_run),
        ("sensor rate, our gate", ours_run),
    ]
    exact_run = None
    if engine != "pinocchio":  # the same experiment on the exact plant, for the degradation
        exact_run = _run({**buffer, **PAPER_GATE}, DURATION_S, seed, "pinocchio", progress, "paper's gate, exact plant")
        runs.append(("paper's gate alone, EXACT pinocchio plant", exact_run))
    for label, run in runs:
        rows += [
            row(
                f"{label}: model torque error at the end, |Y (theta - truth)| / |Y truth| over the last {SPAN_S:g} s",
                "recovery",
                paper=0.0,
                ours=run["torque_error_end"],
                criterion="reported (the paper has no such number)",
            ),
            row(
                f"{label}: base parameters at the end, |theta - truth| / |truth|",
                "recovery",
                paper=0.0,
                ours=run["parameter_error_end"],
                criterion="reported (poorly excited parameters dominate)",
            ),
        ]
    rows += [
        row(
            "buffer full at [s] (50 samples at 3 Hz)",
            "self-check",
            paper="16-17",
            ours=fill,
            reproduced=fill is not None and PAPER_FILL_S[0] <= fill <= 17.5,
            criterion="arithmetic of the buffer settings (50 / 3 Hz = 16.7 s), not a finding",
        ),
        row(
            "Algorithm 1 vs pinocchio regressor, max |difference|",
            "self-check",
            paper="equal",
            ours=a1_error,
            reproduced=a1_error < 1e-8,
            criterion="< 1e-8",
        ),
    ]
    engine_text = (
        "pinocchio rigid-body plant (motor_ident.sim.plant.SimulatedRobot): the estimator's own dynamics"
        if engine == "pinocchio"
        else "MuJoCo plant (motor_ident.sim.engines.make_plant): independent dynamics, unmodelled effects on"
    )
    return Reproduction(
        paper="kolathaya",
        title=TITLE,
        rows=rows,
        columns=[("paper (recovery: truth)", "paper.value"), ("ours", "ours.value")],
        engine=engine_text,
        notes=[
            "Simulated 4-DoF arm, nominal model 30 % too heavy and frictionless; the paper ran Valkyrie's leg and arm, "
            "so times and amplitudes compare in kind, not in value.",
            f"Error statistics over the {SPAN_S:g} s before the switch and the last {SPAN_S:g} s of a "
            f"{DURATION_S:g} s run.",
        ],
        extra={
            "engine_requested": engine,
            "paper_settings": {k: v for k, v in paper_run.items() if k != "errors"},
            "paper_buffer_our_gate": {k: v for k, v in our_gate_run.items() if k != "errors"},
            "sensor_rate": {k: v for k, v in ours_run.items() if k != "errors"},
            "exact_plant_paper_gate": None
            if exact_run is None
            else {k: v for k, v in exact_run.items() if k != "errors"},
            "bias_before_rad": bias_before,
            "bias_after_rad": bias_after,
            "ptp_before_rad": ptp_before,
            "ptp_after_rad": ptp_after,
            "algorithm1_max_error": a1_error,
        },
    )
