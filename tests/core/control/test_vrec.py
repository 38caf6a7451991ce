"""VREC (Xin et al. 2020, section 3): closed-loop poles, gain design, and ripple in simulation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

from motor_ident.core.control.vrec import (
    VrecConfig,
    VrecController,
    closed_form_gain,
    closed_loop_poles,
    closed_loop_transfer,
    design_gain,
    resonant_pair_locus,
)
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters
from motor_ident.errors import ConfigError
from motor_ident.papers.xin.bench import XIN_LINK_KI, XIN_LINK_KP, XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig, run_velocity_loop

GAINS = {"motor": (XIN_MOTOR_KP, XIN_MOTOR_KI), "link": (XIN_LINK_KP, XIN_LINK_KI)}


def test_undamped_link_side_polynomial_matches_derivation() -> None:
    """Without damping the link-side loop is J s^2 (s^2 + w_r^2) + (K_p s + K_i)(w_r^2 - K s^2) (times J_m J_l)."""
    p = TwoInertiaParameters(motor_inertia=5.0, load_inertia=2.0, stiffness=3e4)
    cfg = VrecConfig("link", kp=100.0, ki=500.0, gain=-3.0)
    poles = np.sort_complex(closed_loop_poles(p, cfg))
    P = np.polynomial.polynomial
    w2 = p.resonance**2
    ref = P.polyadd(P.polymul([0, 0, p.total_inertia], [w2, 0, 1]), P.polymul([500.0, 100.0], [w2, 0, 3.0]))
    expected = np.sort_complex(np.append(P.polyroots(ref), 0.0))  # B = 0: the v_r filter pole sits at 0
    np.testing.assert_allclose(poles, expected, atol=1e-6 * p.resonance)


@pytest.mark.parametrize("side", ["motor", "link"])
@pytest.mark.parametrize("xi", [0.2, 0.707, 1.0, 2.0])
def test_designed_gain_gives_resonant_poles_the_damping(side: str, xi: float) -> None:
    """The resonant closed-loop pole pair has the designed damping within 10 %, and the loop is stable."""
    p = xin_bench_parameters()
    kp, ki = GAINS[side]
    gain = design_gain(p, side, kp, ki, xi)
    assert np.sign(gain) == (1 if side == "motor" else -1)
    cfg = VrecConfig(side, kp, ki, gain)
    zeta, _ = resonant_pair_locus(p, cfg, np.linspace(0.0, gain, 300))[-1]
    assert zeta == pytest.approx(xi, rel=0.10)
    assert np.all(closed_loop_poles(p, cfg).real < 0.0)


def test_closed_form_link_gain_is_close_to_the_exact_design() -> None:
    """Eq. 17 (physical units) lands within 10 % of the root-locus design on the bench."""
    p = xin_bench_parameters()
    for xi in (0.707, 1.0):
        exact = design_gain(p, "link", XIN_LINK_KP, XIN_LINK_KI, xi)
        assert closed_form_gain(p, "link", XIN_LINK_KP, xi) == pytest.approx(exact, rel=0.10)


@pytest.mark.parametrize("side", ["motor", "link"])
def test_simulated_step_response_matches_linear_model(side: str) -> None:
    """The 1 kHz discrete loop on the bench follows the linear closed-loop model whose poles were designed."""
    p = xin_bench_parameters()
    kp, ki = GAINS[side]
    cfg = VrecConfig(side, kp, ki, design_gain(p, side, kp, ki, 0.707))
    bench = ElasticJointBench(p, encoders=EncoderConfig(0, 0))
    v_ref = np.full(1500, 0.1)
    rec = run_velocity_loop(bench, VrecController(p, cfg, 1000.0), v_ref)
    _, num_l, den = closed_loop_transfer(p, cfg)
    _, model, _ = scipy.signal.lsim((num_l, den), v_ref, rec.t - rec.t[0])
    assert np.max(np.abs(model - rec.link_velocity)) < 0.06 * 0.1


def _ripple(p: TwoInertiaParameters, plant: TwoInertiaParameters, side: str, gain: float) -> float:
    kp, ki = GAINS[side]
    controller = VrecController(p, VrecConfig(side, kp, ki, gain, torque_limit=272.0), 1000.0)
    bench = ElasticJointBench(plant, encoders=EncoderConfig(ripple_amplitude=5.0))
    rec = run_velocity_loop(bench, controller, np.full(3000, 0.137))  # cogging near the resonance
    return float(np.std(rec.link_velocity[1500:]))


@pytest.mark.parametrize("side", ["motor", "link"])
@pytest.mark.parametrize("load_scale", [0.5, 1.0, 1.5])
def test_vrec_reduces_velocity_ripple_against_pure_pi(side: str, load_scale: float) -> None:
    """With cogging near the resonance, VREC (xi = 0.707, designed on the nominal load) halves the
    link velocity ripple of pure PI, also with the load inertia changed by +-50 %."""
    p = xin_bench_parameters()
    kp, ki = GAINS[side]
    gain = design_gain(p, side, kp, ki, 0.707)
    plant = p.with_load_inertia(p.load_inertia * load_scale)
    assert _ripple(p, plant, side, gain) < 0.6 * _ripple(p, plant, side, 0.0)


def test_config_rejects_bad_side() -> None:
    """A wrong side names the key and the choices."""
    with pytest.raises(ConfigError, match="side"):
        VrecConfig("middle", 1.0, 1.0)
