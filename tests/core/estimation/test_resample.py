"""Uniform grids from jittered stamps, and the selectable zero-phase differentiation."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.estimation.signals import Differentiation, is_uniform, resample_uniform, uniform_grid
from motor_ident.errors import ConfigError, DataError


def test_linear_resampling_error_is_within_its_bound(rng: np.random.Generator) -> None:
    t = np.concatenate([[0.0], np.cumsum(rng.uniform(0.008, 0.013, 999))])
    assert not is_uniform(t)
    grid = uniform_grid(t)
    assert is_uniform(grid) and grid[0] == t[0] and grid[-1] <= t[-1]
    x = np.column_stack([np.sin(3 * t), np.cos(t)])
    out = resample_uniform(t, x, grid)
    # |error| <= dt^2 / 8 max|x''| = 0.013^2 / 8 * 9
    assert np.max(np.abs(out[:, 0] - np.sin(3 * grid))) < 0.013**2 / 8 * 9
    assert uniform_grid(t, 50.0)[1] == pytest.approx(0.02)


def test_stamps_that_go_back_are_refused_with_the_index() -> None:
    with pytest.raises(DataError, match=r"t\[2\] = 0.01 after t\[1\] = 0.02"):
        uniform_grid(np.array([0.0, 0.02, 0.01, 0.03]))


def test_differentiation_methods_recover_derivatives() -> None:
    t = np.arange(0, 10, 0.01)
    for how in (Differentiation(), Differentiation(method="butterworth", cutoff_hz=10.0)):
        _, dx, ddx = how.derivatives(t, np.sin(2 * t))
        np.testing.assert_allclose(dx[50:-50], 2 * np.cos(2 * t[50:-50]), atol=2e-3)
        np.testing.assert_allclose(ddx[50:-50], -4 * np.sin(2 * t[50:-50]), atol=2e-2)
    with pytest.raises(ConfigError, match="expected one of"):
        Differentiation(method="spline")
