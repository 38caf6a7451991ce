"""Base parameters: counts of Szabó & Szádeczky-Kardoss 2021, exact full <-> base round trips, classes."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.rigid_body.base_params import COMBINATION, IDENTIFIABLE, UNIDENTIFIABLE
from motor_ident.core.rigid_body.model import random_states
from motor_ident.io.robot_config import load_robot_config


def test_szabo_arm_has_15_inertial_and_24_total_base_parameters() -> None:
    """Szabó & Szádeczky-Kardoss 2021, Table 2: 24 identifiable parameters, 15 inertial + 3 friction per joint."""
    regressor = load_robot_config("szabo_3dof").build_regressor()
    base = structural_base_parameters(regressor)
    assert base.n_base == 24
    inertial = [j for j in base.independent if j < regressor.layout.inertial.stop]
    assert len(inertial) == 15
    classes = dict(zip(base.names, base.classes()))
    # Paper: all friction parameters identifiable alone; link 1's inertia except Izz has no effect.
    assert all(classes[f"joint{i}.{p}"] == IDENTIFIABLE for i in (1, 2, 3) for p in ("tau_s", "tau_sc", "tau_v"))
    assert classes["link1.m"] == UNIDENTIFIABLE and classes["link1.Ixx"] == UNIDENTIFIABLE
    assert classes["link1.Izz"] == COMBINATION
    assert classes["link2.Ixy"] == IDENTIFIABLE and classes["link3.my"] == IDENTIFIABLE


def test_base_parameters_preserve_torques(rng: np.random.Generator) -> None:
    """Y theta == Y_base theta_base, and full -> base -> full keeps the torques for any reference."""
    regressor = load_robot_config("valkyrie_arm").build_regressor()
    base = structural_base_parameters(regressor)
    q, v, a = random_states(regressor.robot, rng, 50)
    Y = regressor.rows(q, v, a)
    theta = rng.normal(size=regressor.n_parameters)
    theta_base = base.to_base(theta)
    assert_allclose(base.base_regressor(Y) @ theta_base, Y @ theta, rtol=1e-8, atol=1e-8)
    other = base.to_full(theta_base, rng.normal(size=regressor.n_parameters))
    assert_allclose(Y @ other, Y @ theta, rtol=1e-8, atol=1e-8)
    assert_allclose(base.to_base(other), theta_base, rtol=1e-10, atol=1e-10)
    assert_allclose(base.projection @ theta, theta_base, rtol=1e-12, atol=1e-12)


def test_base_regressor_has_full_column_rank(rng: np.random.Generator) -> None:
    """The base regressor of fresh random states is well conditioned (no hidden dependency)."""
    regressor = load_robot_config("valkyrie_arm").build_regressor()
    base = structural_base_parameters(regressor)
    Y = base.base_regressor(regressor.rows(*random_states(regressor.robot, rng, 300)))
    flat = Y.reshape(-1, base.n_base)
    s = np.linalg.svd(flat / np.linalg.norm(flat, axis=0), compute_uv=False)
    assert s[-1] / s[0] > 1e-4
