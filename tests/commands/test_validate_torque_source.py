"""``validate`` and ``identify --validate-on`` with currents: gains from the parameter file, own crop, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.commands.test_torque_source_cli import motor_ident, synth

CURRENTS = ["--robot", "ur5_currents", "--torque-source", "motor_current", "--duration", "30", "--rate", "100"]
FIRST, REST = "0:2000", "2000:"  # identify on the first 20 s, validate on the last 10 s (synth's seed sets the gains)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An unloaded and a loaded run of the same arm (same true drive gains), 30 s of currents as CSV."""
    out = tmp_path_factory.mktemp("currents")
    synth(out, "unloaded.csv", *CURRENTS, "--seed", "3")
    synth(out, "loaded.csv", *CURRENTS, "--seed", "3", "--payload-mass", "2.5")
    return {"unloaded": out / "unloaded.csv", "loaded": out / "loaded.csv", "second": out / "unloaded.csv", "dir": out}


@pytest.fixture(scope="module")
def identified(runs: dict[str, Path]) -> dict[str, object]:
    """identify with the payload run: the drive gains go into the parameter file with their std."""
    params, fit = runs["dir"] / "params.yaml", runs["dir"] / "fit.json"
    done = motor_ident(
        "identify", str(runs["unloaded"]), "--robot", "ur5_currents", "--torque-source", "motor_current",
        "--payload-data", str(runs["loaded"]), "--payload-mass", "2.5", "--out", str(params), "--json", str(fit),
        "--no-report", "--keep-samples", FIRST,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"params": params, "fit": json.loads(fit.read_text()), "stdout": done.stdout}


def test_the_parameter_file_carries_the_drive_gains_with_their_std(identified: dict[str, object]) -> None:
    doc = yaml.safe_load(Path(str(identified["params"])).read_text())
    fit = identified["fit"]
    assert isinstance(fit, dict)
    block = doc["drive_gains"]
    assert block["unit"] == "N m/A" and block["side"] == fit["drive_gain_side"]
    assert list(block["values"]) == fit["drive_gain_motors"]
    np.testing.assert_allclose(list(block["values"].values()), fit["drive_gains"])
    np.testing.assert_allclose(list(block["std"].values()), fit["drive_gains_std"])
    assert all(s > 0.0 for s in block["std"].values())
    assert fit["drive_gains_from"] == "payload run"


def test_identify_prints_one_line_per_stage_off_a_terminal(identified: dict[str, object]) -> None:
    """Not a terminal (a pipe here): each long stage announces itself on one stdout line, in order."""
    lines = [line for line in str(identified["stdout"]).splitlines() if line.startswith("identify: ")]
    stages = [line.split()[1] for line in lines]
    assert stages == ["reading", "drive", "fitting"], lines
    assert "unloaded.csv" in lines[0] and "loaded.csv" in lines[1]


def test_validate_converts_currents_with_the_parameter_files_gains(
    runs: dict[str, Path], identified: dict[str, object], tmp_path: Path
) -> None:
    """No joint torque columns needed: currents x the identified gains, compared in joint torque.

    synth's truth is the robot's nominal model, so the identified model can only tie with it: the
    verdict may fail on the "no worse than nominal" check by noise, never on the RRE limit.
    """
    out = tmp_path / "validate.json"
    done = motor_ident(
        "validate", str(identified["params"]), str(runs["second"]), "--robot", "ur5_currents",
        "--torque-source", "motor_current", "--keep-samples", REST, "--json", str(out),
    )  # fmt: skip
    assert done.returncode == (0 if json.loads(out.read_text())["passed"] else 1), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["torque_source"] == "motor_current"
    assert all("the nominal model's" in reason for reason in result["reasons"]), result["reasons"]
    np.testing.assert_allclose(result["rre_per_joint"], result["nominal_rre_per_joint"], rtol=0.08)
    assert "converted from motor_current" in result["compared_in"] and "joint torque" in done.stdout
    said = " ".join(done.stderr.split())
    assert f"drive gains [N m/A, motor side] from {identified['params']}" in said
    assert "nominal" not in said and "warning" not in said
    assert np.all(np.array(result["rre_per_joint"]) < 10.0), result["rre_per_joint"]


def test_the_config_gains_give_a_worse_prediction_than_the_identified(
    runs: dict[str, Path], identified: dict[str, object], tmp_path: Path
) -> None:
    """--gains FILE picks the gains explicitly: the config's own (a few % off the truth) predict worse."""
    config_gains = tmp_path / "config_gains.yaml"
    fit = identified["fit"]
    assert isinstance(fit, dict)
    from motor_ident.io.robot_config import load_robot_config

    source = load_robot_config("ur5_currents").torque_source
    config_gains.write_text(
        yaml.safe_dump(
            {
                "drive_gains": {
                    "side": source.gain_side,
                    "values": dict(zip(fit["drive_gain_motors"], source.drive_gains)),
                }
            }
        )
    )
    rre = {}
    for name, gains in (("identified", identified["params"]), ("config", config_gains)):
        out = tmp_path / f"{name}.json"
        done = motor_ident(
            "validate", str(identified["params"]), str(runs["second"]), "--robot", "ur5_currents",
            "--torque-source", "motor_current", "--gains", str(gains), "--keep-samples", REST, "--json", str(out),
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        rre[name] = np.array(json.loads(out.read_text())["rre_per_joint"])
    assert np.mean(rre["identified"]) < np.mean(rre["config"]), rre


def test_validate_on_has_its_own_range_and_fails_with_exit_1(runs: dict[str, Path], tmp_path: Path) -> None:
    """DATA's --keep-samples stays with DATA; --validate-keep-samples crops DATA2; a FAILED verdict exits 1."""
    common = ["--robot", "ur5_currents", "--torque-source", "motor_current", "--no-report"]
    gains = ["--payload-data", str(runs["loaded"]), "--payload-mass", "2.5"]
    out = tmp_path / "fit.json"
    done = motor_ident(
        "identify", str(runs["unloaded"]), *common, *gains, "--keep-samples", "0:1500",
        "--validate-on", str(runs["second"]), "--json", str(out),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["n_samples"] == 1500 and result["validation"]["n_samples"] == 3000
    assert "the whole recording" in " ".join(result["validation"]["notes"])
    done = motor_ident(
        "identify", str(runs["unloaded"]), *common, *gains, "--validate-on", str(runs["second"]),
        "--validate-keep-samples", "100:900", "--max-rre", "0.5", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    validation = json.loads(out.read_text())["validation"]
    assert validation["n_samples"] == 800 and validation["passed"] is False
    assert "verdict: FAILED" in done.stdout
