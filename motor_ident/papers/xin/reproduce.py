"""Xin et al. 2020 (Xin et al., Actuators 2020): dual encoders and VREC on the two-inertia test bench, beside ours.

What is reproduced, on the simulated bench (`motor_ident.sim.elastic.ElasticJointBench`: Table 1
values with J_m derived for the 21 Hz resonance, see `motor_ident.core.elastic.two_inertia`; quantised motor
and link encoders; cogging ripple):

- the FRF of a chirp torque experiment (H1 estimate) and the two-inertia fit: anti-resonance and
  resonance beside the paper's 19 / 21 Hz (peak picking and fitted model), and the fitted J_m,
  J_l, K beside the bench's truth;
- the VREC gain K for xi in {0.2, 0.707, 1, 2}, motor side (K_p 480, K_i 2400, Table 2) and link
  side (K_p 168, K_i 1200, Table 4), by root-locus design and by the closed form (eq. 16-17),
  with the damping ratio of the closed-loop resonant pole pair each K actually gives;
- link velocity ripple (std, cogging near the resonance), VREC (xi = 0.707) against pure PI, at the
  nominal load and at J_l x0.5 and x1.5 (the paper's robustness claim).

What differs from the paper, and why:

- The paper's K are for PI gains normalised by the total inertia J; ours are physical
  [N m s/rad, N m/rad], so our link-side K are about J = J_m + J_l times theirs (the motor-side
  formula also holds rho = J / J_m, which our derived J_m changes). The comparable quantity is the
  damping of the resonant poles, checked within 10 %.
- Table 1's J_m = 7.34 kg m^2 is inconsistent with the measured 21 Hz resonance (it gives 22.3 Hz);
  the bench uses J_m = 14.37 kg m^2 derived from the 19/21 Hz pair.
- The paper gives ripple only as plots; ours are numbers without a paper column. With the link-side
  gains of Table 4 the pure PI loop is UNSTABLE at J_l x1 and x1.5 (a closed-loop pole in the right
  half plane, listed in the table): there the "reduction" compares VREC with a saturated limit
  cycle, not with a ripple, and shows that VREC makes the link-side loop usable at all.

Checks (``passed``): FRF peaks within 5 % of 19/21 Hz; resonant pole damping within 10 % of xi
for every xi and side; ripple std with VREC below 0.6 x pure PI at every load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from motor_ident.core.control.vrec import (
    VrecConfig,
    VrecController,
    closed_form_gain,
    closed_loop_poles,
    design_gain,
    resonant_pair_locus,
)
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters, chirp_torque, estimate_frf, fit_two_inertia
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction
from motor_ident.papers.xin.bench import XIN_LINK_KI, XIN_LINK_KP, XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig, run_velocity_loop, simulate_open_loop

TITLE = "Xin et al. 2020 (Actuators): two-inertia FRF, VREC gain and damping, velocity ripple"
PAPER_K_MOTOR = {0.2: 0.08, 0.707: 0.87, 1.0: 1.41, 2.0: 3.28}  # Table 2 (J-normalised PI gains)
PAPER_K_LINK = {0.2: -0.22, 0.707: -0.98, 1.0: -1.52, 2.0: -3.21}  # Table 4
PAPER_ANTI_RESONANCE_HZ, PAPER_RESONANCE_HZ = 19.0, 21.0
TORQUE_LIMIT = 272.0  # 10 A x 0.17 N m/A x N = 160 [N m], link side
RIPPLE_AMPLITUDE = 5.0  # cogging amplitude, link-side referred [N m]
RIPPLE_REFERENCE = 0.137  # velocity reference putting the cogging near the resonance [rad/s]
RIPPLE_SAMPLES, RIPPLE_SETTLE = 3000, 1500  # 3 s at 1 kHz, the first 1.5 s discarded
LOAD_SCALES = (0.5, 1.0, 1.5)
LOCUS_STEPS = 60  # gains from 0 to K along which the resonant pair is tracked (300 gives the same damping to 1e-6)


def ripple_std(params: TwoInertiaParameters, plant: TwoInertiaParameters, config: VrecConfig) -> float:
    """Std of the true link velocity [rad/s] in steady state of a VREC loop tuned for ``params`` on ``plant``."""
    controller = VrecController(params, config, 1000.0)
    bench = ElasticJointBench(plant, encoders=EncoderConfig(ripple_amplitude=RIPPLE_AMPLITUDE))
    record = run_velocity_loop(bench, controller, np.full(RIPPLE_SAMPLES, RIPPLE_REFERENCE))
    return float(np.std(record.link_velocity[RIPPLE_SETTLE:]))


def _row(name: str, paper: float | None, ours: float) -> dict[str, Any]:
    return {"name": name, "paper": None if paper is None else {"value": paper}, "ours": {"value": ours}}


def reproduce(options: ReproduceOptions) -> Reproduction:
    """Run the reproduction of Xin et al. 2020 (see the module docstring); ``options`` only drives progress."""
    progress = options.progress
    rows: list[dict[str, Any]] = []
    checks: dict[str, bool] = {}
    params = xin_bench_parameters()

    bench = ElasticJointBench(params, encoders=EncoderConfig())
    _, tau = chirp_torque(24.0, 1000.0, f0=1.0, f1=80.0, amplitude=100.0)
    v_m, v_l = simulate_open_loop(bench, tau)
    f, h_m, coherence = estimate_frf(tau, v_m, 1000.0)
    _, h_l, _ = estimate_frf(tau, v_l, 1000.0)
    fit = fit_two_inertia(f, h_m, h_link=h_l, coherence=coherence)
    rows += [
        _row("anti-resonance f_a [Hz] (FRF peak pick)", PAPER_ANTI_RESONANCE_HZ, fit.anti_resonance_hz),
        _row("resonance f_r [Hz] (FRF peak pick)", PAPER_RESONANCE_HZ, fit.resonance_hz),
        _row("anti-resonance f_a [Hz] (fitted model)", PAPER_ANTI_RESONANCE_HZ, fit.parameters.anti_resonance_hz),
        _row("resonance f_r [Hz] (fitted model)", PAPER_RESONANCE_HZ, fit.parameters.resonance_hz),
        _row("fitted J_m [kg m^2] (bench truth 14.37, Table 1 7.34)", None, fit.parameters.motor_inertia),
        _row("fitted J_l [kg m^2] (Table 1: 2.26)", 2.26, fit.parameters.load_inertia),
        _row("fitted K [N m/rad] (Table 1: 34000)", 34000.0, fit.parameters.stiffness),
    ]
    frf_error = max(
        abs(fit.anti_resonance_hz / PAPER_ANTI_RESONANCE_HZ - 1.0), abs(fit.resonance_hz / PAPER_RESONANCE_HZ - 1.0)
    )
    checks[f"FRF anti-resonance / resonance within 5 % of 19 / 21 Hz (worst {100 * frf_error:.1f} %)"] = (
        frf_error < 0.05
    )
    if progress is not None:
        progress("FRF and two-inertia fit", 1, 1)

    stages = [
        ("motor", XIN_MOTOR_KP, XIN_MOTOR_KI, PAPER_K_MOTOR, 16),
        ("link", XIN_LINK_KP, XIN_LINK_KI, PAPER_K_LINK, 17),
    ]
    ripple: dict[str, dict[str, float]] = {}
    for side, kp, ki, paper_k, equation in stages:
        gain_0707 = 0.0
        worst = 0.0
        for xi, k_paper in paper_k.items():
            k = design_gain(params, side, kp, ki, xi)
            k_closed = closed_form_gain(params, side, kp, xi)
            zeta = float(
                resonant_pair_locus(params, VrecConfig(side, kp, ki, k), np.linspace(0.0, k, LOCUS_STEPS))[-1, 0]
            )
            zeta_closed = float(
                resonant_pair_locus(
                    params, VrecConfig(side, kp, ki, k_closed), np.linspace(0.0, k_closed, LOCUS_STEPS)
                )[-1, 0]
            )
            rows += [
                _row(f"{side} side xi={xi}: K (paper J-normalised, ours physical)", k_paper, k),
                _row(f"{side} side xi={xi}: K closed form eq. {equation}", k_paper, k_closed),
                _row(f"{side} side xi={xi}: resonant pole damping", xi, zeta),
                _row(f"{side} side xi={xi}: pole damping with closed-form K", xi, zeta_closed),
            ]
            worst = max(worst, abs(zeta / xi - 1.0))
            if xi == 0.707:
                gain_0707 = k
        checks[f"{side} side: resonant pole damping within 10 % of xi (worst {100 * worst:.2f} %)"] = worst < 0.10
        for done, scale in enumerate(LOAD_SCALES, start=1):
            plant = params.with_load_inertia(params.load_inertia * scale)
            stable = bool(np.max(closed_loop_poles(plant, VrecConfig(side, kp, ki, 0.0)).real) < 0.0)
            pure = ripple_std(params, plant, VrecConfig(side, kp, ki, 0.0, torque_limit=TORQUE_LIMIT))
            vrec = ripple_std(params, plant, VrecConfig(side, kp, ki, gain_0707, torque_limit=TORQUE_LIMIT))
            reduction = 100.0 * (1.0 - vrec / pure)
            ripple[f"{side} x{scale}"] = {"pure_pi": pure, "vrec": vrec, "reduction_pct": reduction}
            rows += [
                _row(f"{side} side J_l x{scale}: pure PI loop stable (1 yes, 0 no)", None, float(stable)),
                _row(f"{side} side J_l x{scale}: link velocity std, pure PI [rad/s]", None, pure),
                _row(f"{side} side J_l x{scale}: link velocity std, VREC xi=0.707 [rad/s]", None, vrec),
                _row(f"{side} side J_l x{scale}: ripple reduction [%]", None, reduction),
            ]
            checks[f"{side} side J_l x{scale}: VREC ripple below 0.6 x pure PI ({reduction:.0f} % lower)"] = (
                vrec < 0.6 * pure
            )
            if progress is not None:
                progress(f"{side} side ripple, J_l x0.5 / x1 / x1.5", done, len(LOAD_SCALES))

    notes = [
        "K: the paper normalises its PI gains by the total inertia J, ours are physical: on the link side (eq. 17) "
        f"our K are about J = {params.total_inertia:.2f} kg m^2 times the paper's; on the motor side eq. 16 also "
        "holds rho = J / J_m, which changes with our derived J_m, so they differ more. Compare the resonant pole "
        "damping instead.",
        "J_m: Table 1's 7.34 kg m^2 puts the resonance at 22.3 Hz; the bench uses 14.37 kg m^2, derived from the "
        "measured 19 / 21 Hz pair (motor_ident.core.elastic.two_inertia).",
        f"Ripple: cogging {RIPPLE_AMPLITUDE} N m, 6 periods per motor revolution, reference {RIPPLE_REFERENCE} "
        "rad/s (near the resonance), std of the true link velocity over the last 1.5 s of 3 s. The paper shows "
        "ripple only in plots. Where the pure PI loop is unstable (link side, J_l x1 and x1.5, gains of Table 4) "
        "the reduction is against a saturated limit cycle.",
    ]
    return Reproduction(
        paper="xin",
        title=TITLE,
        rows=rows,
        checks=checks,
        columns=[("paper", "paper.value"), ("ours", "ours.value")],
        notes=notes,
        extra={
            "two_inertia_fit": {
                "anti_resonance_hz": fit.anti_resonance_hz,
                "resonance_hz": fit.resonance_hz,
                "motor_inertia": fit.parameters.motor_inertia,
                "load_inertia": fit.parameters.load_inertia,
                "stiffness": fit.parameters.stiffness,
            },
            "ripple": ripple,
        },
    )
