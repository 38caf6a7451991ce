"""Every option acts or is refused: contradicting options, options left without effect, positions in other units."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from motor_ident.cli import main
from motor_ident.io.data import load_record, save_record

ROBOT = "valkyrie_arm"


def run(argv: list[str]) -> tuple[int, str]:
    """``motor-ident ARGV`` in this process: (exit status, stderr)."""
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # the parser's refusals
            code = int(exc.code or 0)
    return code, err.getvalue()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2 s synthetic recording of the arm carrying qd and qdd (as synth writes them)."""
    path = tmp_path_factory.mktemp("data") / "arm.npz"
    assert run(["synth", "--robot", ROBOT, "--out", str(path), "--duration", "2"])[0] == 0
    return path


REFUSED_WHEN_PARSED = {
    "--report DIR --no-report": (
        "identify DATA --report {tmp}/rep --no-report",
        "--report and --no-report contradict each other",
    ),
    "--validate and --validate-on": (
        "identify DATA --validate 0.25 --validate-on DATA",
        "--validate and --validate-on are alternatives",
    ),
    "--gains and --payload-data": (
        "identify DATA --gains g.yaml --payload-data DATA --payload-mass 1",
        "--gains and --payload-data contradict each other",
    ),
    "--payload-frame alone": ("identify DATA --payload-frame wrist", "--payload-frame places the payload"),
    "--payload-mass alone": ("identify DATA --payload-mass 1", "--payload-data and --payload-mass go together"),
    "--alpha without nominal": ("identify DATA --alpha 0.5", "--method wls does not use it"),
    "--max-rre without --validate-on": ("identify DATA --max-rre 10", "--max-rre applies to --validate-on's"),
    "--validate-keep-time without --validate-on": (
        "identify DATA --validate-keep-time 1:2",
        "--validate-keep-time applies to --validate-on's",
    ),
    "--joint-states-topic with an NPZ": (
        "identify DATA --joint-states-topic /arm/joint_states",
        "--joint-states-topic names a topic of a rosbag2 bag",
    ),
    "--rows without --floating-base": ("identify DATA --rows all", "--rows applies to --floating-base only"),
    "--imu-tilt without --floating-base": ("identify DATA --imu-tilt trust", "--imu-tilt applies to --floating-base"),
    "--orientation-noise without --floating-base": (
        "identify DATA --orientation-noise ignore",
        "--orientation-noise applies to --floating-base",
    ),
    "--out with --floating-base": ("identify DATA --floating-base --out p.yaml", "--out does not apply with"),
    "synth --single-support": ("synth --out {tmp}/s.npz --single-support 2", "--single-support applies to"),
    "synth --plant": ("synth --out {tmp}/s.npz --plant rigid", "--plant applies to --floating-base only"),
    "synth --floating-base --payload-mass": (
        "synth --out {tmp}/s.npz --floating-base --payload-mass 1",
        "--payload-mass does not apply with --floating-base",
    ),
    "excite --block-weights": (
        "excite --criterion cond --block-weights 1 0 0 --out {tmp}/t.yaml",
        "--criterion cond does not use them",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_WHEN_PARSED))
def test_contradicting_or_idle_options_are_refused_before_any_work(case: str, tmp_path: Path) -> None:
    """One line, exit 2, nothing written; DATA is never read (it does not exist)."""
    line, expected = REFUSED_WHEN_PARSED[case]
    argv = line.format(tmp=tmp_path).replace("DATA", str(tmp_path / "missing.npz")).split() + ["--robot", ROBOT]
    code, err = run(argv)
    assert code == 2 and expected in err, err
    assert len(err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_a_default_repeated_is_accepted(recording: Path) -> None:
    """An option given its default value changes nothing: accepted (--alpha 0.9 with wls, --no-report alone)."""
    assert run(["identify", str(recording), "--robot", ROBOT, "--alpha", "0.9", "--no-report"])[0] == 0


def test_differentiation_options_on_a_recording_with_velocities_are_refused(recording: Path, tmp_path: Path) -> None:
    """qd and qdd recorded: --savgol-window / --derivative / --cutoff-hz are refused; without qdd they act."""
    base = ["identify", str(recording), "--robot", ROBOT, "--no-report"]
    code, err = run([*base, "--savgol-window", "1000"])
    assert code == 2 and "--savgol-window sets how velocities" in err and "carries both (qd and qdd)" in err, err
    code, err = run([*base, "--derivative", "butterworth", "--cutoff-hz", "1e9"])
    assert code == 2 and "--derivative and --cutoff-hz set how velocities" in err, err
    code, err = run([*base, "--cutoff-hz", "5"])
    assert code == 2 and "--cutoff-hz sets the Butterworth cut-off; Savitzky-Golay" in err, err
    positions_only = tmp_path / "positions.npz"
    save_record(positions_only, replace(load_record(recording), qd=None, qdd=None))
    code, err = run(["identify", str(positions_only), "--robot", ROBOT, "--no-report", "--savgol-window", "1000"])
    assert code == 2 and "Savitzky-Golay window" in err, err  # it acts: a window longer than the recording
    assert run(["identify", str(positions_only), "--robot", ROBOT, "--no-report", "--savgol-window", "0.1"])[0] == 0


def test_positions_in_degrees_are_refused_naming_the_joints(recording: Path, tmp_path: Path) -> None:
    """Positions in degrees (elbow up to ~70 where its limit is 2.17 rad): refused with the joints and a units hint."""
    record = load_record(recording)
    degrees = tmp_path / "degrees.csv"
    save_record(degrees, replace(record, q=np.degrees(record.q), qd=None, qdd=None))
    code, err = run(["identify", str(degrees), "--robot", ROBOT, "--no-report"])
    assert code == 2 and "positions far outside the URDF's limits" in err and "Degrees?" in err, err
    assert "elbow reaches" in err and "URDF limits -0.12 to 2.17" in err, err
    assert len(err.strip().splitlines()) == 1


def test_filter_torque_on_motor_currents_is_refused(tmp_path: Path) -> None:
    """Motor currents carry no joint torque to filter (--filter-torque used to end in a ValueError traceback)."""
    currents = tmp_path / "currents.npz"
    synth = ["synth", "--robot", ROBOT, "--out", str(currents), "--duration", "2", "--torque-source", "motor_current"]
    assert run(synth)[0] == 0
    argv = ["identify", str(currents), "--robot", ROBOT, "--torque-source", "motor_current", "--no-report"]
    code, err = run([*argv, "--filter-torque"])
    assert code == 2 and "--filter-torque filters a measured joint torque" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
