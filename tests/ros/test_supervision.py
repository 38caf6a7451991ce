"""Node processes never outlive their supervisor: ``motor-ident run --processes`` stopped by each
signal the world sends it (SIGINT, SIGTERM, SIGHUP, SIGKILL) while its feedforward commands the
simulated robot, and by Ctrl-C while its nodes start; and a node that gets Ctrl-C again and again
while it stops still exits 0.

The runs start at once, each in its own ROS domain (one probe context per domain): the simulated
robot and the feedforward (``safe_mode: zero``), whose reference the probe publishes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.ros

STARTUP_TIMEOUT_S = 150.0  # [s] until the feedforward commands: five runs start at once on a busy machine
GONE_WITHIN_S = 10.0  # [s] after the signal: the runner and every node it started have ended
CASES = {
    "sigint": signal.SIGINT,
    "sigterm": signal.SIGTERM,
    "sighup": signal.SIGHUP,
    "sigkill": signal.SIGKILL,
    "sigint-while-starting": signal.SIGINT,
}
JOINTS = ("shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow")


def _scenario(directory: Path) -> Path:
    """valkyrie_arm's simulated robot and feedforward, the feedforward's safe output zero torque."""
    content = yaml.safe_load((REPO / "config" / "scenarios" / "valkyrie_arm.yaml").read_text())
    content["feedforward"]["ros__parameters"]["safe_mode"] = "zero"
    path = directory / "supervised.yaml"
    path.write_text(yaml.safe_dump({name: content[name] for name in ("sim_robot", "feedforward")}))
    return path


def node_processes(parent: int) -> dict[int, str]:
    """Process id -> command line of ``parent``'s children started with ``--ros-args`` (Linux /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"--ros-args" in cmdline:
            found[int(stat.parent.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def running(pid: int, cmdline: str) -> bool:
    """Whether process ``pid`` still runs that command line (a zombie or a reused id does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return False
    return state != "Z" and now == cmdline


@dataclass
class SupervisedRun:
    """One ``motor-ident run --processes`` in its own ROS domain, and what its probe saw."""

    case: str
    domain: int
    runner: subprocess.Popen[str]
    probe: Any  # rclpy node in the domain's context
    executor: Any
    context: Any
    commands: list[tuple[float, list[float]]] = field(default_factory=list)
    nodes: dict[int, str] = field(default_factory=dict)
    signalled: float | None = None  # monotonic time of the signal
    code: int | None = None  # the runner's exit code
    leftover: dict[int, str] = field(default_factory=dict)  # node processes running then
    output: str = ""

    def commanding(self) -> bool:
        return any(any(c) for _, c in self.commands[-5:])

    def left(self) -> dict[int, str]:
        """The node processes still running."""
        return {pid: cmdline for pid, cmdline in self.nodes.items() if running(pid, cmdline)}


@pytest.fixture(scope="module")
def supervised_runs(tmp_path_factory, module_ros_domain: int) -> dict[str, SupervisedRun]:
    """Each case's runner started at once; each signalled once its feedforward commands (or, while
    starting, as soon as it has started a node); then bounded waits for the runner and its nodes."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from motor_ident.ros.runtime.common import STATE_QOS

    directory = tmp_path_factory.mktemp("supervised")
    scenario = _scenario(directory)
    hold = JointTrajectory(joint_names=list(JOINTS))  # stamp 0 on the simulated clock: 0.3 rad for 1000 s
    hold.points = [JointTrajectoryPoint(positions=[0.3] * len(JOINTS)) for _ in range(2)]
    hold.points[1].time_from_start.sec = 1000
    runs: dict[str, SupervisedRun] = {}
    references = {}
    try:
        for k, case in enumerate(CASES):
            domain = 200 + (module_ros_domain + k) % 30  # beside the modules' 100-199
            context = rclpy.Context()
            rclpy.init(context=context, domain_id=domain)
            probe = rclpy.create_node(f"supervision_probe_{k}", context=context)
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(probe)
            command = [str(Path(sys.executable).parent / "motor-ident"), "run", str(scenario), "--processes"]
            command += ["--duration", "600", "--out-dir", str(directory / case)]
            runner = subprocess.Popen(
                command,
                env={**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONUNBUFFERED": "1"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            run = SupervisedRun(case, domain, runner, probe, executor, context)
            probe.create_subscription(
                Float64MultiArray,
                "effort_controller/commands",
                lambda m, run=run: run.commands.append((time.monotonic(), list(m.data))),
                STATE_QOS,
            )
            references[case] = probe.create_publisher(JointTrajectory, "feedforward/reference", 10)
            runs[case] = run

        def spin(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for run in runs.values():
                    run.executor.spin_once(timeout_sec=0.005)

        started = time.monotonic()

        def send(run: SupervisedRun) -> None:
            run.nodes = node_processes(run.runner.pid)
            run.signalled = time.monotonic()
            run.runner.send_signal(CASES[run.case])
            print(f"{run.case}: {CASES[run.case].name} {run.signalled - started:.1f} s after the start")

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline and any(run.signalled is None for run in runs.values()):
            for case, run in runs.items():
                if run.signalled is not None or run.runner.poll() is not None:
                    continue
                if case == "sigint-while-starting":
                    if node_processes(run.runner.pid):
                        send(run)
                elif run.commanding():
                    send(run)
                else:
                    references[case].publish(hold)
            spin(0.05)
        end = time.monotonic() + GONE_WITHIN_S
        while time.monotonic() < end:
            for run in runs.values():
                if run.runner.poll() is None:  # a node it started after the signal counts too
                    run.nodes |= node_processes(run.runner.pid)
            if not any(run.left() for run in runs.values()):
                break
            spin(0.05)
        spin(0.3)  # commands still on their way
    finally:
        for run in runs.values():
            run.leftover = run.left()
            for pid in run.leftover:  # a failed case: end what it left
                os.kill(pid, signal.SIGKILL)
            try:  # the runner may still write its plots
                run.output = run.runner.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                run.runner.kill()
                run.output = run.runner.communicate()[0]
            run.code = run.runner.returncode
            run.executor.shutdown()
            run.probe.destroy_node()
            run.context.try_shutdown()
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("case", ["sigint", "sigterm", "sighup", "sigkill"])
def test_signal_to_the_runner_leaves_no_node_and_a_safe_command(supervised_runs, case: str) -> None:
    """SIGINT, SIGTERM or SIGHUP to the runner (forwarded to its nodes) or SIGKILL of the runner
    (the nodes' parent-death signal) while the feedforward commands: within 10 s no node process
    runs, the last command published is the safe output (zero), and nothing printed a traceback."""
    run = supervised_runs[case]
    assert run.signalled is not None, f"{case}: the feedforward never commanded\n{run.output[-3000:]}"
    assert len(run.nodes) == 2 and all(any(n in c for c in run.nodes.values()) for n in ("sim_robot", "feedforward"))
    assert not run.leftover, f"{case}: still running {GONE_WITHIN_S} s after the signal: {run.leftover}"
    after = [data for t, data in run.commands if t > run.signalled]
    assert after and after[-1] == [0.0] * len(JOINTS), f"{case}: last commands {after[-3:]}"
    signum = int(CASES[case])
    # the run ends early with what it recorded (0), or stops before it was under way (128 + signal)
    expected = (-signum,) if signum == signal.SIGKILL else (0, 128 + signum)
    assert run.code in expected, f"{case}: exit code {run.code}\n{run.output}"
    assert "Traceback" not in run.output, run.output


@pytest.mark.slow
def test_ctrl_c_while_the_nodes_start_is_one_line_and_exit_130(supervised_runs) -> None:
    """SIGINT to the runner while its nodes start: the nodes stop, the runner prints one line and
    exits 130 (no KeyboardInterrupt traceback)."""
    run = supervised_runs["sigint-while-starting"]
    assert run.signalled is not None, run.output[-3000:]
    assert run.code == 130, run.output
    assert not run.leftover, run.leftover
    stopped = [line for line in run.output.splitlines() if line.startswith("motor-ident run:")]
    assert stopped == [stopped[0]] and "stopped by SIGINT" in stopped[0], run.output
    assert "Traceback" not in run.output and "KeyboardInterrupt" not in run.output, run.output


def test_node_stopping_under_repeated_ctrl_c_exits_0(tmp_path) -> None:
    """A node that gets SIGINT every 20 ms from the moment it runs until it has exited (a terminal's
    Ctrl-C, launch's own, then a user pressing again) stops cleanly: exit code 0, no traceback.
    Before the signals were ignored once teardown was over, one landing while the interpreter
    exited killed the process (exit status -2)."""
    from motor_ident.ros.runtime.runner import node_command

    arguments = ["--params-file", str(REPO / "config" / "scenarios" / "valkyrie_arm.yaml"), "-r", "__ns:=/storm"]
    log = tmp_path / "sim_robot.log"
    with open(log, "wb") as out:
        node = subprocess.Popen(
            node_command("sim_robot", arguments),
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while b"simulating" not in log.read_bytes() and node.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert node.poll() is None, log.read_text()
        sent, end = 0, time.monotonic() + GONE_WITHIN_S
        while node.poll() is None and time.monotonic() < end:
            node.send_signal(signal.SIGINT)
            sent += 1
            time.sleep(0.02)
    finally:
        if node.poll() is None:
            node.kill()
        node.wait()
    text = log.read_text()
    assert node.returncode == 0, f"exit code {node.returncode} after {sent} SIGINTs:\n{text}"
    assert sent > 1 and "Traceback" not in text, text
