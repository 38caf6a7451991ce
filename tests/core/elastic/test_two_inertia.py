"""Two-inertia model, transfer functions, FRF estimate and fit on Xin et al.'s test bench."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.elastic.two_inertia import (
    TwoInertiaParameters,
    chirp_torque,
    estimate_frf,
    fit_two_inertia,
    frequency_response,
    motor_inertia_for_resonance,
)
from motor_ident.errors import ConfigError
from motor_ident.papers.xin.bench import xin_bench_parameters
from motor_ident.sim.elastic import ElasticJointBench, EncoderConfig, simulate_open_loop


def test_bench_has_the_papers_resonance_pair() -> None:
    """Table 1 K and J_l give f_a = 19.5 Hz; the derived J_m puts f_r at 21 Hz."""
    p = xin_bench_parameters()
    assert p.anti_resonance_hz == pytest.approx(np.sqrt(34000.0 / 2.26) / (2 * np.pi))
    assert abs(p.anti_resonance_hz - 19.0) / 19.0 < 0.05
    assert p.resonance_hz == pytest.approx(21.0, rel=1e-12)
    assert p.motor_inertia == pytest.approx(14.37, abs=0.01)


def test_motor_inertia_for_resonance_rejects_resonance_below_anti_resonance() -> None:
    """A resonance below sqrt(K/J_l) has no motor inertia; the error names the key."""
    with pytest.raises(ConfigError, match="resonance_hz"):
        motor_inertia_for_resonance(2.26, 34000.0, 15.0)


def test_undamped_response_matches_closed_form(rng: np.random.Generator) -> None:
    """Without damping the responses equal Xin et al. 2020, eq. 2 (derived again in the module doc)."""
    p = TwoInertiaParameters(motor_inertia=rng.uniform(1, 10), load_inertia=rng.uniform(1, 5), stiffness=2e4)
    f = rng.uniform(1.0, 100.0, 30)
    s = 1j * 2 * np.pi * f
    wa2, wr2, total = p.anti_resonance**2, p.resonance**2, p.total_inertia
    h_m, h_l = frequency_response(p, f)
    np.testing.assert_allclose(h_m, (s**2 + wa2) * wr2 / (total * s * (s**2 + wr2) * wa2), rtol=1e-9)
    np.testing.assert_allclose(h_l, wr2 / (total * s * (s**2 + wr2)), rtol=1e-9)


def test_chirp_frf_recovers_resonance_pair_and_parameters() -> None:
    """A chirp on the simulated bench (quantised encoders) gives f_a, f_r within 5 % and the parameters."""
    p = xin_bench_parameters()
    bench = ElasticJointBench(p, encoders=EncoderConfig())
    _, tau = chirp_torque(24.0, 1000.0, f0=1.0, f1=80.0, amplitude=100.0)
    v_m, v_l = simulate_open_loop(bench, tau)
    f, h_m, coh = estimate_frf(tau, v_m, 1000.0)
    _, h_l, _ = estimate_frf(tau, v_l, 1000.0)
    fit = fit_two_inertia(f, h_m, h_link=h_l, coherence=coh)
    assert fit.anti_resonance_hz == pytest.approx(p.anti_resonance_hz, rel=0.05)
    assert fit.resonance_hz == pytest.approx(21.0, rel=0.05)
    q = fit.parameters
    assert q.anti_resonance_hz == pytest.approx(p.anti_resonance_hz, rel=0.02)
    assert q.resonance_hz == pytest.approx(p.resonance_hz, rel=0.02)
    for key in ("motor_inertia", "load_inertia", "stiffness"):
        assert getattr(q, key) == pytest.approx(getattr(p, key), rel=0.05), key
