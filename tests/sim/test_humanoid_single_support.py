"""The simulated humanoid standing on one foot: the other foot lifted, what that adds to identification."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.floating_base.identification import (
    centre_of_mass,
    identify_floating_base,
    structural_base_parameters,
)
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.humanoid import HumanoidRun, HumanoidSimConfig, simulate_humanoid
from tests.sim.test_humanoid import reduced_config, regressor_samples


@pytest.fixture(scope="module")
def stepping(tmp_path_factory: pytest.TempPathFactory) -> tuple[RobotConfig, HumanoidRun]:
    """Six seconds of the reduced humanoid at 500 Hz: both feet, the right foot lifted a while, both feet."""
    config = load_robot_config(reduced_config(tmp_path_factory.mktemp("robot")))
    sim = HumanoidSimConfig(duration=6.0, rate_hz=500.0, single_support_phases=1, single_support_s=4.0)
    return config, simulate_humanoid(config, sim)


def test_one_foot_is_lifted_and_the_force_threshold_finds_it(stepping: tuple[RobotConfig, HumanoidRun]) -> None:
    """The schedule releases the right foot; its F/T then reads nothing and the threshold says so."""
    config, run = stepping
    lifted = ~run.contact[:, 1]
    assert run.contact[:, 0].all() and 0.1 < lifted.mean() < 0.4
    _, samples = regressor_samples(config, run)
    assert samples.supports() == ((0, 1), (0,))
    # the stance foot holds; around release and touchdown a nearly unloaded foot is not counted
    assert run.friction["holdable_loaded"] >= 0.95, run.friction


def test_single_support_determines_the_vertical_com(stepping: tuple[RobotConfig, HumanoidRun]) -> None:
    """Lifting a foot adds base parameters and makes the vertical CoM determined; the total mass stays right."""
    config, run = stepping
    assert config.floating_base is not None
    regressor, samples = regressor_samples(config, run)
    soles = config.floating_base.sole_frames
    double = structural_base_parameters(regressor, stance=soles, standing=samples.Q[0], samples=80)
    supports = [tuple(soles[c] for c in feet) for feet in samples.supports()]
    both = structural_base_parameters(regressor, supports=supports, standing=samples.Q[0], samples=80)
    assert both.n_base > double.n_base
    result = identify_floating_base(regressor, samples.Q, samples.V, samples.A, samples.F, base=both)
    mass_true = run.theta_true[0::10].sum()
    assert abs(float(result.mass.value) / mass_true - 1.0) < 5e-3
    assert list(result.com.identifiable) == [True, True, False]  # the left foot never left the ground
    # each foot lifted once (the schedule of two phases): the vertical CoM is determined
    alternating = structural_base_parameters(
        regressor, supports=[soles, soles[:1], soles[1:]], standing=samples.Q[0], samples=80
    )
    com = centre_of_mass(regressor, samples.Q[0], alternating, np.eye(alternating.n_base), result.theta)
    assert alternating.n_base > both.n_base and bool(np.all(com.identifiable))
