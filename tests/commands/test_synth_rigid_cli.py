"""``synth --floating-base --plant rigid`` as a user runs it: the record, the truth, and one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

from motor_ident.io.floating_record import load_floating_record
from tests.commands.test_bad_input import run_cli
from tests.commands.test_torque_source_cli import motor_ident
from tests.sim.test_rigid_humanoid import REDUCED


def test_synth_on_the_rigid_plant(tmp_path: Path) -> None:
    """The rigid plant writes a record with the robot's joints and feet, and says which plant made it."""
    robot = tmp_path / "small_romeo.yaml"
    robot.write_text(REDUCED)
    done = motor_ident(
        "synth", "--robot", str(robot), "--floating-base", "--plant", "rigid", "--duration", "1", "--rate", "200",
        "--out", str(tmp_path / "r.npz"), "--json", str(tmp_path / "truth.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "rigid plant" in done.stdout and "soles fixed in the simulation" in done.stdout
    truth = json.loads((tmp_path / "truth.json").read_text())
    record = load_floating_record(tmp_path / "r.npz")
    assert truth["plant"] == "rigid" and record.q.shape == (200, 15) and record.wrench.shape == (200, 2, 6)
    assert abs(record.wrench[:, :, 2].sum(axis=1).mean() / (9.81 * truth["true_total_mass"]) - 1.0) < 0.01
    for extra, says in (
        (["--plant", "rigid", "--single-support", "1"], "the rigid plant keeps both feet on the ground"),
        (["--plant", "bullet"], "plant = 'bullet'"),
    ):
        argv = ["synth", "--robot", str(robot), "--floating-base", "--out", str(tmp_path / "x.npz"), *extra]
        code, err = run_cli(argv)  # refused before any work: in this process
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
