"""``--engine`` of ``motor-ident record`` and ``motor-ident demo``: the chosen plant runs and says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MOTOR_IDENT = str(Path(sys.executable).parent / "motor-ident")


def run(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``motor-ident ARGS`` as a subprocess, output captured."""
    return subprocess.run([MOTOR_IDENT, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("engine", ["pinocchio", "mujoco"])
def test_record_runs_and_names_the_chosen_engine(engine: str, tmp_path: Path) -> None:
    """record --engine E writes the bag from plant E and names it in its output and JSON."""
    summary = tmp_path / "rec.json"
    done = run(
        "record", "--engine", engine, "--duration", "0.5", "--out", str(tmp_path / "bag"), "--json", str(summary)
    )
    assert done.returncode == 0, done.stderr
    assert f"simulated on {engine}" in done.stdout
    payload = json.loads(summary.read_text())
    assert payload["engine"] == engine and payload["samples"] == 500


def test_an_unknown_engine_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """--engine takes pinocchio or mujoco; anything else is a usage error naming the choices."""
    done = run("record", "--engine", "bullet", "--out", str(tmp_path / "bag"))
    assert done.returncode == 2 and "pinocchio" in done.stderr and "mujoco" in done.stderr
    assert not (tmp_path / "bag").exists()


@pytest.mark.ros
def test_the_demo_identifies_the_independent_plant_by_default(tmp_path: Path) -> None:
    """A short ``motor-ident demo`` over DDS runs MuJoCo unless told otherwise and says so."""
    done = run("demo", "--duration", "1.0", "--out-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "simulated robot: mujoco" in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"] == "mujoco" and summary["nonfinite_commands"] == 0


def test_the_demo_takes_the_engine_a_scenario_can_use() -> None:
    """demo's default engine is MuJoCo, except for a scenario it cannot simulate (icub_torso: PWM motor chains)."""
    from motor_ident.commands.demo import demo_engine

    assert demo_engine("valkyrie_arm") == ("mujoco", None)
    engine, refusal = demo_engine("icub_torso")
    assert engine == "pinocchio" and refusal is not None and "command_interface = 'effort'" in refusal


def test_mujoco_asked_for_a_pwm_scenario_is_refused_in_one_line(tmp_path: Path) -> None:
    """``demo --scenario icub_torso --engine mujoco``: exit 2, one line saying why, before any node starts."""
    done = run("demo", "--scenario", "icub_torso", "--engine", "mujoco", "--duration", "1", "--out-dir", str(tmp_path))
    assert done.returncode == 2 and "pwm" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
