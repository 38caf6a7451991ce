"""Drive gains from an unloaded and a loaded run of a 6-DoF arm logging motor currents."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.estimation.drive_gains import CurrentRun, identify_drive_gains, payload_attachment
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.errors import EstimationError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.synthetic import source_record


def _runs(mass: float, seed: int = 3) -> tuple[CurrentRun, np.ndarray]:
    config = load_robot_config("ur5_currents")
    made = source_record(config, payload_mass=mass, duration=20.0, rate_hz=100.0, seed=seed)
    r = made.record
    assert r.qd is not None and r.qdd is not None and r.current is not None and made.true_drive_gains is not None
    return CurrentRun(r.q, r.qd, r.qdd, r.current), made.true_drive_gains


def test_gains_recovered_within_two_percent_and_their_uncertainty() -> None:
    """2.5 kg at the flange: every gain within 2 % of the truth and within 4 reported standard deviations."""
    config = load_robot_config("ur5_currents")
    regressor = config.build_regressor()
    unloaded, truth = _runs(0.0)
    loaded, truth_loaded = _runs(2.5)
    np.testing.assert_array_equal(truth, truth_loaded, err_msg="same seed, same simulated motors")
    nominal = config.torque_converter().drive_gains
    assert np.all(np.abs(truth / nominal - 1.0) >= 0.019), "the nominal gains are a few percent off"
    joint, _ = payload_attachment(regressor.robot, "")
    fit = identify_drive_gains(
        regressor,
        structural_base_parameters(regressor),
        config.build_transmission(),
        unloaded,
        loaded,
        payload_mass=2.5,
        payload_joint=joint,
    )
    error = fit.gains / truth - 1.0
    assert np.all(np.abs(error) < 0.02), f"relative errors {error}"
    assert np.all(np.abs(fit.gains - truth) < 4.0 * fit.gains_std), f"z = {(fit.gains - truth) / fit.gains_std}"


def test_without_a_payload_run_the_scale_is_refused() -> None:
    """Currents of one run cannot fix the scale: the error says so and asks for the payload run."""
    config = load_robot_config("ur5_currents")
    regressor = config.build_regressor()
    unloaded, _ = _runs(0.0)
    with pytest.raises(EstimationError, match="scale is not identifiable.*--payload-data FILE --payload-mass KG"):
        identify_drive_gains(
            regressor,
            structural_base_parameters(regressor),
            config.build_transmission(),
            unloaded,
            None,
            payload_mass=None,
        )
