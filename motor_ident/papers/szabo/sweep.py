"""Which data-generating setup gives Szabó & Szádeczky-Kardoss's Table 2 bias pattern?

Table 2 shows the LS friction means of joints 1 and 3 on their exact values (|bias| <= 0.07
standard deviations) while joint 2's viscous and Stribeck terms are off: tau_v(2) 0.243 for
0.277 (-1.1 sd), tau_sc(2) -0.176 for -0.200 (+0.6 sd), and tau_s(2) is not (0.999). The paper
says only that its Simulink data came from the model with torque noise, so `pattern_sweep` tries
the setups that could bias a least-squares fit on such data and reports which give the pattern:

- ``arctan``: the friction of eq. 7-9 with the data's K_v, delta other than the fitted (50, 5),
  the same on every joint (a grid of 9 x 10 values, around the fitted ones and far from them);
- ``simscape``: Simscape's Rotational Friction block (a Stribeck exponential, a tanh Coulomb
  term, viscous), which a Simulink model of the arm would use, with breakaway torque tau_s,
  Coulomb torque tau_s + tau_sc and a breakaway velocity from 0.01 to 0.5 rad/s;
- ``velocity noise``: noisy joint velocities in the regressor (errors in variables; the paper
  mentions joint-angle noise), white, the same sd on every joint;
- ``joint 2 only``: the data's joint-2 tau_sc and tau_v scaled by the paper's own LS-mean / exact
  ratio (0.88), the other joints exact. This gives the pattern by construction; it is what
  remains when no setup acting on every joint does.

The bias of LS under a deterministic model error e (N n,) is L^+ e whatever the noise, so each
setup costs one product; it is expressed in the LS standard deviation under the paper's noise
(sandwich covariance) to compare with Table 2's (mean - exact) / sqrt(variance). Velocity noise
averages `VELOCITY_DRAWS` draws of the noisy regressor on noise-free torques.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.actuators.friction import friction_regressor
from motor_ident.papers.reproduction import row

FloatArray = NDArray[np.float64]

# Table 2's bias pattern, in LS standard deviations: the biased rows need the paper's sign and a
# size within a factor 3 of its; every other friction and inertial row needs |bias| <= UNBIASED_SD
# (Table 2's largest is 0.16 sd, its values rounded to 3 decimals).
PAPER_BIASED_SD = {"joint2.tau_v": -1.12, "joint2.tau_sc": 0.59}
UNBIASED_SD = 0.25
BIASED_FACTOR = 3.0
ARCTAN_STICTION_GAINS = (10.0, 30.0, 40.0, 45.0, 50.0, 55.0, 60.0, 100.0, 1000.0)
ARCTAN_STRIBECK_GAINS = (1.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 10.0, 50.0)
SIMSCAPE_BREAKAWAY_VELOCITIES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)  # [rad/s]
VELOCITY_NOISE_SD = (0.002, 0.005, 0.01, 0.02, 0.05)  # [rad/s]
VELOCITY_DRAWS = 5
JOINT2_RATIO = 0.88  # Table 2: 0.243 / 0.277 and 0.176 / 0.200


@dataclass(frozen=True)
class SweepCase:
    """One data-generating setup and the LS bias it causes.

    Attributes:
        family: ``arctan``, ``simscape``, ``velocity noise`` or ``joint 2 only``.
        label: the setup's values.
        bias_sd: LS bias of each base parameter in LS standard deviations (r,).
        pattern: the Table 2 pattern appears (module docstring).
        distance: how far from the pattern: the largest violation of its bounds [sd] (0: inside).
        contrast: |bias of tau_v(2)| over the largest |bias| of the rows Table 2 has unbiased
            (Table 2: 1.12 / 0.16 = 7, its inertial rows rounded to 3 decimals).
    """

    family: str
    label: str
    bias_sd: FloatArray
    pattern: bool
    distance: float
    contrast: float


def pattern_distance(names: list[str], bias_sd: FloatArray) -> float:
    """Largest violation [sd] of Table 2's pattern by ``bias_sd`` (0: the pattern appears)."""
    worst = 0.0
    for name, z in zip(names, bias_sd, strict=True):
        paper = PAPER_BIASED_SD.get(name)
        if paper is None:
            worst = max(worst, abs(z) - UNBIASED_SD)
            continue
        low, high = abs(paper) / BIASED_FACTOR, abs(paper) * BIASED_FACTOR
        signed = float(np.sign(paper) * z)
        worst = max(worst, low - signed, signed - high)
    return max(float(worst), 0.0)


def pattern_sweep(
    regressor: Any,
    base: Any,
    theta: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau_rigid: FloatArray,
    sigma: FloatArray,
    seed: int = 0,
) -> list[SweepCase]:
    """LS bias of every setup of the module docstring along one trajectory.

    Args:
        regressor: the arm's `Regressor` (fitted friction shape: the config's).
        base: its base parameters.
        theta: exact full parameters (p,).
        q, qd, qdd: the exact trajectory, (N, n) [rad, rad/s, rad/s^2].
        tau_rigid: rigid-body torques along it (RNEA), (N, n) [N m].
        sigma: torque noise std per joint (n,) [N m], for the standard deviations.
        seed: seed of the velocity-noise draws.
    """
    names = base.expressions()
    theta = np.asarray(theta, dtype=float)
    L = base.base_regressor(regressor.rows(q, qd, qdd))  # (N, n, r)
    theta_base = base.to_base(theta)
    A = np.einsum("kji,kjl->jil", L, L)  # per joint L_j'L_j
    info_inv = np.linalg.inv(A.sum(axis=0))
    sd = np.sqrt(np.diag(info_inv @ np.einsum("j,jil->il", sigma**2, A) @ info_inv))
    pinv = np.linalg.pinv(L.reshape(-1, L.shape[2]))
    exact = tau_rigid + regressor.friction_torque(qd, theta)

    def case(family: str, label: str, bias: FloatArray) -> SweepCase:
        z = bias / sd
        distance = pattern_distance(names, z)
        others = max(abs(float(v)) for name, v in zip(names, z, strict=True) if name not in PAPER_BIASED_SD)
        contrast = abs(float(z[names.index("joint2.tau_v")])) / max(others, 1e-12)
        return SweepCase(family, label, z, distance == 0.0, distance, contrast)

    def friction(law: Callable[[int, FloatArray, FloatArray, Any], FloatArray]) -> FloatArray:
        out = np.zeros_like(qd)
        for j, (shape, cols) in enumerate(zip(regressor.friction, regressor.layout.friction, strict=True)):
            out[:, j] = law(j, qd[:, j], theta[cols], shape)
        return out

    def bias_of(tau: FloatArray) -> FloatArray:
        return pinv @ (tau - exact).reshape(-1)

    cases = []
    for stiction in ARCTAN_STICTION_GAINS:
        for stribeck in ARCTAN_STRIBECK_GAINS:
            law = _arctan(stiction, stribeck)
            cases.append(
                case("arctan", f"K_v = {stiction:g}, delta = {stribeck:g}", bias_of(tau_rigid + friction(law)))
            )
    for breakaway in SIMSCAPE_BREAKAWAY_VELOCITIES:
        law = _simscape(breakaway)
        cases.append(case("simscape", f"breakaway {breakaway:g} rad/s", bias_of(tau_rigid + friction(law))))
    rng = np.random.default_rng(seed)
    for noise in VELOCITY_NOISE_SD:
        draws = []
        for _ in range(VELOCITY_DRAWS):
            noisy = base.base_regressor(regressor.rows(q, qd + noise * rng.standard_normal(qd.shape), qdd))
            draws.append(np.linalg.lstsq(noisy.reshape(-1, L.shape[2]), exact.reshape(-1), rcond=None)[0] - theta_base)
        cases.append(case("velocity noise", f"sd {noise:g} rad/s", np.mean(draws, axis=0)))
    cases.append(
        case("joint 2 only", f"joint-2 tau_sc, tau_v x {JOINT2_RATIO}", bias_of(tau_rigid + friction(_joint2)))
    )
    return cases


def _arctan(stiction_gain: float, stribeck_gain: float) -> Callable[[int, FloatArray, FloatArray, Any], FloatArray]:
    def law(j: int, v: FloatArray, values: FloatArray, shape: Any) -> FloatArray:
        data_shape = replace(shape, stiction_gain=stiction_gain, stribeck_gain=stribeck_gain)
        return friction_regressor(v, data_shape) @ values

    return law


def _simscape(breakaway: float) -> Callable[[int, FloatArray, FloatArray, Any], FloatArray]:
    """Simscape Rotational Friction: Stribeck velocity sqrt(2) w_brk, Coulomb velocity w_brk / 10."""

    def law(j: int, v: FloatArray, values: FloatArray, shape: Any) -> FloatArray:
        tau_s, tau_sc, tau_v = values
        coulomb, stribeck_v, coulomb_v = tau_s + tau_sc, np.sqrt(2.0) * breakaway, breakaway / 10.0
        peak = np.sqrt(2.0 * np.e) * (tau_s - coulomb) * np.exp(-((v / stribeck_v) ** 2)) * v / stribeck_v
        return peak + coulomb * np.tanh(v / coulomb_v) + tau_v * v

    return law


def _joint2(j: int, v: FloatArray, values: FloatArray, shape: Any) -> FloatArray:
    scaled = np.array(values, dtype=float)
    if j == 1:
        scaled[1:] *= JOINT2_RATIO
    return friction_regressor(v, shape) @ scaled


def sweep_rows(cases: list[SweepCase]) -> list[dict[str, Any]]:
    """The rows of the sweep: the pattern from a setup acting on every joint, and from joint 2 alone."""
    uniform = [c for c in cases if c.family != "joint 2 only"]
    hits = [c for c in uniform if c.pattern]
    closest = min(uniform, key=lambda c: c.distance)
    families = ", ".join(
        f"{f} ({sum(c.family == f for c in uniform)})" for f in dict.fromkeys(c.family for c in uniform)
    )
    joint2 = next(c for c in cases if c.family == "joint 2 only")
    return [
        row(
            "Table 2 pattern (joint 2 tau_v, tau_sc biased, the rest unbiased) from a setup acting on every joint",
            "paper",
            paper={"exact": "appears (Simulink data)"},
            ours={"exact": f"{len(hits)} of {len(uniform)} setups"},
            reproduced=bool(hits),
            criterion=f"swept: {families}; closest {closest.family} {closest.label}, "
            f"{closest.distance:.2f} sd outside the pattern; joint 2's tau_v bias over the largest other bias at most "
            f"{max(c.contrast for c in uniform):.1f} (Table 2: 7)"
            + (f"; pattern with {', '.join(f'{c.family} {c.label}' for c in hits)}" if hits else ""),
        ),
        row(
            f"Table 2 pattern with the data's joint-2 tau_sc, tau_v x {JOINT2_RATIO} (the paper's LS mean / exact)",
            "paper",
            paper={"exact": "appears"},
            ours={"exact": "appears" if joint2.pattern else f"{joint2.distance:.2f} sd outside"},
            criterion="reported: by construction; Table 2's joint-2 values are consistent with data whose joint-2 "
            "viscous and Stribeck friction were 12 % below the listed exact values",
        ),
    ]
