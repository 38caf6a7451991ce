"""Stability margins of the VREC velocity loop and the largest stable pure-PI gains (Xin et al. 2020, sec. 3.3).

The loop of `motor_ident.core.control.vrec` broken at the torque command: with the characteristic
polynomial ``char = s Det' (J s + B) + PI * bracket`` (`closed_loop_polynomial`), the open loop is
``L(s) = (char - s Det' (J s + B)) / (s Det' (J s + B))``, times ``exp(-s T_d)`` for a loop delay
T_d (one sample of the 1 kHz controller by default). Gain margin: smallest ``-20 log10 |L|`` where
the phase crosses -180 deg (infinite if it never does); phase margin: smallest angular distance of
``L`` from -180 deg where ``|L|`` crosses 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from motor_ident.core.control.vrec import VrecConfig, closed_loop_poles, closed_loop_polynomial
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters, _model_polynomials

P = np.polynomial.polynomial


@dataclass(frozen=True)
class Margins:
    """Gain margin [dB] (inf: no phase crossover), phase margin [deg], and where they are read [Hz]."""

    gain_margin_db: float
    phase_margin_deg: float
    phase_crossover_hz: float
    gain_crossover_hz: float


def loop_margins(
    params: TwoInertiaParameters, config: VrecConfig, *, delay_s: float = 1e-3, f_max_hz: float = 2000.0
) -> Margins:
    """Margins of the VREC loop (module doc), read on a log grid from 0.01 Hz to ``f_max_hz``."""
    char = closed_loop_polynomial(params, config)
    _, _, _, det = _model_polynomials(params)
    plant = P.polymul(P.polymul([0.0, 1.0], det), [params.total_damping, params.total_inertia])
    controller = P.polysub(char, plant)
    w = 2.0 * np.pi * np.logspace(-2, np.log10(f_max_hz), 200_000)
    loop = P.polyval(1j * w, controller) / P.polyval(1j * w, plant) * np.exp(-1j * w * delay_s)
    magnitude, phase = np.abs(loop), np.degrees(np.unwrap(np.angle(loop)))
    turns = np.floor((phase + 180.0) / 360.0)
    phase_crossings = np.flatnonzero(np.diff(turns) != 0)
    gain_crossings = np.flatnonzero(np.diff(np.sign(magnitude - 1.0)) != 0)
    gm, f_gm = float("inf"), float("nan")
    for k in phase_crossings:
        value = float(-20.0 * np.log10(magnitude[k]))
        if value < gm:
            gm, f_gm = value, float(w[k] / (2.0 * np.pi))
    pm, f_pm = float("inf"), float("nan")
    for k in gain_crossings:
        offset = float((phase[k] + 180.0) % 360.0)  # angle of L measured from -180 deg
        value = min(offset, 360.0 - offset)
        if value < pm:
            pm, f_pm = value, float(w[k] / (2.0 * np.pi))
    return Margins(gm, pm, f_gm, f_pm)


def is_stable(params: TwoInertiaParameters, config: VrecConfig) -> bool:
    """Every closed-loop pole in the open left half plane."""
    return bool(np.max(closed_loop_poles(params, config).real) < 0.0)


def largest_stable_pi_scale(plants: list[TwoInertiaParameters], config: VrecConfig, *, margin: float = 0.5) -> float:
    """``margin`` x the largest factor on (K_p, K_i) keeping the pure PI loop (K = 0) stable on every plant.

    Bisection on the factor in (0, 1]; returns 1 (no margin applied) when the unscaled gains are already stable.
    """
    base = replace(config, gain=0.0)

    def stable(scale: float) -> bool:
        scaled = replace(base, kp=base.kp * scale, ki=base.ki * scale)
        return all(is_stable(p, scaled) for p in plants)

    if stable(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if stable(mid) else (lo, mid)
    return margin * lo
