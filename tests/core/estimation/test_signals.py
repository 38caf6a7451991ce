"""Signals: offline zero-phase derivatives and the online EMA's documented delay."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.estimation.signals import EmaDerivative, butterworth_derivatives, savgol_derivatives
from motor_ident.errors import DataError


@pytest.mark.parametrize("method", [savgol_derivatives, butterworth_derivatives])
def test_offline_derivatives_of_a_sine(method) -> None:
    """Derivatives of sin(w t) sampled at 500 Hz match w cos and -w^2 sin away from the ends."""
    t = np.arange(0, 10, 0.002)
    w = 2 * np.pi * 0.7
    rng = np.random.default_rng(0)
    q = np.sin(w * t) + 1e-5 * rng.standard_normal(t.size)
    _, qd, qdd = method(t, q)
    core = slice(250, -250)
    assert_allclose(qd[core], w * np.cos(w * t[core]), atol=0.01 * w)
    assert_allclose(qdd[core], -(w**2) * np.sin(w * t[core]), atol=0.03 * w**2)


def test_ema_delay_is_as_documented() -> None:
    """A ramp in velocity gives a constant acceleration, reached after the documented delay."""
    dt = 0.001
    f = EmaDerivative(1, cutoff_hz=20.0)
    t = np.arange(0, 1.0, dt)
    slope = 3.0
    outputs = np.array([f.update(tk, [slope * tk])[0][0] for tk in t])
    # Filtered velocity lags the ramp by the EMA delay (1 - alpha) / alpha samples.
    lag = (slope * t[-1] - outputs[-1]) / slope
    alpha = 1 - np.exp(-2 * np.pi * 20.0 * dt)
    assert_allclose(lag, dt * (1 - alpha) / alpha, rtol=0.02)
    assert_allclose(f.update(t[-1] + dt, [slope * (t[-1] + dt)])[1], [slope], rtol=0.01)


def test_ema_resets_on_backwards_time() -> None:
    """A timestamp that goes backwards restarts the filter instead of producing a spike."""
    f = EmaDerivative(2, cutoff_hz=10.0)
    for k in range(100):
        f.update(k * 0.01, [k * 0.01, 0.0])
    v, a = f.update(0.0, [5.0, -5.0])
    assert_allclose(v, [5.0, -5.0])
    assert_allclose(a, [0.0, 0.0])


def test_offline_derivatives_need_uniform_time() -> None:
    """Irregular or too short records raise DataError with a hint."""
    with pytest.raises(DataError, match="uniform"):
        savgol_derivatives(np.array([0.0, 0.1, 0.2, 0.5, 0.6]), np.zeros(5))
    with pytest.raises(DataError, match="increasing"):
        butterworth_derivatives(np.array([0.0, 0.1, 0.1, 0.2]), np.zeros(4))
