"""``motor-ident experiment``: Guedelha et al.'s phases on one simulated motor, and the same from the saved record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main


def _run(args: list[str], out: Path) -> dict:
    assert main([*args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_torso_motor_friction_then_pwm_online_and_offline(tmp_path: Path) -> None:
    """Motor 2 of the torso: truth recovered in simulation; the saved record gives the same numbers offline."""
    common = ["--scenario", "icub_torso", "--motor", "2", "--duration", "10", "--seed", "4"]
    friction = _run(["experiment", "friction", *common, "--save", str(tmp_path / "f.npz")], tmp_path / "f.json")
    assert friction["motor"] == "m_0B3M1"
    for key in ("sigma_s_pos", "sigma_s_neg", "k_v"):
        assert abs(friction["error_pct"][key]) < 5.0, (key, friction["error_pct"])
    assert friction["column"] == pytest.approx([0.55, -0.55, 0.25], abs=0.01)  # measured, not read from T
    rmse = friction["low_velocity_rmse"]
    assert rmse["stribeck"] < rmse["coulomb_viscous"]

    pwm_args = ["experiment", "pwm", *common, "--friction", str(tmp_path / "f.json"), "--save", str(tmp_path / "p.csv")]
    pwm = _run(pwm_args, tmp_path / "p.json")
    assert abs(pwm["error_pct"]["k_pwm"]) < 2.0 and pwm["condition_number"] > 1.0

    offline = ["--scenario", "icub_torso", "--motor", "m_0B3M1"]
    again = _run(["experiment", "friction", *offline, "--data", str(tmp_path / "f.npz")], tmp_path / "f2.json")
    assert again["sigma_s_pos"] == pytest.approx(friction["sigma_s_pos"], rel=1e-9)
    assert "truth" not in again and again["source"].endswith("f.npz")
    pwm_offline = [
        "experiment",
        "pwm",
        *offline,
        "--data",
        str(tmp_path / "p.csv"),
        "--friction",
        str(tmp_path / "f.json"),
    ]
    again = _run(pwm_offline, tmp_path / "p2.json")
    assert again["k_pwm"] == pytest.approx(pwm["k_pwm"], rel=1e-6)  # CSV keeps 10 significant digits


def test_uncoupled_leg_motor(tmp_path: Path) -> None:
    """An uncoupled joint's motor (named after the joint) runs through the same path, column [1]."""
    result = _run(
        ["experiment", "friction", "--scenario", "icub_right_leg", "--motor", "r_knee", "--duration", "8"],
        tmp_path / "knee.json",
    )
    assert result["column"] == pytest.approx([1.0], abs=5e-3)  # joint velocity noise 2e-3 rad/s
    assert abs(result["error_pct"]["sigma_s_neg"]) < 5.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["friction", "--scenario", "icub_torso", "--motor", "7"], "--motor 7"),
        (["pwm", "--scenario", "icub_torso", "--motor", "0", "--data", "x.npz"], "--friction"),
        (["friction", "--scenario", "icub_torso", "--motor", "0", "--data", "missing.npz"], "missing.npz"),
    ],
)
def test_bad_arguments_say_what_to_fix(args: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    """A wrong motor, a pwm phase without friction, or a missing file exit with status 2 and a clear message."""
    assert main(["experiment", *args]) == 2
    assert message in capsys.readouterr().err
