"""The icub_torso scenario from the single-process runner: every state answered with a finite command."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


def test_icub_torso_scenario_runs() -> None:
    """One simulated second of config/scenarios/icub_torso.yaml over DDS, lockstep."""
    from motor_ident.ros.runner import run_scenario

    result = run_scenario("icub_torso", duration=1.0, lockstep=True)
    rec = result.recording
    assert result.robot == "icub_torso" and result.joints == ("torso_pitch", "torso_roll", "torso_yaw")
    assert rec.states >= 950 and rec.commands >= 0.95 * rec.states
    assert rec.nonfinite_commands == 0
    assert result.identifier_summary["dropped_samples"] == 0
