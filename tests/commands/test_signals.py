"""Signal fuzzer: SIGINT / SIGTERM at seeded random times during ``synth``, ``identify`` and ``validate``.

Each command runs as a process in its own session and the signal goes to its whole process group,
as a terminal's Ctrl-C does. After it: no traceback; exit status the command's own (it finished
first) or 130 / 143 with one line; every output whole or absent (a record that loads, YAML and JSON
that parse, a report folder whose page has all its figures), no temporary file left; the inputs
unchanged (SHA-256). The delay counts from the moment motor_ident's handlers are installed (seen
in /proc/PID/status): before that the interpreter is still starting (its site hooks), which no
command can answer.

The default suite runs a handful of cases; ``MOTOR_IDENT_FUZZ_SIGNALS=N`` runs N seeded times for
every command and signal, ``MOTOR_IDENT_FUZZ_SPAN=F`` stretches the times drawn by F (a loaded
machine, where the commands run slower, needs more to reach their last stages).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from motor_ident.cli import main

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status (Linux)")

RUNS = int(os.environ.get("MOTOR_IDENT_FUZZ_SIGNALS", "0"))
SPAN = float(os.environ.get("MOTOR_IDENT_FUZZ_SPAN", "1"))  # x each command's window: a loaded machine runs slower
SIGNALS = {"SIGINT": (signal.SIGINT, 130, "interrupted"), "SIGTERM": (signal.SIGTERM, 143, "terminated")}


@dataclass(frozen=True)
class Command:
    """A command line (``{i}`` inputs, ``{o}`` outputs folder), its exit status when it finishes, its outputs."""

    argv: tuple[str, ...]
    done: int
    files: tuple[str, ...]
    folders: tuple[str, ...] = ()
    seconds: float = 3.0  # signals are sent up to this long after start (about its run time, idle machine)


COMMANDS = {
    "synth": Command(
        (
            "synth",
            "--robot",
            "szabo_3dof",
            "--duration",
            "2",
            "--rate",
            "100",
            "--out",
            "{o}/r.npz",
            "--json",
            "{o}/r.json",
        ),
        done=0,
        files=("r.npz", "r.json"),
        seconds=2.0,
    ),
    "identify": Command(
        ("identify", "{i}/a.npz", "--robot", "szabo_3dof", "--out", "{o}/p.yaml", "--json", "{o}/p.json")
        + ("--validate-on", "{i}/b.npz", "--report", "{o}/report"),
        done=1,  # szabo_3dof's 2 s fit predicts b.npz worse than the nominal model: the verdict fails
        files=("p.yaml", "p.json"),
        folders=("report", "report/validation"),
        seconds=7.0,
    ),
    "validate": Command(
        ("validate", "{i}/p.yaml", "{i}/b.npz", "--robot", "szabo_3dof", "--json", "{o}/v.json", "--report", "{o}/v"),
        done=1,
        files=("v.json",),
        folders=("v",),
        seconds=5.0,
    ),
}
DEFAULT = [("identify", "SIGINT"), ("identify", "SIGTERM"), ("validate", "SIGINT"), ("synth", "SIGTERM")]
CASES = [(c, s, k) for c in COMMANDS for s in SIGNALS for k in range(RUNS)] if RUNS else [(c, s, 0) for c, s in DEFAULT]


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def _handlers_installed(pid: int) -> bool:
    """True once the process catches SIGTERM (motor_ident's `stoppable` is running; Python alone does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # already gone
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)  # type: ignore[union-attr]
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _run(argv: list[str], signum: int, delay: float) -> tuple[subprocess.CompletedProcess[str], bool]:
    """Run ``motor-ident ARGV``; signal its group ``delay`` s after its handlers are in place: (result, sent)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "motor_ident.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, signalled as a terminal signals its foreground group
    )
    sent = False
    try:
        for _ in range(12000):  # at most 60 s for the interpreter to start
            if _handlers_installed(proc.pid):
                break
            try:
                proc.wait(timeout=0.005)
                break
            except subprocess.TimeoutExpired:
                pass
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signum)
            sent = True
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), sent


def _check_file(path: Path) -> None:
    """A whole output: the record loads, YAML and JSON parse into a mapping."""
    if path.suffix == ".npz":
        with np.load(path) as record:
            assert "t" in record.files and record["t"].size > 0, path
    elif path.suffix == ".yaml":
        assert isinstance(yaml.safe_load(path.read_text()), dict), path
    else:
        assert isinstance(json.loads(path.read_text()), dict), path


def _check_folder(path: Path) -> None:
    """A whole report folder: its page and every figure the page shows."""
    page = (path / "index.html").read_text()
    figures = re.findall(r"src=['\"]([^'\"]+\.png)['\"]", page)
    assert figures, path
    assert all((path / f).is_file() for f in figures), (path, figures)


@pytest.mark.parametrize(("command", "signal_name", "run"), CASES)
def test_a_signal_at_any_time_leaves_whole_outputs_and_one_line(
    szabo_recordings: Path, tmp_path: Path, command: str, signal_name: str, run: int
) -> None:
    """Signalled at a seeded random time: no traceback, 130 / 143 or the finished status, outputs whole or absent."""
    spec = COMMANDS[command]
    signum, code, word = SIGNALS[signal_name]
    delay = random.Random(f"{command}-{signal_name}-{run}").uniform(0.0, SPAN * spec.seconds)
    before = _digest(szabo_recordings)
    argv = [a.format(i=szabo_recordings, o=tmp_path) for a in spec.argv]
    done, sent = _run(argv, signum, delay)
    case = f"{command} {signal_name} after {delay:.3f} s (sent: {sent}): exit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, case
    assert done.returncode in (spec.done, code), case
    if done.returncode == code:
        assert done.stderr.strip().splitlines()[-1] == f"motor-ident {command}: {word}", case
    finished = done.returncode == spec.done
    for name in spec.files:
        if finished or (tmp_path / name).exists():
            _check_file(tmp_path / name)
    for name in spec.folders:
        if finished or (tmp_path / name).exists():
            _check_folder(tmp_path / name)
    present = [name for name in (*spec.files, *spec.folders) if (tmp_path / name).exists()]
    print(f"signal-fuzz {command} {signal_name} {delay:.3f} s sent={sent} exit={done.returncode} outputs={present}")
    leftovers = [p.name for p in tmp_path.rglob(".*") if p.name.endswith(".tmp")]
    assert leftovers == [], case
    assert _digest(szabo_recordings) == before, case


def test_a_ctrl_c_while_the_fleet_cluster_stops_after_the_run_keeps_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fleet identify``: Ctrl-C during the local cluster's shutdown, every row stored: summary, JSON, exit 0."""
    import motor_ident.commands.fleet as fleet_command
    import motor_ident.fleet.cluster as cluster_module
    from motor_ident.fleet.cluster import RunSummary

    class Cluster:
        def close(self, timeout: float) -> None:
            raise KeyboardInterrupt  # the terminal's Ctrl-C while the workers stop

    argv = ["fleet", "simulate", "--robots", "1", "--days", "2", "--stationary", "--duration", "1", "--rate", "50"]
    assert main([*argv, "--out", str(tmp_path / "rec")]) == 0
    monkeypatch.setattr(cluster_module, "local_cluster", lambda workers: Cluster())
    monkeypatch.setattr(fleet_command, "_run", lambda *args: RunSummary(identified=2, workers=1))
    argv = ["fleet", "identify", str(tmp_path / "rec"), "--robot", "valkyrie_arm", "--store", str(tmp_path / "store")]
    assert main([*argv, "--json", str(tmp_path / "run.json")]) == 0
    out = capsys.readouterr().out
    assert "interrupted while the local cluster stopped" in out and "2 recordings identified" in out
    assert json.loads((tmp_path / "run.json").read_text())["identified"] == 2
