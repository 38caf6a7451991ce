"""Every node as its own process, started as users start it: its entry point with a scenario's
parameter file (what ``ros2 run`` and ``ros2 launch`` do), answering over DDS and ending cleanly on
the signals ``ros2 launch`` and service managers send; and the valkyrie_arm node set as separate
processes (``run_scenario(..., processes=True)``, what ``motor-ident run --processes`` does)."""

from __future__ import annotations

import ast
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from motor_ident.ros.runtime.shutdown import BACKSTOP_AFTER_S, EXIT_BLOCKED
from tests.conftest import REPO
from tests.ros.conftest import Ros

pytestmark = pytest.mark.ros

# A node must be gone before ros2 launch escalates to the next signal (5 s after SIGINT, 5 s after
# SIGTERM). Nodes exit in well under a second on a quiet machine; 3 s were seen at load average 17.
EXIT_BOUND_S = 5.0
# Start-up of 24 node processes at once (imports, robot models, the identifier's SDP compilation)
# on a busy machine.
STARTUP_TIMEOUT_S = 150.0
SIGNALS = {
    "sigint": (signal.SIGINT,),
    "sigterm": (signal.SIGTERM,),
    # ros2 launch after Ctrl-C: the terminal's SIGINT to the process group, then its own
    "double_sigint": (signal.SIGINT, signal.SIGINT),
}
SECOND_SIGNAL_AFTER_S = 0.005
AUTOSTART_MODE = "sigterm"
"""The managed nodes of this mode are started with ``-p autostart:=true`` (they configure and
activate themselves); the others are configured and activated over their lifecycle services."""


@dataclass(frozen=True)
class Probe:
    """How the test talks to one node: its scenario file, extra ``-p`` parameters, what the probe
    feeds it (``joint_states``, ``motor_states``, ``command_topic``: desired torques on the topic
    the node's ``command_topic`` parameter names in the scenario file) and the topic whose message
    shows the node processed something."""

    scenario: str
    answer: str
    answer_type: str  # "joint_state", "array", "trajectory"
    feeds: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()


PROBES = {
    # lockstep: the simulators publish their state and wait for a command (stepping at 10-20 Hz
    # with the held one) instead of running a 1 kHz loop each: 6 of them share the machine here
    "sim_robot": Probe("valkyrie_arm", "joint_states", "joint_state", parameters=("lockstep:=true",)),
    "elastic_sim": Probe("xin_bench", "motor_states", "joint_state", parameters=("lockstep:=true",)),
    # every state into the buffer and a refit every 10: ~/parameters after a fraction of a second
    "identifier": Probe(
        "valkyrie_arm",
        "identifier/parameters",
        "array",
        ("joint_states",),
        ("sample_rate:=1000.0", "refit_period:=0.01"),
    ),
    "feedforward": Probe("valkyrie_arm", "effort_controller/commands", "array", ("joint_states",)),
    "excitation": Probe("valkyrie_arm", "feedforward/reference", "trajectory", ("joint_states",)),
    "decoupler": Probe("icub_torso", "decoupler/motor_states", "joint_state", ("joint_states",)),
    "pwm_feedforward": Probe("icub_torso", "pwm_controller/commands", "array", ("joint_states", "command_topic")),
    "vrec_controller": Probe("xin_bench", "effort_controller/commands", "array", ("joint_states", "motor_states")),
}
JOINTS = {
    "valkyrie_arm": ("shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"),
    "icub_torso": ("torso_pitch", "torso_roll", "torso_yaw"),
    "xin_bench": ("joint1",),
}
MOTORS = {"xin_bench": ("motor1",)}


@dataclass
class NodeRun:
    """One node process under test and what the probe saw of it."""

    node: str
    mode: str
    namespace: str
    process: Any  # motor_ident.ros.runtime.processes.NodeProcess
    answers: list[Any] = field(default_factory=list)
    samples_fed: int = 0
    exit_seconds: float | None = None


def _setup_nodes() -> dict[str, str]:
    """setup.py's NODES (entry point name -> "module:main"), read without running setup()."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NODES" for t in node.targets):
            return ast.literal_eval(node.value)  # type: ignore[no-any-return]
    raise AssertionError("setup.py has no NODES")


def test_runner_nodes_are_the_entry_points() -> None:
    """The runner's node table and setup.py's entry points name the same nodes, each entry point
    the launcher that runs the ``main`` of the module holding the runner's class, and every
    scenario file names only them."""
    from motor_ident.ros.runtime import entry_points as launcher
    from motor_ident.ros.runtime.runner import NODES, node_class, scenario_nodes

    entry_points = _setup_nodes()
    assert sorted(entry_points) == sorted(NODES) == sorted(launcher.MODULES)
    for name, target in NODES.items():
        module, cls = target.split(":")
        assert entry_points[name] == f"motor_ident.ros.runtime.entry_points:{name}"
        assert launcher.MODULES[name] == module and callable(getattr(launcher, name))
        assert node_class(name).__name__ == cls
    for path in sorted((REPO / "config" / "scenarios").glob("*.yaml")):
        assert set(scenario_nodes(path)) <= set(NODES), path.name


def test_unknown_node_in_scenario_file_is_named(tmp_path) -> None:
    """A scenario file naming a node motor_ident does not have is refused before anything starts, naming it."""
    from motor_ident.errors import ConfigError
    from motor_ident.ros.runtime.runner import run_scenario

    path = tmp_path / "typo.yaml"
    path.write_text(
        (REPO / "config" / "scenarios" / "valkyrie_arm.yaml").read_text()
        + "\nfeedforwrd:\n  ros__parameters:\n    kp: [1.0]\n"
    )
    with pytest.raises(ConfigError, match=r"\['feedforwrd'\].*no such node"):
        run_scenario(path, duration=0.1, processes=True)
    with pytest.raises(ConfigError, match=r"overrides for \['decoupler'\]"):
        run_scenario("valkyrie_arm", duration=0.1, overrides={"decoupler": {"robot": "icub_torso"}})


def test_bad_value_in_scenario_is_refused_before_any_node_starts(tmp_path) -> None:
    """An integer written for a float, or an override out of range, stops the run with the scenario
    loader's message (file, node, key, value, what is expected) before any node process starts."""
    from motor_ident.errors import ConfigError
    from motor_ident.ros.runtime.runner import run_scenario

    path = tmp_path / "bad.yaml"
    doc = yaml.safe_load((REPO / "config" / "scenarios" / "valkyrie_arm.yaml").read_text())
    doc["excitation"]["ros__parameters"]["ramp_time"] = 3
    path.write_text(yaml.safe_dump(doc))
    logs = tmp_path / "logs"
    with pytest.raises(ConfigError, match=r"bad\.yaml: node excitation: ramp_time = 3: expected a float .*write 3\.0"):
        run_scenario(path, duration=0.1, processes=True, log_dir=logs)
    assert not logs.exists()
    with pytest.raises(ConfigError, match=r"node identifier: r2_threshold = 1\.5: expected a float > 0, <= 1"):
        run_scenario("valkyrie_arm", duration=0.1, overrides={"identifier": {"r2_threshold": 1.5}})


def _namespaced_parameter_file(scenario: str, namespace: str, directory: Path) -> Path:
    """The scenario's parameter file with each node's key moved into ``namespace`` (``/ns/node:``),
    as a user writes it for namespaced nodes: a plain ``node:`` key matches only ``/node``."""
    import yaml

    content = yaml.safe_load((REPO / "config" / "scenarios" / f"{scenario}.yaml").read_text())
    path = directory / f"{namespace.strip('/')}.yaml"
    path.write_text(yaml.safe_dump({f"{namespace}/{node}": section for node, section in content.items()}))
    return path


def _command_topic(scenario: str, node: str) -> str:
    """The desired-torque topic a node listens to in a scenario: its ``command_topic`` parameter."""
    import yaml

    content = yaml.safe_load((REPO / "config" / "scenarios" / f"{scenario}.yaml").read_text())
    return str(content[node]["ros__parameters"].get("command_topic", "effort_controller/commands"))


def _message_types() -> dict[str, Any]:
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    return {"joint_state": JointState, "array": Float64MultiArray, "trajectory": JointTrajectory}


@pytest.fixture(scope="module")
def node_runs(tmp_path_factory) -> dict[tuple[str, str], NodeRun]:
    """Each entry point three times (once per signal), every process in its own namespace, all
    started at once; a probe node feeds each its inputs until it answers, then each process gets
    its signal in turn and the test times its exit."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS
    from motor_ident.ros.runtime.processes import NodeProcess, change_states, stop_processes
    from motor_ident.ros.runtime.runner import is_managed, node_command
    from motor_ident.ros.wire.conversions import make_array, make_joint_state

    log_dir = tmp_path_factory.mktemp("node_logs")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RCUTILS_COLORIZED_OUTPUT": "0"}
    runs: dict[tuple[str, str], NodeRun] = {}
    for node, probe in PROBES.items():
        for mode in SIGNALS:
            namespace = f"/{mode}_{node}"
            arguments = [
                *("--params-file", str(_namespaced_parameter_file(probe.scenario, namespace, log_dir))),
                *("-r", f"__ns:={namespace}", "-r", f"/clock:={namespace}/clock"),  # one robot per namespace
                *(a for p in probe.parameters for a in ("-p", p)),
                *(("-p", "autostart:=true") if mode == AUTOSTART_MODE and is_managed(node) else ()),
            ]
            log = log_dir / f"{mode}_{node}.log"
            runs[node, mode] = NodeRun(
                node, mode, namespace, NodeProcess(node, node_command(node, arguments), log, env)
            )
    processes = [run.process for run in runs.values()]
    ros = Ros()
    prober = ros.probe("process_probe")
    types = _message_types()
    rng = np.random.default_rng(7)
    feeders = []
    try:
        for run in runs.values():
            probe = PROBES[run.node]
            prober.create_subscription(
                types[probe.answer_type], f"{run.namespace}/{probe.answer}", run.answers.append, STATE_QOS
            )
            joints, motors = JOINTS[probe.scenario], MOTORS.get(probe.scenario, ())
            publishers = {}
            for what in probe.feeds:
                if what == "command_topic":
                    topic = f"{run.namespace}/{_command_topic(probe.scenario, run.node)}"
                    publishers[what] = prober.create_publisher(Float64MultiArray, topic, COMMAND_QOS)
                else:
                    publishers[what] = prober.create_publisher(JointState, f"{run.namespace}/{what}", STATE_QOS)

            def feed(run: NodeRun = run, probe: Probe = probe, joints=joints, motors=motors, publishers=publishers):
                t = 0.001 * (run.samples_fed + 1)
                n = len(joints)
                for what in probe.feeds:
                    if what == "joint_states":
                        q, qd, tau = rng.uniform(-0.5, 0.5, (3, n))
                        publishers[what].publish(make_joint_state(joints, t, q, qd, tau))
                    elif what == "motor_states":
                        q, qd = rng.uniform(-0.5, 0.5, (2, n))
                        publishers[what].publish(make_joint_state(motors, t, q, qd, np.zeros(n)))
                    else:
                        publishers[what].publish(make_array(rng.uniform(-1.0, 1.0, n)))
                run.samples_fed += 1

            feeders.append((run, feed))

        # the managed nodes start unconfigured: configure, then activate, as launch does (but those
        # started with autostart:=true, which do it themselves)
        managed = [
            (f"{run.namespace}/{run.node}", run.process)
            for run in runs.values()
            if is_managed(run.node) and run.mode != AUTOSTART_MODE
        ]
        for transition in ("configure", "activate"):
            change_states(prober, ros.executor, processes, managed, transition, STARTUP_TIMEOUT_S)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if all(run.answers or run.process.popen.poll() is not None for run in runs.values()):
                break
            for run, feed in feeders:
                if not run.answers and PROBES[run.node].feeds:
                    feed()
            end = time.monotonic() + 0.02
            while time.monotonic() < end:
                ros.executor.spin_once(timeout_sec=0.01)
        for run in runs.values():
            if not run.answers or run.process.popen.poll() is not None:
                continue  # its test reports it
            start = time.monotonic()
            for k, sig in enumerate(SIGNALS[run.mode]):
                if k:
                    time.sleep(SECOND_SIGNAL_AFTER_S)
                run.process.popen.send_signal(sig)
            run.process.stopped_with = SIGNALS[run.mode][-1].name
            try:
                run.process.popen.wait(timeout=EXIT_BOUND_S + 8.0)
                run.exit_seconds = time.monotonic() - start
            except Exception:  # noqa: BLE001 -- stop_processes below ends it; its test fails
                pass
        yield runs
    finally:
        stop_processes(processes)
        ros.close()


NODE_MODES = [(node, mode) for node in PROBES for mode in SIGNALS]


@pytest.mark.parametrize("node", list(PROBES))
def test_node_process_answers(node_runs, node: str) -> None:
    """Started from its entry point with its scenario's parameter file, the node answers over DDS:
    a simulator publishes states, the others respond to the probe's states / commands with finite
    output for the scenario's joints; a managed node once activated over its lifecycle services,
    or by itself with ``-p autostart:=true``."""
    probe = PROBES[node]
    for mode in SIGNALS:
        run = node_runs[node, mode]
        assert run.answers, (
            f"{node} ({mode}) never answered on {probe.answer}; the end of its log:\n{run.process.tail()}"
        )
        message = run.answers[-1]
        joints = JOINTS[probe.scenario]
        if probe.answer_type == "joint_state":
            if node in ("sim_robot", "elastic_sim"):
                assert tuple(message.name) == (MOTORS.get(probe.scenario, ()) if "motor" in probe.answer else joints)
            assert len(message.name) == len(joints) and len(message.position) == len(joints)
            assert np.all(np.isfinite(message.position))
        elif probe.answer_type == "array":
            values = np.asarray(message.data)
            assert values.size == len(joints) or (node == "identifier" and values.size > len(joints))
            assert np.all(np.isfinite(values))
        else:
            assert tuple(message.joint_names) == joints and message.points
            assert np.all(np.isfinite([p.positions for p in message.points]))


@pytest.mark.parametrize(("node", "mode"), NODE_MODES, ids=[f"{n}-{m}" for n, m in NODE_MODES])
def test_node_process_exits_cleanly(node_runs, node: str, mode: str) -> None:
    """After SIGINT, SIGTERM or a double SIGINT the node process ends with exit code 0 within
    EXIT_BOUND_S (ros2 launch escalates after 5 s)."""
    run = node_runs[node, mode]
    if not run.answers:
        pytest.fail(f"{node} never answered (see test_node_process_answers)")
    code = run.process.popen.poll()
    tail = run.process.tail()
    assert run.exit_seconds is not None, f"{node} still ran 10 s after {mode}; the end of its log:\n{tail}"
    assert code == 0, f"{node} exited with {code} after {mode}; the end of its log:\n{tail}"
    assert run.exit_seconds <= EXIT_BOUND_S, f"{node} took {run.exit_seconds:.2f} s to exit after {mode}"


def test_run_processes_reaches_an_open_gate(tmp_path) -> None:
    """``motor-ident run FILE --processes``: the valkyrie_arm nodes, each in its own process in
    lockstep, open the gate with finite commands, and each process ends on the runner's SIGINT with
    exit code 0. The buffer is 2 s (window_duration 2) so the gate can open at 2 s instead of 5 s.

    Commands are counted by the recorder in the runner's process, which may fall behind on a busy
    machine and miss some (its command subscription keeps only the latest): half the states is
    the bound, not all of them.

    The identifier is not in the lockstep loop: when the loop runs faster than real time its
    process can fall behind and lose states from its queue (140 of the window's 200 samples at 5 s
    in a loaded suite run); 10 s leave it time to fill the window.
    """
    import json
    import subprocess
    import sys

    import yaml

    duration = 10.0
    content = yaml.safe_load((REPO / "config" / "scenarios" / "valkyrie_arm.yaml").read_text())
    content["identifier"]["ros__parameters"]["window_duration"] = 2.0
    scenario = tmp_path / "valkyrie_arm_short_window.yaml"
    scenario.write_text(yaml.safe_dump(content))
    out = tmp_path / "run"
    command = [str(Path(sys.executable).parent / "motor-ident"), "run", str(scenario), "--processes"]
    command += ["--duration", str(duration), "--out-dir", str(out), "--json", str(out / "run.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "run.json").read_text())
    assert summary["sim_time_s"] >= duration
    assert summary["gate_opened_at_s"] is not None and summary["gate_open_at_end"], summary["gate_reason"]
    assert summary["nonfinite_commands"] == 0
    assert summary["commands_published"] >= 0.5 * 1000 * duration  # 1 kHz simulated
    processes = {p["node"]: p for p in summary["processes"]}
    assert sorted(processes) == ["excitation", "feedforward", "identifier", "sim_robot"]
    for node, p in processes.items():
        assert (p["returncode"], p["stopped_with"]) == (0, "SIGINT"), f"{node}: see {p['log']}"
        assert Path(p["log"]).parent == out / "logs"


# --- stopping a node that blocks ---------------------------------------------------------------

BLOCK_S = 20.0  # how long the slow node blocks: longer than launch's SIGINT-to-SIGKILL 15 s
# The bound a blocked node exits within after the signal: the watchdog's immediate exit
# (motor_ident.ros.runtime.shutdown.EXIT_AFTER_S) plus the interpreter's exit on a loaded machine; below
# launch's SIGKILL (15 s) and the runner's (10 s). A node blocked in Python code exits sooner:
# at the watchdog's SIGTERM (3 s) or at once while starting.
STOP_BOUND_S = 8.0
SLOW_CASES = [(where, sig) for where in ("import", "constructor", "destroy") for sig in ("SIGINT", "SIGTERM")]


def _mapped_fastdds_segments(pid: int) -> set[str]:
    """The Fast DDS shared-memory segments process ``pid`` maps, not the port files every
    participant shares: /dev/shm is shared with every other process of the machine."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    paths = {line.split()[-1] for line in maps.splitlines() if "/dev/shm/fastdds_" in line}
    return {path for path in paths if not Path(path).name.startswith("fastdds_port")}


def _existing_fastdds_segments() -> set[str]:
    return {str(path) for path in Path("/dev/shm").glob("fastdds_*") if not path.name.startswith("fastdds_port")}


def _own_fastdds_segments(pid: int, before: set[str]) -> set[str]:
    """The segments of process ``pid``'s own participant: those it maps less those that existed
    before it started (``before``: the segments of the peers it writes to, which a participant maps
    too)."""
    return _mapped_fastdds_segments(pid) - before


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(("where", "sig"), SLOW_CASES, ids=[f"{w}-{s}" for w, s in SLOW_CASES])
def test_blocked_node_stops_within_bound(tmp_path, where: str, sig: str) -> None:
    """A node blocked for 20 s while importing, in its constructor or in ``destroy_node`` ends
    within STOP_BOUND_S of SIGINT or SIGTERM with exit code 0, no KeyboardInterrupt traceback and
    none of its Fast DDS segments left in /dev/shm; a teardown blocked past the watchdog's delay gets its stacks
    dumped (naming the blocked ``destroy_node``) and the abandoned step logged."""
    import subprocess
    import sys

    log = tmp_path / "slow.log"
    before = _existing_fastdds_segments()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.ros.slow_node", where, str(BLOCK_S)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        marker = "running" if where == "destroy" else f"blocking in {where}"
        assert _wait_for(lambda: marker in log.read_text() or process.poll() is not None, STARTUP_TIMEOUT_S)
        assert process.poll() is None, log.read_text()
        segments = _own_fastdds_segments(process.pid, before)
        start = time.monotonic()
        process.send_signal(getattr(signal, sig))
        code = process.wait(timeout=BLOCK_S)
        seconds = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    assert code == 0, f"exit code {code} after {sig}:\n{text}"
    assert seconds <= STOP_BOUND_S, f"{seconds:.1f} s after {sig}:\n{text}"
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    if where == "destroy":
        assert "stop watchdog] still running" in text and " in destroy_node" in text, text
        assert "abandoned on a signal: ['destroy_node (SIGTERM)']" in text, text
    else:
        assert f"stopping ({sig} while starting)" in text or f"stopped by {sig} while starting" in text, text
    if where != "import":  # the participant existed: its segments must be gone
        assert segments, "no Fast DDS segment seen in /proc/PID/maps: the /dev/shm check would prove nothing"
        assert _wait_for(lambda: not any(Path(p).exists() for p in segments), 2.0), sorted(segments)


# Blocks signals cannot end: (slow_node mode, the line it prints before the signal is sent, exit
# code, what the log must show). The watchdog's exit is EXIT_BLOCKED (124), faulthandler's C timer's is 1.
UNINTERRUPTIBLE = {
    # code that catches BaseException swallows each StopRequested
    "destroy_stubborn": ("running", EXIT_BLOCKED, "after the stop request: exiting now"),
    # the main thread never returns to Python: the signal itself starts the watchdog
    "callback_c": ("blocking in a callback", EXIT_BLOCKED, "after the stop request: exiting now"),
    # no Python thread runs at all: only the C timer armed at the request ends it
    "destroy_c_locked": ("running", 1, "Timeout ("),
}


@pytest.mark.parametrize("where", list(UNINTERRUPTIBLE))
def test_watchdog_ends_a_node_that_signals_cannot_stop(tmp_path, where: str) -> None:
    """A node blocked where no signal handler can end the block (a teardown that swallows every
    signal, a callback held in C code, a teardown held in C code with the interpreter lock) is
    ended by the stop watchdog with its stacks written, before the runner's SIGKILL (10 s)."""
    import subprocess
    import sys

    marker, expected_code, says = UNINTERRUPTIBLE[where]
    log = tmp_path / f"{where}.log"
    before = _existing_fastdds_segments()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.ros.slow_node", where, str(BLOCK_S)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    segments: set[str] = set()
    try:
        assert _wait_for(lambda: marker in log.read_text() or process.poll() is not None, STARTUP_TIMEOUT_S)
        segments = _own_fastdds_segments(process.pid, before)
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=BLOCK_S)
        seconds = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for path in segments:  # an immediate exit leaves them, as a SIGKILL does: what `fastdds shm clean` removes
            for leftover in (Path(path), Path(f"{path}_el")):
                leftover.unlink(missing_ok=True)
    text = log.read_text()
    assert code == expected_code, text
    assert says in text and " in block" in text, text  # the stacks name the blocked function
    assert seconds < BACKSTOP_AFTER_S + 2.0, f"{seconds:.1f} s after SIGINT:\n{text}"  # before the runner's SIGKILL


def _child_pid(parent: int, name: str) -> int | None:
    """The process id of ``parent``'s child whose command line names ``name`` (Linux /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and name.encode() in cmdline:
            return int(stat.parent.name)
    return None


def test_stopped_simulator_gives_safe_output_and_says_so(tmp_path, ros) -> None:
    """``motor-ident run --processes`` with ``use_sim_time``: the simulated robot's process is
    stopped (SIGSTOP: /clock and joint_states stop, the process lives on). The feedforward's
    watchdog, on the steady clock, switches to its safe output (``safe_mode: zero``: every command
    after it exactly 0) and its /diagnostics (also on the steady clock) say the state is stale and
    /clock stopped; the identifier's say /clock stopped."""
    import subprocess
    import sys

    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.runtime.common import STATE_QOS

    content = yaml.safe_load((REPO / "config" / "scenarios" / "valkyrie_arm.yaml").read_text())
    content["feedforward"]["ros__parameters"].update({"safe_mode": "zero", "diagnostics_period": 0.2})
    content["identifier"]["ros__parameters"]["diagnostics_period"] = 0.2
    scenario = tmp_path / "valkyrie_arm_zero.yaml"
    scenario.write_text(yaml.safe_dump(content))
    commands: list[tuple[float, list[float]]] = []
    statuses: list[tuple[float, str, str]] = []  # (received, name, message)
    probe = ros.probe("clock_probe")
    probe.create_subscription(
        Float64MultiArray,
        "effort_controller/commands",
        lambda m: commands.append((time.monotonic(), list(m.data))),
        STATE_QOS,
    )

    def on_diagnostics(msg: DiagnosticArray) -> None:
        statuses.extend((time.monotonic(), s.name, s.message) for s in msg.status)

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 50)
    out = tmp_path / "run"
    command = [str(Path(sys.executable).parent / "motor-ident"), "run", str(scenario), "--processes"]
    run = subprocess.Popen(
        [*command, "--duration", "600", "--out-dir", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    sim = None
    try:
        assert ros.spin_until(lambda: len(commands) > 200 or run.poll() is not None, STARTUP_TIMEOUT_S), "no commands"
        assert run.poll() is None, run.communicate()[0].decode()[-3000:]
        sim = _child_pid(run.pid, "sim_robot")
        assert sim is not None, "no sim_robot process under motor-ident run"
        os.kill(sim, signal.SIGSTOP)
        stopped = time.monotonic()

        def said(name: str, *words: str) -> bool:
            return any(t > stopped and n.endswith(name) and all(w in m for w in words) for t, n, m in statuses)

        def safe() -> bool:
            after = [data for t, data in commands if t > stopped + 0.5]
            return bool(after) and said("feedforward", "stale", "/clock stopped", "safe output")

        assert ros.spin_until(lambda: safe() and said("identifier", "/clock stopped"), 60.0), statuses[-6:]
    finally:
        if sim is not None:
            os.kill(sim, signal.SIGCONT)
        run.send_signal(signal.SIGINT)
        log = run.communicate(timeout=120)[0].decode()
    after = [data for t, data in commands if t > stopped + 0.5]
    assert all(value == 0.0 for data in after for value in data), after[:3]
    assert "SIGKILL" not in log, log[-3000:]


def test_sigint_to_an_active_feedforward_sends_its_safe_output(tmp_path, ros) -> None:
    """The feedforward process, configured and activated over its lifecycle services and commanding,
    gets SIGINT: its last command, received after the signal, is its safe output (``safe_mode:
    zero``), and it exits 0."""
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS
    from motor_ident.ros.runtime.processes import NodeProcess, change_states, stop_processes
    from motor_ident.ros.runtime.runner import node_command
    from motor_ident.ros.wire.conversions import make_joint_state

    joints = JOINTS["valkyrie_arm"]
    arguments = ["--params-file", str(REPO / "config" / "scenarios" / "valkyrie_arm.yaml")]
    arguments += ["-p", "safe_mode:=zero", "-p", "use_sim_time:=false", "-r", "__ns:=/safe_stop"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = NodeProcess("feedforward", node_command("feedforward", arguments), tmp_path / "feedforward.log", env)
    probe = ros.probe("safe_stop_probe", namespace="/safe_stop")
    commands: list[list[float]] = []
    probe.create_subscription(
        Float64MultiArray, "effort_controller/commands", lambda m: commands.append(list(m.data)), COMMAND_QOS
    )
    states = probe.create_publisher(JointState, "joint_states", STATE_QOS)
    reference = probe.create_publisher(JointTrajectory, "feedforward/reference", 10)
    hold = JointTrajectory(joint_names=list(joints))
    hold.points = [JointTrajectoryPoint(positions=[0.1] * 4, time_from_start=Duration(sec=s)) for s in (0, 1000)]
    count = [0]

    def feed() -> None:
        count[0] += 1
        now = probe.get_clock().now().nanoseconds * 1e-9
        hold.header.stamp = probe.get_clock().now().to_msg() if count[0] == 1 else hold.header.stamp
        reference.publish(hold)
        states.publish(make_joint_state(joints, now, np.zeros(4), np.zeros(4), np.zeros(4)))

    try:
        for transition in ("configure", "activate"):
            change_states(
                probe, ros.executor, [process], [("/safe_stop/feedforward", process)], transition, STARTUP_TIMEOUT_S
            )
        assert ros.spin_until(lambda: any(any(c) for c in commands), 60.0, each=feed), process.tail()
        process.popen.send_signal(signal.SIGINT)
        process.stopped_with = "SIGINT"
        sent = len(commands)
        assert ros.spin_until(lambda: process.popen.poll() is not None and len(commands) > sent, 20.0), process.tail()
        ros.spin_until(lambda: False, 0.3)  # what is still on its way
    finally:
        stop_processes([process])
    assert process.popen.returncode == 0, process.tail()
    assert commands[-1] == [0.0] * 4, commands[-3:]
