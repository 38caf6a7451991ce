"""Stability margins of the VREC velocity loop and the largest stable pure-PI gains (Xin et al. 2020, sec. 3.3).

The loop of `motor_ident.core.control.vrec` broken at the torque command: with the characteristic
polynomial ``char = s Det' (J s + B) + PI * bracket`` (`closed_loop_polynomial`), the open loop is
``L(s) = (char - s Det' (J s + B)) / (s Det' (J s + B))``, times ``exp(-s T_d)`` for a loop delay
T_d (one sample of the 1 kHz controller by default). Gain margin: smallest ``-20 log10 |L|`` where
the phase crosses -180 deg (infinite if it never does); phase margin: smallest angular distance of
``L`` from -180 deg where ``|L|`` crosses 1.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from motor_ident.core.control.vrec import VrecConfig, closed_loop_poles, closed_loop_polynomial
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters, _model_polynomials
from motor_ident.errors import ConfigError

P = np.polynomial.polynomial


@dataclass(frozen=True)
class Margins:
    """Gain margin [dB] (inf: no phase crossover), phase margin [deg], and where they are read [Hz]."""

    gain_margin_db: float
    phase_margin_deg: float
    phase_crossover_hz: float
    gain_crossover_hz: float


def loop_margins(
    params: TwoInertiaParameters,
    config: VrecConfig,
    *,
    delay_s: float = 1e-3,
    f_max_hz: float = 2000.0,
    reading: str = "open",
    points: int = 200_000,
) -> Margins:
    """Margins of the VREC loop (module doc), read on a log grid of ``points`` from 0.01 Hz to ``f_max_hz``.

    ``reading``: ``open`` (the loop broken at the torque command, module doc) or ``closed`` (the
    margins read off the closed-loop response v_d -> v_m times the delay, as if it were an open
    loop: what Xin et al. 2020, sec. 3.3.1 words as "margins of the closed-loop frequency response").
    """
    char = closed_loop_polynomial(params, config)
    _, a_l, c, det = _model_polynomials(params)
    jb = [params.total_damping, params.total_inertia]
    plant = P.polymul(P.polymul([0.0, 1.0], det), jb)
    if reading == "open":
        numerator, denominator = P.polysub(char, plant), plant
    elif reading == "closed":
        measured = a_l if config.side == "motor" else c
        numerator, denominator = P.polymul(P.polymul([config.ki, config.kp], measured), jb), char
    else:
        raise ConfigError(f"reading = {reading!r}: expected 'open' or 'closed'")
    w = 2.0 * np.pi * np.logspace(-2, np.log10(f_max_hz), points)
    loop = P.polyval(1j * w, numerator) / P.polyval(1j * w, denominator) * np.exp(-1j * w * delay_s)
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


@dataclass(frozen=True)
class MarginCase:
    """One construction of Xin et al.'s motor-side loop and its margins (`margin_sweep`).

    Attributes:
        motor_inertia: J_m [kg m^2] (Table 1's 7.34 or the one its 19 / 21 Hz imply).
        delay_s: loop delay [s] (the paper states 1 kHz sampling, no delay or filter).
        pi_scale: factor on Table 3's K_p, K_i (1: as printed in N m s/rad; J: read as normalised by J).
        gain_scale: factor on Table 3's K = 1.3 (1 or J, the same two readings).
        reading: ``open`` or ``closed`` (`loop_margins`).
        margins: the result.
    """

    motor_inertia: float
    delay_s: float
    pi_scale: str
    gain_scale: str
    reading: str
    margins: Margins


def margin_sweep(
    plants: dict[str, TwoInertiaParameters],
    kp: float,
    ki: float,
    gain: float,
    *,
    delays_s: tuple[float, ...] = (0.0, 0.5e-3, 1e-3, 1.5e-3, 2e-3),
    points: int = 20_000,
) -> list[MarginCase]:
    """Margins of every reading of the stated loop: plant x delay x (PI, K) as printed or times J x open / closed.

    ``plants`` maps a label of J_m to the joint; ``kp``, ``ki``, ``gain`` are the printed values.
    """
    cases = []
    for (_label, plant), delay, pi_scale, gain_scale, reading in itertools.product(
        plants.items(), delays_s, ("1", "J"), ("1", "J"), ("open", "closed")
    ):
        J = plant.total_inertia
        f_pi, f_k = (J if pi_scale == "J" else 1.0), (J if gain_scale == "J" else 1.0)
        config = VrecConfig("motor", kp * f_pi, ki * f_pi, gain * f_k)
        margins = loop_margins(plant, config, delay_s=delay, reading=reading, points=points)
        cases.append(MarginCase(plant.motor_inertia, delay, pi_scale, gain_scale, reading, margins))
    return cases
