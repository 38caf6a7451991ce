"""Fixtures shared by the core tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def arm() -> dict:
    """valkyrie_arm: regressor, base map, true parameters, physical constraints, and the held-out
    torque RMSE [N m] of base parameters on a noise-free 20 s excitation record."""
    from motor_ident.core.estimation.constraints import physical_constraints
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta_true = config.nominal_parameters(regressor)
    test, _ = excitation_record(regressor, theta_true, duration=20.0, rate_hz=100.0, noise_std=0.0, seed=9)
    Y_test = base.base_regressor(regressor.rows(test.q, test.qd, test.qdd))
    return {
        "regressor": regressor,
        "base": base,
        "theta_true": theta_true,
        "constraints": physical_constraints(regressor),
        "heldout_rmse": lambda theta_base: float(np.sqrt(np.mean((Y_test @ theta_base - test.tau) ** 2))),
    }
