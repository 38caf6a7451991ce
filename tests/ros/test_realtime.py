"""Real-time priority, locked memory and CPU affinity of a node process (`motor_ident.ros.runtime.realtime`):
refused and unpermitted settings, and a node at SCHED_FIFO that still stops and whose watchdog
still runs when its loop spins."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from motor_ident.errors import ConfigError
from motor_ident.ros.runtime import realtime
from motor_ident.ros.runtime.shutdown import EXIT_AFTER_S, EXIT_BLOCKED
from motor_ident.scenario.nodes import NODE_SETTINGS, RealtimeSettings
from motor_ident.schema import specs
from tests.conftest import REPO

STARTUP_TIMEOUT_S = 60.0  # rclpy's import and discovery on a loaded machine
STOP_BOUND_S = 5.0  # ros2 launch's SIGTERM follows its SIGINT after 5 s
REALTIME_NODES = ("sim_robot", "feedforward", "decoupler", "pwm_feedforward", "vrec_controller", "elastic_sim")


def test_every_1khz_node_has_the_realtime_settings() -> None:
    """The 1 kHz nodes and their stand-in hardware declare the real-time settings, off by default."""
    for name in REALTIME_NODES:
        table = specs(NODE_SETTINGS[name])
        defaults = {key: table[key][2] for key in ("thread_priority", "lock_memory", "cpu_affinity")}
        assert defaults == {"thread_priority": 0, "lock_memory": False, "cpu_affinity": (-1,)}, name


@pytest.mark.parametrize("cpus", [(os.cpu_count() or 1) + 7, -1], ids=["absent", "any-among-ids"])
def test_cpu_affinity_the_process_cannot_have_is_refused(cpus: int) -> None:
    """A CPU this process may not use, or -1 beside ids, is one ConfigError naming the setting and the CPUs."""
    with pytest.raises(ConfigError, match=r"cpu_affinity = \[.*\]: expected \[-1\] \(any\) or ids of CPUs"):
        realtime.claim(RealtimeSettings(cpu_affinity=(0, cpus)))


def test_missing_permissions_are_one_warning_each(monkeypatch) -> None:
    """Without the permission, priority and memory locking each give one warning naming what to grant."""

    def refused(*_args: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    class Libc:
        def mlockall(self, _flags: int) -> int:
            return -1

    monkeypatch.setattr(realtime.os, "sched_setscheduler", refused)
    monkeypatch.setattr(realtime.ctypes, "CDLL", lambda *_a, **_k: Libc())
    monkeypatch.setattr(realtime.ctypes, "get_errno", lambda: errno.ENOMEM)
    warnings = realtime.claim(RealtimeSettings(thread_priority=40, lock_memory=True))
    assert len(warnings) == 2, warnings
    memory, priority = warnings
    assert "mlockall failed" in memory and "ulimit -l" in memory and "limits.conf" in memory, memory
    assert priority.startswith("thread_priority = 40: SCHED_FIFO not permitted"), priority
    assert all(word in priority for word in ("ulimit -r", "CAP_SYS_NICE", "/etc/security/limits.conf")), priority
    assert all("\n" not in warning for warning in warnings)


def _fifo_permitted() -> bool:
    probe = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"
    return hasattr(os, "sched_setscheduler") and subprocess.run([sys.executable, "-c", probe]).returncode == 0


needs_fifo = pytest.mark.skipif(not _fifo_permitted(), reason="SCHED_FIFO not permitted here")


def _start(where: str, log: Path) -> subprocess.Popen[bytes]:
    """tests/ros/slow_node.py at SCHED_FIFO 10 on CPU 0 with its memory locked."""
    args = ["-p", "thread_priority:=10", "-p", "cpu_affinity:=[0]", "-p", "lock_memory:=true"]
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.ros.slow_node", where, "60", "--ros-args", *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def _interrupt(
    process: subprocess.Popen[bytes],
    log: Path,
    marker: str,
    timeout: float,
    threads: dict[str, tuple[int, int, set[int]]] | None = None,
) -> tuple[int | None, float]:
    """SIGINT once ``marker`` is in the log (``threads`` filled just before); the exit code (None:
    still running after ``timeout``, then killed) and the seconds it took."""
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while marker not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None and marker in log.read_text(), log.read_text()
        if threads is not None:
            threads.update(_threads(process.pid))
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        return code, time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _threads(pid: int) -> dict[str, tuple[int, int, set[int]]]:
    """name (first of each) -> (policy, priority, CPUs) of process ``pid``'s threads."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        tid = int(task.name)
        name = (task / "comm").read_text().strip()
        out.setdefault(
            name if tid != pid else "main",
            (os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority, os.sched_getaffinity(tid)),
        )
    return out


@needs_fifo
def test_node_at_sched_fifo_stops_on_sigint(tmp_path) -> None:
    """A node with thread_priority runs every thread (its loop, the middleware's) at SCHED_FIFO on
    the CPUs asked for, and still stops on SIGINT within launch's bound, exit code 0."""
    log = tmp_path / "node.log"
    threads: dict[str, tuple[int, int, set[int]]] = {}
    code, seconds = _interrupt(_start("nowhere", log), log, "running", STOP_BOUND_S + 5.0, threads)
    text = log.read_text()
    assert threads["main"][:2] == (os.SCHED_FIFO, 10), threads
    assert any(name.startswith("dds.") for name in threads), threads  # the middleware's threads were seen
    assert all(policy == os.SCHED_FIFO and cpus == {0} for policy, _, cpus in threads.values()), threads
    assert code == 0 and seconds <= STOP_BOUND_S, f"exit {code} after {seconds:.1f} s:\n{text}"
    assert "not permitted" not in text and "mlockall failed" not in text, text


@needs_fifo
def test_watchdog_ends_a_spinning_realtime_loop(tmp_path) -> None:
    """A callback that spins at SCHED_FIFO on the process's only CPU and swallows every stop
    request is still ended by the stop watchdog (which runs one priority above the loop), with
    its stacks written, before the runner's SIGKILL (10 s)."""
    log = tmp_path / "spin.log"
    code, seconds = _interrupt(_start("spin_stubborn", log), log, "blocking in a callback", EXIT_AFTER_S + 6.0)
    text = log.read_text()
    assert code == EXIT_BLOCKED, f"exit {code} after {seconds:.1f} s (None: starved watchdog):\n{text}"
    assert "stop watchdog] still running" in text and " in spin" in text, text


def test_one_process_run_refuses_realtime_settings() -> None:
    """``motor-ident run`` without ``--processes`` puts every node in one process: real-time
    settings there are refused before any node starts, naming the node and the way out."""
    from motor_ident.ros.runtime.runner import run_scenario

    with pytest.raises(ConfigError, match=r"^feedforward: thread_priority, .* run with --processes$"):
        run_scenario("valkyrie_arm", duration=1.0, overrides={"feedforward": {"thread_priority": 10}})
