"""pytest-benchmark figures of the hot paths (not part of the test suite).

    .venv/bin/python -m pytest benchmarks --benchmark-only

``motor-ident bench`` reports the same quantities (plus DDS latency and memory) as one table.
"""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.sliding_window import SlidingWindowLS
from motor_ident.core.rigid_body.model import random_states
from motor_ident.io.robot_config import load_robot_config


@pytest.fixture(scope="module")
def valkyrie():
    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    return config, regressor, structural_base_parameters(regressor)


def test_regressor_rows_batch(benchmark, valkyrie) -> None:
    """Full regressor of 1000 samples (rigid body + reflected inertia + friction)."""
    _, regressor, _ = valkyrie
    q, v, a = random_states(regressor.robot, np.random.default_rng(0), 1000)
    out = np.zeros((1000, regressor.robot.n, regressor.n_parameters))
    benchmark(regressor.rows, q, v, a, out=out)


def test_regressor_row_single(benchmark, valkyrie) -> None:
    """One sample, as the feedforward node computes it every control cycle."""
    _, regressor, _ = valkyrie
    q, v, a = random_states(regressor.robot, np.random.default_rng(0), 1)
    out = np.zeros((1, regressor.robot.n, regressor.n_parameters))
    benchmark(regressor.rows, q, v, a, out=out)


def test_sliding_window_update_and_solve(benchmark, valkyrie) -> None:
    """One new sample into a 2000-sample window, then a refit."""
    _, regressor, base = valkyrie
    rng = np.random.default_rng(1)
    Y = base.base_regressor(regressor.rows(*random_states(regressor.robot, rng, 2500)))
    tau = Y @ rng.normal(size=base.n_base)
    est = SlidingWindowLS(regressor.robot.n, base.n_base, 2000)
    for k in range(2000):
        est.add(Y[k], tau[k])
    state = {"k": 2000}

    def update() -> None:
        k = state["k"] = 2000 + (state["k"] - 1999) % 500
        est.add(Y[k], tau[k])
        est.solve()

    benchmark(update)
