"""The motor-ident command: synth -> identify round trip, JSON keys, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from motor_ident.cli import main
from motor_ident.io.params import load_parameters
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import REPO

IDENTIFY_KEYS = {
    "r2_per_joint",
    "r2_uncentred_per_joint",
    "condition_number",
    "n_base_parameters",
    "heldout_r2_per_joint",
}


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_synth_then_identify(tmp_path: Path, suffix: str) -> None:
    """A synthetic record identifies with held-out R^2 >= 0.99 and writes YAML + JSON."""
    data = tmp_path / f"record{suffix}"
    assert (
        main(
            [
                "synth",
                "--robot",
                "valkyrie_arm",
                "--out",
                str(data),
                "--duration",
                "30",
                "--rate",
                "100",
                "--noise",
                "0.05",
            ]
        )
        == 0
    )
    out, report = tmp_path / "params.yaml", tmp_path / "fit.json"
    assert (
        main(
            [
                "identify",
                str(data),
                "--robot",
                "valkyrie_arm",
                "--validate",
                "0.2",
                "--out",
                str(out),
                "--json",
                str(report),
            ]
        )
        == 0
    )
    summary = json.loads(report.read_text())
    assert IDENTIFY_KEYS <= set(summary)
    assert min(summary["heldout_r2_per_joint"]) >= 0.99
    assert summary["n_base_parameters"] == 34
    config = load_robot_config("valkyrie_arm")
    params = load_parameters(out, expected_names=config.build_regressor().names)
    assert np.all(np.isfinite(params.values))


def test_identify_without_velocities_derives_them(tmp_path: Path) -> None:
    """A CSV with only t, q and tau is differentiated offline and still identifies well."""
    full = tmp_path / "full.csv"
    main(["synth", "--robot", "szabo_3dof", "--out", str(full), "--duration", "30", "--rate", "200", "--noise", "0.02"])
    header = full.read_text().splitlines()[0].split(",")
    keep = [i for i, name in enumerate(header) if name == "t" or name.startswith(("q.", "tau."))]
    table = np.loadtxt(full, delimiter=",", skiprows=1)[:, keep]
    slim = tmp_path / "slim.csv"
    np.savetxt(slim, table, delimiter=",", header=",".join(header[i] for i in keep), comments="")
    report = tmp_path / "fit.json"
    assert main(["identify", str(slim), "--robot", "szabo_3dof", "--validate", "0.25", "--json", str(report)]) == 0
    assert min(json.loads(report.read_text())["heldout_r2_per_joint"]) > 0.98


def test_identify_flags_a_reversed_torque_sign(tmp_path: Path) -> None:
    """A torque sensor wired with the wrong sign on the elbow: the fit is still reported, but as
    physically inconsistent (the elbow's friction comes out negative) with a pointer to
    --method sdp; the correct record is consistent, and --method sdp returns valid links."""
    from motor_ident.core.estimation.constraints import physical_constraints, violations

    data = tmp_path / "record.npz"
    args = ["--robot", "valkyrie_arm", "--duration", "20", "--rate", "100", "--noise", "0.05"]
    assert main(["synth", "--out", str(data), *args]) == 0
    summaries = {}
    for name, sign in (("right", 1.0), ("reversed", -1.0)):
        record = dict(np.load(data))
        record["tau"] = record["tau"] * np.array([1.0, 1.0, 1.0, sign])
        path, report = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
        np.savez(path, **record)
        assert main(["identify", str(path), "--robot", "valkyrie_arm", "--no-report", "--json", str(report)]) == 0
        summaries[name] = json.loads(report.read_text())
    assert summaries["right"]["physically_consistent"] is True
    assert summaries["reversed"]["physically_consistent"] is False
    warning = next(w for w in summaries["reversed"]["warnings"] if "not physically consistent" in w)
    assert "elbow.f" in warning and "--method sdp" in warning
    out = tmp_path / "sdp.yaml"
    path = tmp_path / "reversed.npz"
    assert (
        main(["identify", str(path), "--robot", "valkyrie_arm", "--method", "sdp", "--no-report", "--out", str(out)])
        == 0
    )
    regressor = load_robot_config("valkyrie_arm").build_regressor()
    params = load_parameters(out, expected_names=regressor.names)
    assert violations(params.values, physical_constraints(regressor), tolerance=1e-6) == []


def test_base_params_json(tmp_path: Path) -> None:
    """base-params reports Szabó & Szádeczky-Kardoss's counts for the 3-DoF arm."""
    report = tmp_path / "base.json"
    assert main(["base-params", "--robot", "szabo_3dof", "--json", str(report)]) == 0
    summary = json.loads(report.read_text())
    assert (summary["n_base_inertial"], summary["n_friction"], summary["n_total"]) == (15, 9, 24)


def test_errors_say_what_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing data file and an unknown robot exit 2 with a one-line explanation."""
    assert main(["identify", str(tmp_path / "none.npz"), "--robot", "valkyrie_arm"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["base-params", "--robot", "marvin"]) == 2
    assert "valkyrie_arm" in capsys.readouterr().err


def test_shipped_example_identifies() -> None:
    """The shipped example record is present and identifies."""
    assert (
        main(
            [
                "identify",
                str(REPO / "examples" / "valkyrie_arm_excitation.npz"),
                "--robot",
                "valkyrie_arm",
                "--validate",
                "0.25",
            ]
        )
        == 0
    )
