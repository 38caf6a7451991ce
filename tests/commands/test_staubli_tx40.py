"""A real coupled wrist through the shipped example: the Staubli TX40 log of FIGAROH's example.

Run as a user runs it (subprocesses, in the folder holding the two CSV files): motor encoders and
motor torques read through examples/staubli_tx40/spec.yaml and converted by the robot config's
wrist coupling, identified on t < 5.4 s and validated on the rest. Skips where
../shared/real_logs/staubli_tx40 is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LOG = REPO.parent / "shared" / "real_logs" / "staubli_tx40"
EXAMPLE = REPO / "examples" / "staubli_tx40"
MOTOR_IDENT = str(Path(sys.executable).parent / "motor-ident")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
FIGAROH_MOTOR_6 = {"motor_6.Ia": 0.00964, "motor_6.fv": 0.616, "motor_6.fc": 1.95}  # TX40_config.yaml: Iam6, fvm6, fsm6

pytestmark = pytest.mark.skipif(
    not (LOG / "pos_read_data.csv").is_file() or not (LOG / "curr_data.csv").is_file(),
    reason="the TX40 log (../shared/real_logs/staubli_tx40) is not here",
)


def motor_ident(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``motor-ident ARGS`` in the log's folder; assert it succeeded."""
    done = subprocess.run([MOTOR_IDENT, *map(str, args)], capture_output=True, text=True, env=ENV, cwd=LOG, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def fit(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """identify on t < 5.4 s with --validate-on the rest: the JSON and the parameter file."""
    out = tmp_path_factory.mktemp("tx40")
    motor_ident(
        "identify", "pos_read_data.csv", "--spec", EXAMPLE / "spec.yaml", "--robot", EXAMPLE / "robot.yaml",
        "--keep-time", "0:5.4", "--validate-on", "pos_read_data.csv", "--validate-keep-time", "5.4:",
        "--max-rre", "50", "--no-report", "--json", out / "fit.json", "--out", out / "params.yaml",
    )  # fmt: skip
    return json.loads((out / "fit.json").read_text()), out / "params.yaml"


def test_coupled_wrist_held_out_errors(fit: tuple[dict, Path]) -> None:
    """Held-out RRE: joints 1-4 below 25 %, the coupled wrist below 50 % (per-joint friction: 231 % and 78 %)."""
    validation = fit[0]["validation"]
    rre, nominal = validation["rre_per_joint"], validation["nominal_rre_per_joint"]
    assert validation["n_samples"] == 18000
    assert max(rre[:4]) < 25.0, rre
    assert rre[4] < 50.0 and rre[5] < 42.0, rre  # measured 46.1 and 38.5
    assert all(r < 0.5 * n for r, n in zip(rre, nominal)), (rre, nominal)


def test_motor_6_against_figaroh(fit: tuple[dict, Path]) -> None:
    """Motor 6's rotor inertia and friction, on q5 + q6, are within 2.5 std (and 20 %) of FIGAROH's values."""
    base, std = fit[0]["base_parameters"], fit[0]["base_parameter_std"]
    names = list(base)
    for name, peer in FIGAROH_MOTOR_6.items():
        value, sigma = base[name], std[names.index(name)]
        assert abs(value - peer) < 2.5 * sigma, (name, value, sigma, peer)
        assert abs(value - peer) < 0.2 * peer, (name, value, peer)


def test_validate_reads_both_files(fit: tuple[dict, Path], tmp_path: Path) -> None:
    """validate PARAMS pos_read_data.csv reads curr_data.csv beside it and gives --validate-on's numbers."""
    motor_ident(
        "validate", fit[1], "pos_read_data.csv", "--spec", EXAMPLE / "spec.yaml", "--robot", EXAMPLE / "robot.yaml",
        "--keep-time", "5.4:", "--max-rre", "50", "--json", tmp_path / "v.json",
    )  # fmt: skip
    rre = json.loads((tmp_path / "v.json").read_text())["rre_per_joint"]
    assert rre == pytest.approx(fit[0]["validation"]["rre_per_joint"], rel=1e-6)
