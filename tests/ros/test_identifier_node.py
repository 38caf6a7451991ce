"""The identifier node on its own: services, parameter file save / reload, corrupt file handling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros


def _node(ros, **params):
    from motor_ident.ros.nodes.identifier_node import IdentifierNode

    return ros.add(IdentifierNode, **params)


def _feed(node, seconds: float = 6.0) -> None:
    """Samples of the true robot along a Fourier motion, straight into the node's callback."""
    from motor_ident.core.excitation.fourier import random_fourier_trajectory
    from motor_ident.ros.wire.conversions import make_joint_state

    regressor = node.regressor
    theta = node.config.nominal_parameters(regressor)
    traj = random_fourier_trajectory(
        np.random.default_rng(2), n=regressor.robot.n, base_frequency=0.3, velocity_amplitude=1.5
    )
    t = np.arange(1, int(seconds * 1000)) / 1000.0
    q, qd, qdd = traj.evaluate(t)
    tau = regressor.predict(theta, q, qd, qdd)
    for k in range(t.size):
        node._on_state(make_joint_state(node.config.joints, t[k], q[k], qd[k], tau[k]))


def test_save_then_reload_as_nominal(ros, tmp_path: Path) -> None:
    """~/save writes the estimate atomically; a new node loads it as its nominal model."""
    from std_srvs.srv import Trigger

    path = tmp_path / "identified.yaml"
    node = _node(ros, parameters_file=str(path), window_duration=3.0)
    _feed(node)
    assert node.core.gate_open, node.core.gate.reason
    response = node._on_save(Trigger.Request(), Trigger.Response())
    assert response.success and path.is_file()
    estimate = node.core.fit.theta.copy()
    ros.destroy(node)
    reloaded = _node(ros, parameters_file=str(path))
    assert reloaded.nominal_source.startswith("saved parameters")
    np.testing.assert_allclose(reloaded.core.theta_nominal, estimate, rtol=1e-9, atol=1e-9)


def test_corrupt_parameter_file_falls_back_and_is_kept(ros, tmp_path: Path) -> None:
    """A corrupt file at start: nominal model, a clear error, the bad file moved aside intact."""
    path = tmp_path / "identified.yaml"
    path.write_text("motor_ident_parameters: 1\nparameters: {names: [a], values: [1.0, 2.0]\n")
    node = _node(ros, parameters_file=str(path))
    assert "rejected" in node.nominal_source
    kept = list(tmp_path.glob("identified.yaml.bad-*"))
    assert len(kept) == 1 and "values: [1.0, 2.0]" in kept[0].read_text()


def test_use_nominal_and_reset_services(ros) -> None:
    """use_nominal forces the nominal model; reset empties the buffer and closes the gate."""
    from std_srvs.srv import SetBool, Trigger

    node = _node(ros, window_duration=3.0)
    _feed(node)
    assert node.core.gate_open
    node._on_use_nominal(SetBool.Request(data=True), SetBool.Response())
    assert not node.core.gate_open and "forced" in node.core.gate.reason
    np.testing.assert_array_equal(node.core.active_theta, node.core.theta_nominal)
    node._on_use_nominal(SetBool.Request(data=False), SetBool.Response())
    assert node.core.gate_open
    node._on_reset(Trigger.Request(), Trigger.Response())
    assert not node.core.gate_open and node.core.window.count == 0


def test_saved_file_is_valid_yaml_with_names(ros, tmp_path: Path) -> None:
    """The saved file is plain YAML (safe-loadable) naming every parameter of the regressor."""
    from std_srvs.srv import Trigger

    path = tmp_path / "p.yaml"
    node = _node(ros, parameters_file=str(path), window_duration=3.0)
    _feed(node, 4.0)
    node._on_save(Trigger.Request(), Trigger.Response())
    doc = yaml.safe_load(path.read_text())
    assert doc["parameters"]["names"] == list(node.regressor.names)
    assert np.all(np.isfinite(doc["parameters"]["values"]))


def test_drive_gains_come_from_a_parameter_file(ros, tmp_path: Path) -> None:
    """drive_gains_file: currents are converted with the gains identify wrote, not the robot config's."""
    from motor_ident.io.params import DriveGains, ParameterSet, save_parameters

    motors = ("shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow")
    gains = DriveGains(
        values=dict(zip(motors, (0.11, 0.12, 0.13, 0.14))), side="motor", std=dict.fromkeys(motors, 1e-3)
    )
    path = tmp_path / "identified.yaml"
    save_parameters(path, ParameterSet(names=("a",), values=np.zeros(1), extra={"drive_gains": gains.block()}))
    node = _node(ros, torque_source="motor_current", drive_gains_file=str(path))
    np.testing.assert_allclose(node.inputs.converter.drive_gains, 100.0 * np.array([0.11, 0.12, 0.13, 0.14]))
