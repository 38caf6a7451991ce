"""Kolathaya et al. 2016 (Kolathaya et al.): online identification with an R² gate, section VI, beside ours.

The online experiment of section VI on our simulated 4-DoF Valkyrie-like arm (`valkyrie_arm`
scenario, ROS-free closed loop of `motor_ident.scenario.closed_loop`), with the paper's buffer (50
samples refit at 3 Hz), run for `DURATION_S` = 45 s so that the paper's switch (Fig. 7(c), "around
35 seconds") falls inside the run. The paper keeps two models apart (sec. VI): the nominal model,
"estimated from engineering software", "known with reasonable accuracy" (the controller's fallback:
here every body 10 % heavy, with the robot's friction), and the initial guess "purposefully chosen
to be incorrect" (the prior Theta_0 of eq. 105 the fits are pulled toward: every body 30 % heavy).

The paper's gate is R² >= 0.95 with a full buffer. Its R² (eq. 104) is in-sample and uncentred: 34
base parameters fitted to 50 x 4 equations leave it above 0.95 the moment the buffer is full, so that
gate switches when the buffer fills (16.65 s) whatever the data. The loop here runs the paper's
threshold and buffer on a HELD-OUT R² (`r2_definition: predicted`, `motor_ident.core.estimation.online.HeldOutR2`),
so the switch depends on how well the fits predict new samples. Beside it, fed the same fits without
driving the loop: the published in-sample uncentred gate, an in-sample centred one, and our gate
(held-out R², hysteresis, condition number, physical consistency). A second run uses the product's
defaults at the sensor rate (500 rows at 100 Hz).

Rows (`motor_ident.papers.reproduction.row`, key claims in docs/reproductions.md):

- paper, KEY CLAIMS: the held-out R² at the end in [0.95, 1) on every joint ("right below unity",
  Fig. 7(b)); the switch within 25-45 s; the tracking-error bias "clearly shifted closer to zero"
  (over the last 10 s at most half of the 10 s before the switch); the peak-to-peak error
  "essentially unchanged" (ratio in [0.5, 2]) (Fig. 7(c)). The last two compare the identified
  model with the nominal one: "not applicable" unless the identified model drives the loop over the
  whole last 10 s. Not implemented (counted against the verdict): the O(n^2) cost of Algorithm 1
  (abstract, sec. IV, conclusion) and the offline identifications of sec. V (double pendulum, leg).
- paper, reported: the first opening of the three gates beside the loop's, and at the sensor rate.
- recovery: the identified base parameters and model torque at the end against the plant's truth.
- self-check: the buffer-full time (50 samples at 3 Hz: arithmetic) and Algorithm 1 (regressor by
  unit-parameter inverse dynamics) against pinocchio's regressor.

``--engine mujoco`` runs the arm on the independent MuJoCo plant (`motor_ident.sim.engines`), with
its unmodelled friction shape, command delay and encoder quantisation, and the same experiment on
the exact plant beside it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from motor_ident.core.estimation.gate import GateConfig, ModelGate
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
# the nominal model (the fallback), "known with reasonable accuracy" (sec. VI): every body 10 % heavy, with the
# robot's friction, as an engineering model has it (the scenario's demo nominal is 30 % heavy and frictionless)
NOMINAL_INERTIA_SCALE = 1.1
NOMINAL_FRICTION_SCALE = 1.0
# the initial guess Theta_0 of eq. 105 (the prior the fits are pulled toward), "purposefully chosen to be
# incorrect": every body 30 % heavy
INITIAL_GUESS_INERTIA_SCALE = 1.3
BIAS_DROP = 0.5  # "bias clearly shifted closer to zero": the bias after at most this fraction of the bias before
PTP_RANGE = (0.5, 2.0)  # "peak-to-peak essentially unchanged": ratio after / before within this range
# the paper's gate alone: R2 >= 0.95 and a full buffer, nothing else
PAPER_GATE = {
    "gate_criterion": "r2",
    "r2_hysteresis": 0.0,
    "max_condition_number": 1e300,
    "require_consistent": False,
}
# gates fed the same fits beside the loop's (they do not drive it)
PUBLISHED = "published: in-sample uncentred R2 (eq. 104)"
CENTRED = "in-sample centred R2"
OURS = "ours: held-out R2, hysteresis, condition number, consistency"
_PAPER_GATE_CONFIG = GateConfig(
    r2_threshold=PAPER_R2_THRESHOLD, r2_hysteresis=0.0, max_condition_number=1e300, require_consistent=False
)
SHADOWS = {
    PUBLISHED: replace(_PAPER_GATE_CONFIG, r2_definition="uncentred"),
    CENTRED: replace(_PAPER_GATE_CONFIG, r2_definition="centred"),
    OURS: GateConfig(r2_definition="predicted", r2_threshold=PAPER_R2_THRESHOLD),
}


def _run(
    overrides: dict[str, Any],
    duration: float,
    seed: int,
    engine: str,
    progress: Any,
    stage: str,
    shadows: dict[str, GateConfig] | None = None,
) -> dict[str, Any]:
    """Run the closed loop; return the gate timeline, the final R² (three definitions), the errors and the recovery.

    ``shadows``: further gates fed the same fits, which do not drive the loop; until the loop's own
    gate first opens the loop is the same whichever gate drives it, so a shadow gate that opens
    earlier opens exactly when it would have driving the loop.
    """
    sim_overrides: dict[str, Any] = {"seed": seed}
    if engine != "pinocchio":
        sim_overrides["engine"] = engine
    loop: ClosedLoop = build_closed_loop(SCENARIO, {"identifier": overrides, "sim_robot": sim_overrides})
    identifier = loop.identifier
    if "nominal_inertia_scale" in overrides:  # the paper's setup: the prior is the initial guess, not the nominal
        identifier.window.theta_nominal = initial_guess(identifier)
    dt = loop.sim.dt
    steps = int(round(duration / dt))
    n = len(loop.sim.joint_names)
    errors, q, qd = np.empty((steps, n)), np.empty((steps, n)), np.empty((steps, n))
    gate_open = np.zeros(steps, dtype=bool)
    full_at = opened_at = None
    shadow_gates = {label: ModelGate(config) for label, config in (shadows or {}).items()}
    shadow_opened: dict[str, float | None] = dict.fromkeys(shadow_gates)
    last_fit = None
    for k in range(steps):
        m, errors[k] = loop.step()
        q[k], qd[k] = m.q, m.qd
        if full_at is None and identifier.window.full:
            full_at = m.t
        gate_open[k] = identifier.gate_open
        if opened_at is None and gate_open[k]:
            opened_at = m.t
        if identifier.fit is not last_fit:
            last_fit = identifier.fit
            for label, gate in shadow_gates.items():
                check = identifier.check_consistency if gate.config.require_consistent else None
                if gate.update(last_fit, identifier.window.full, check) and shadow_opened[label] is None:
                    shadow_opened[label] = m.t
        if progress is not None and (k + 1) % 1000 == 0:
            progress(stage, k + 1, steps)
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
        "shadow_gates_opened_s": shadow_opened,
        "gate_open_at_end": identifier.gate_open,
        "gate_open_fraction_last_span": float(gate_open[max(0, steps - int(round(SPAN_S / dt))) :].mean()),
        "gate_reason_at_end": identifier.gate.reason,
        "r2_uncentred_end": None if fit is None else [float(x) for x in fit.r2_uncentred],
        "r2_centred_end": None if fit is None else [float(x) for x in fit.r2],
        "r2_predicted_end": None if fit is None else [float(x) for x in fit.r2_of("predicted")],
        "parameter_error_end": recovery,
        "torque_error_end": torque_error,
    }


def initial_guess(identifier: Any) -> np.ndarray:
    """The initial guess Theta_0 in base parameters: every body `INITIAL_GUESS_INERTIA_SCALE` x the robot's."""
    regressor = identifier.regressor
    robot = regressor.robot
    guess = robot.with_inertial_parameters(robot.inertial_parameters() * INITIAL_GUESS_INERTIA_SCALE)
    friction = [NOMINAL_FRICTION_SCALE * f for f in load_robot_config(SCENARIO).nominal_friction()]
    return np.asarray(identifier.base.to_base(regressor.parameters(robot=guess, friction=friction)), dtype=float)


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
    """Run the paper's buffer with the held-out gate (and the published one beside it); compare with the paper."""
    buffer = {
        "window_duration": PAPER_WINDOW / PAPER_REFIT_HZ,  # 50 samples at 3 Hz
        "sample_rate": PAPER_REFIT_HZ,
        "decimation": "first",  # a sample every 1/3 s, as the paper's buffer (an average of 333 would filter the noise)
        "refit_period": 0.0,  # at every kept sample
        "r2_threshold": PAPER_R2_THRESHOLD,
        "r2_definition": "predicted",
        "min_velocity": 0.0,  # the paper keeps every sample
        "nominal_inertia_scale": NOMINAL_INERTIA_SCALE,
        "nominal_friction_scale": NOMINAL_FRICTION_SCALE,
    }
    seed, engine, progress = options.seed, options.engine, options.progress
    run = _run({**buffer, **PAPER_GATE}, DURATION_S, seed, engine, progress, "paper's buffer, held-out R2", SHADOWS)
    ours_run = _run({}, OURS_DURATION_S, seed, engine, progress, "sensor rate (500 rows at 100 Hz), our gate")

    opened, fill = run["gate_opened_s"], run["buffer_full_s"]
    shadow = run["shadow_gates_opened_s"]
    if opened is not None and opened >= SPAN_S:
        bias_before, ptp_before = _error_stats(run["errors"], run["dt"], opened - SPAN_S, opened)
    else:
        bias_before = ptp_before = float("nan")
    bias_after, ptp_after = _error_stats(run["errors"], run["dt"], DURATION_S - SPAN_S, DURATION_S)
    a1_error = algorithm1_error(seed)
    r2 = run["r2_predicted_end"] or []
    r2_min = min(r2) if r2 else None
    ptp_ratio = ptp_after / ptp_before if ptp_before > 0.0 else float("nan")
    bias_ratio = bias_after / bias_before if bias_before > 0.0 else float("nan")
    # the last two claims compare the identified model with the nominal: only when the identified one drove the
    # loop over the whole last span (and a nominal span before the switch exists)
    identified_in_use = run["gate_open_fraction_last_span"] == 1.0 and np.isfinite(bias_before)
    gate_text = f"opened at {_fmt(opened)}" if opened else "never opened"
    precondition = (
        ""
        if identified_in_use
        else "not applicable: the identified model drove the loop over "
        f"{100 * run['gate_open_fraction_last_span']:.0f} % of the last {SPAN_S:g} s (the gate {gate_text}), so "
        "after vs before does not compare the identified model with the nominal; "
    )
    low_switch, high_switch = PAPER_SWITCH_S - SWITCH_TOLERANCE_S, PAPER_SWITCH_S + SWITCH_TOLERANCE_S
    published = shadow[PUBLISHED]

    def floats(key: str) -> str:
        return ", ".join(f"{x:.4f}" for x in run[key] or [])

    rows = [
        row(
            "held-out R2 at the end, min over joints",
            "paper",
            paper="right below 1",
            ours=r2_min,
            reproduced=r2_min is not None and PAPER_R2_THRESHOLD <= r2_min < 1.0,
            required=True,
            criterion=f"needs [0.95, 1) on every joint: {floats('r2_predicted_end')} (in-sample on the same window: "
            f"uncentred {floats('r2_uncentred_end')}, centred {floats('r2_centred_end')})",
        ),
        row(
            "switch to the identified model, held-out R2 gate [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=opened,
            reproduced=opened is not None and low_switch <= opened <= high_switch,
            required=True,
            criterion=f"needs {low_switch:g}-{high_switch:g} s (buffer full at {_fmt(fill)}; the switch waits until "
            "the fits predict samples they were not fitted to)",
        ),
        row(
            "error bias after / before the switch",
            "paper",
            paper="clearly shifted closer to zero",
            ours=bias_ratio,
            reproduced=bool(bias_ratio <= BIAS_DROP),
            required=True,
            applicable=identified_in_use,
            criterion=precondition + f"{bias_before:.4f} -> {bias_after:.4f} rad (needs at most {BIAS_DROP:g} x: "
            f"the last {SPAN_S:g} s against the {SPAN_S:g} s before the switch)",
        ),
        row(
            "error peak-to-peak after / before the switch",
            "paper",
            paper="essentially unchanged",
            ours=ptp_ratio,
            reproduced=bool(PTP_RANGE[0] <= ptp_ratio <= PTP_RANGE[1]),
            required=True,
            applicable=identified_in_use,
            criterion=precondition + f"{ptp_before:.4f} -> {ptp_after:.4f} rad (needs a ratio in "
            f"[{PTP_RANGE[0]:g}, {PTP_RANGE[1]:g}]; set by what the nominal model misses: docs/reproductions.md)",
        ),
        row(
            "Algorithm 1 (regressor by unit-parameter inverse dynamics) runs in O(n^2)",
            "paper",
            paper="O(n^2)",
            required=True,
            implemented=False,
            criterion="not implemented: a cost over robot sizes needs timings over many chain lengths; ours calls "
            "pinocchio's O(n) RNEA 10 b times (b bodies), O(n^2) by construction, which is not a measurement",
        ),
        row(
            "offline identification of a double pendulum and a 4-DOF leg: very high correlation (Fig. 4-6)",
            "paper",
            paper="very high correlation",
            required=True,
            implemented=False,
            criterion="not implemented: the paper shows figures without a number, and this reproduction runs the "
            "arm of sec. VI only",
        ),
        row(
            "published gate (in-sample uncentred R2 of eq. 104 + full buffer): first opening [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=published,
            reproduced=published is not None and low_switch <= published <= high_switch,
            criterion=f"not a key claim: buffer full at {_fmt(fill)}; 34 base parameters fitted to {PAPER_WINDOW} x 4 "
            "equations leave an in-sample R2 above 0.95 the moment the buffer is full, so this gate cannot bind",
        ),
        row(
            "in-sample centred R2 + full buffer: first opening [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=shadow[CENTRED],
            criterion="reported: centring does not make an in-sample R2 bind either",
        ),
        row(
            "our gate (held-out R2, hysteresis, cond <= 1e4, SDP consistency): first opening [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=shadow[OURS],
            criterion="reported (it does not drive the loop; exact while it opens before the loop's gate)",
        ),
        row(
            "sensor rate (500 rows at 100 Hz), product defaults: switch [s]",
            "paper",
            paper=PAPER_SWITCH_S,
            ours=ours_run["gate_opened_s"],
            criterion=f"reported: a {OURS_DURATION_S:g} s run of the valkyrie_arm scenario's settings",
        ),
    ]
    runs = [("paper's buffer, held-out R2", run), ("sensor rate, product defaults", ours_run)]
    exact_run = None
    if engine != "pinocchio":  # the same experiment on the exact plant, for the degradation
        exact_run = _run({**buffer, **PAPER_GATE}, DURATION_S, seed, "pinocchio", progress, "held-out R2, exact plant")
        runs.append(("paper's buffer, held-out R2, EXACT pinocchio plant", exact_run))
    for label, result in runs:
        rows += [
            row(
                f"{label}: model torque error at the end, |Y (theta - truth)| / |Y truth| over the last {SPAN_S:g} s",
                "recovery",
                paper=0.0,
                ours=result["torque_error_end"],
                criterion="reported (the paper has no such number)",
            ),
            row(
                f"{label}: base parameters at the end, |theta - truth| / |truth|",
                "recovery",
                paper=0.0,
                ours=result["parameter_error_end"],
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
            f"Simulated 4-DoF arm; nominal model (the fallback, 'known with reasonable accuracy') "
            f"{100 * (NOMINAL_INERTIA_SCALE - 1):.0f} % too heavy with the robot's friction; initial guess (the prior "
            f"of eq. 105, 'purposefully chosen to be incorrect') {100 * (INITIAL_GUESS_INERTIA_SCALE - 1):.0f} % too "
            "heavy. The paper ran Valkyrie's arm, so times and amplitudes compare in kind, not in value.",
            "The loop's gate is the paper's (threshold 0.95 and a full buffer, nothing else) on the held-out R2: "
            "each sample's torque predicted by the fit made before it entered the buffer, centred, over the last "
            "50 samples.",
            f"Error statistics over the {SPAN_S:g} s before the switch and the last {SPAN_S:g} s of a "
            f"{DURATION_S:g} s run.",
        ],
        extra={
            "engine_requested": engine,
            "paper_buffer_heldout_gate": {k: v for k, v in run.items() if k != "errors"},
            "sensor_rate": {k: v for k, v in ours_run.items() if k != "errors"},
            "exact_plant": None if exact_run is None else {k: v for k, v in exact_run.items() if k != "errors"},
            "bias_before_rad": bias_before,
            "bias_after_rad": bias_after,
            "ptp_before_rad": ptp_before,
            "ptp_after_rad": ptp_after,
            "algorithm1_max_error": a1_error,
        },
    )
