"""Launch files: checked statically, then run the way ``ros2 launch`` runs them, through launch_ros.

The static checks need nothing beyond Python. The runs need launch / launch_ros / ros2launch and
colcon (tools/setup.sh installs them from ``../shared/ros2_launch`` when that folder exists; a
sourced ROS 2 provides them otherwise) and skip without them. Each run builds on the session's
colcon install (`ament_install`), starts ``ros2launch.api.launch_a_launch_file`` in a
subprocess with the documented arguments, checks from a probe node in this process which nodes
are on the graph, that messages flow on the scenario's topics (a few seconds of them) and that
each node reports the parameters of the file it was given, then stops the launch with SIGINT: most
cases as Ctrl-C in a terminal does, to the whole process group (launch and every node get it, and
each node gets launch's own SIGINT a moment later), the others to launch alone (what a supervisor
that signals only launch does). Either way every node has to finish cleanly (exit code 0) before
launch escalates to SIGTERM, and the launch process has to exit 0.
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml

from tests.conftest import REPO
from tests.ros.conftest import Ros

LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))

# The arguments each launch file documents (docs/nodes.md, module docstrings).
DOCUMENTED_ARGUMENTS = {
    "identification.launch.py": {"params_file", "use_sim", "excite", "monitor", "autostart"},
    "valkyrie_arm.launch.py": {"params_file", "use_sim", "excite", "monitor", "autostart"},
    "icub_torso.launch.py": {"params_file", "use_sim", "excite", "pwm", "monitor", "autostart"},
    "xin_bench.launch.py": {"params_file", "use_sim", "autostart"},
}


def _entry_points() -> set[str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NODES" for t in node.targets):
            return {k.value for k in node.value.keys}  # type: ignore[union-attr]
    return set()


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == name]


def _first_string(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_is_consistent(path: Path) -> None:
    """Nodes or included launch files exist, the scenario file exists, arguments carry descriptions."""
    source = path.read_text()
    tree = ast.parse(source)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    executables = set(re.findall(r'(?:executable="|node\(")([a-z_]+)"', source))
    included = re.findall(r'"launch", "([a-z0-9_]+\.launch\.py)"', source)
    assert executables or included, f"{path.name} starts nothing"
    assert executables <= _entry_points()
    for name in included:
        assert (REPO / "launch" / name).is_file(), f"{path.name} includes a missing {name}"
    for scenario in re.findall(r'"scenarios", "([a-z0-9_]+\.yaml)"', source):
        assert (REPO / "config" / "scenarios" / scenario).is_file()
    for call in _calls(tree, "DeclareLaunchArgument"):
        description = next((k.value for k in call.keywords if k.arg == "description"), None)
        assert isinstance(description, ast.Constant) and description.value, f"{path.name}: argument without description"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_argument_read_is_declared_in_its_file(path: Path) -> None:
    """Each file declares the documented arguments and every LaunchConfiguration it reads (launch
    configurations are not scoped to an include: an undeclared one works only by accident), and
    every ``name:=`` of its docstring is one of them."""
    tree = ast.parse(path.read_text())
    declared = {_first_string(call) for call in _calls(tree, "DeclareLaunchArgument")}
    read = {_first_string(call) for call in _calls(tree, "LaunchConfiguration")}
    assert None not in read, f"{path.name}: LaunchConfiguration of a computed name (write the name out)"
    assert read <= declared, f"{path.name} reads undeclared {sorted(read - declared)}"
    assert declared == DOCUMENTED_ARGUMENTS[path.name]
    documented = set(re.findall(r"\b([a-z_]+):=", ast.get_docstring(tree) or ""))
    assert documented <= declared, f"{path.name}'s docstring shows {sorted(documented - declared)}"


# Third-party modules motor_ident and its launch files import, by where a ROS 2 user gets them:
# a rosdep key in package.xml, or the pip line of docs/nodes.md (rosdep has no key for these).
ROSDEP_KEYS = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "matplotlib": "python3-matplotlib",
    "pandas": "python3-pandas",
    "pinocchio": "pinocchio",
    **{
        name: name
        for name in (
            "rclpy",
            "ament_index_python",
            "builtin_interfaces",
            "rcl_interfaces",
            "rosgraph_msgs",
            "std_msgs",
            "sensor_msgs",
            "geometry_msgs",
            "trajectory_msgs",
            "diagnostic_msgs",
            "std_srvs",
            "lifecycle_msgs",
            "launch",
            "launch_ros",
        )
    },
}
PIP_ONLY = {"cvxpy", "rosbags", "apsw", "gmr", "rich", "threadpoolctl", "mujoco", "distributed", "duckdb", "pyarrow"}
# Optional (setup.py's extra "monitor", `pip install 'motor_ident[monitor]'`): module -> PyPI name.
MONITOR_EXTRA = {"foxglove": "foxglove-sdk", "websockets": "websockets"}


def _imported_modules(paths: list[Path]) -> set[str]:
    """Top-level names of the modules the files import, the standard library left out."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"motor_ident", "__future__"}


def test_package_xml_declares_every_runtime_import() -> None:
    """package.xml (format 3) has an exec_depend for every import rosdep can install, and the
    pip line of docs/nodes.md names the others."""
    import xml.etree.ElementTree as ElementTree

    manifest = ElementTree.parse(REPO / "package.xml").getroot()
    assert manifest.get("format") == "3"
    exec_depends = {e.text for e in manifest.iter("exec_depend")}
    imported = _imported_modules([*(REPO / "motor_ident").rglob("*.py"), *LAUNCH_FILES])
    known = set(ROSDEP_KEYS) | PIP_ONLY | set(MONITOR_EXTRA)
    assert imported <= known, f"unmapped imports {sorted(imported - known)}"
    setup = (REPO / "setup.py").read_text()
    assert all(f'"{name}>=' in setup for name in MONITOR_EXTRA.values()), "setup.py's monitor extra"
    missing = {ROSDEP_KEYS[name] for name in imported & set(ROSDEP_KEYS)} - exec_depends
    assert not missing, f"package.xml lacks exec_depend {sorted(missing)}"
    assert "ros2launch" in exec_depends  # `ros2 launch` itself
    pip_lines = [
        line for line in (REPO / "docs" / "nodes.md").read_text().splitlines() if line.startswith("pip install ")
    ]
    assert any(all(f'"{name}>=' in line for name in PIP_ONLY | {"clarabel"}) for line in pip_lines), pip_lines
    catkin_pkg = pytest.importorskip("catkin_pkg.package", reason="catkin_pkg (colcon-ros) validates package.xml")
    catkin_pkg.parse_package(REPO / "package.xml").validate()


def test_every_entry_point_imports() -> None:
    """Each node entry point names an importable main()."""
    import importlib

    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NODES" for t in node.targets):
            for value in node.value.values:  # type: ignore[union-attr]
                module, func = value.value.split(":")
                assert callable(getattr(importlib.import_module(module), func))


# --- runs through launch_ros -----------------------------------------------------------------

# What `ros2 launch motor_ident <file> <arguments>` runs, without the ros2 CLI. SIGINT gets Python's
# default handler back: a shell starting a background job hands it over ignored, a terminal does not.
RUNNER = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from ros2launch.api import get_share_file_path_from_package, launch_a_launch_file
path = get_share_file_path_from_package(package_name="motor_ident", file_name=sys.argv[1])
sys.exit(launch_a_launch_file(launch_file_path=path, launch_file_arguments=sys.argv[2:], noninteractive=True))
"""

START_TIMEOUT = 180.0  # [s] until every node is on the graph: imports of 4-6 processes on a loaded 2-core machine
FLOW_TIMEOUT = 60.0  # [s] until the first message on each topic
FLOW_WINDOW = 3.0  # [s] of messages counted per topic
EXIT_TIMEOUT = 40.0  # [s] launch gives its nodes 5 s after SIGINT, then SIGTERM, then SIGKILL 10 s later

Stop = Literal["group", "launch"]
"""How a launch test stops launch: SIGINT to its process group (a terminal's Ctrl-C) or to launch alone."""

STARTED = re.compile(r"\[INFO\] \[(?P<name>[a-z_]+)-\d+\]: process started with pid \[(?P<pid>\d+)\]")
FINISHED = re.compile(r"\[INFO\] \[(?P<name>[a-z_]+)-\d+\]: process has finished cleanly")
ESCALATED = re.compile(r"sending signal '(SIGTERM|SIGKILL)'|process has died")


class LaunchRun:
    """``ros2 launch motor_ident <file> <arguments>`` in a subprocess; its output lines timestamped on arrival."""

    def __init__(self, env: dict[str, str], cwd: Path, file: str, arguments: list[str]) -> None:
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            [sys.executable, "-c", RUNNER, file, *arguments],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, as a terminal's foreground job has
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def log(self) -> str:
        """Everything launch and the nodes printed so far."""
        return "\n".join(line for _, line in self.lines)

    def failed(self) -> bool:
        """Whether launch ended or one of its nodes died."""
        return self.process.poll() is not None or any(ESCALATED.search(line) for _, line in self.lines)

    def started(self) -> dict[str, int]:
        """Process id of each node launch started, by executable name."""
        return {m["name"]: int(m["pid"]) for _, line in self.lines if (m := STARTED.search(line))}

    def interrupt(self, stop: Stop) -> tuple[int, float, dict[str, float]]:
        """SIGINT to the process group (``group``: Ctrl-C in a terminal) or to launch alone
        (``launch``); launch's exit code, its stop time and each node's [s] after the signal."""
        sent = time.monotonic()
        if stop == "group":
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=EXIT_TIMEOUT)
        stopped = time.monotonic() - sent
        self._reader.join(timeout=10.0)
        finished = {m["name"]: t - sent for t, line in self.lines if (m := FINISHED.search(line)) and t >= sent}
        return code, stopped, finished

    def stop(self) -> None:
        """Leave nothing running, whatever happened: SIGINT, then SIGTERM to whatever ignores it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                self.process.wait(timeout=10.0)
        ended = {int(m[1]) for _, line in self.lines if (m := re.search(r"\[pid (\d+)", line))}
        for pid in set(self.started().values()) - ended:  # nodes launch left behind (it was killed)
            with contextlib.suppress(OSError):
                if b"motor_ident" in Path(f"/proc/{pid}/cmdline").read_bytes():  # not a reused pid
                    os.kill(pid, signal.SIGTERM)


class Probe:
    """A node in this process that watches the graph, counts messages and asks nodes for parameters."""

    TYPES = {
        "joint_states": "JointState",
        "motor_states": "JointState",
        "decoupler/motor_states": "JointState",
        "vrec_controller/deformation": "JointState",
        "vrec_controller/rigid_velocity": "JointState",
        "effort_controller/commands": "Float64MultiArray",
        "pwm_controller/commands": "Float64MultiArray",
        "feedforward/reference": "JointTrajectory",
    }

    def __init__(self, topics: list[str]) -> None:
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        from motor_ident.ros.runtime.common import STATE_QOS

        types = {"JointState": JointState, "Float64MultiArray": Float64MultiArray, "JointTrajectory": JointTrajectory}
        self.ros = Ros()
        self.node = self.ros.probe("launch_probe")
        self.counts = dict.fromkeys(topics, 0)
        self.last: dict[str, Any] = {}
        for topic in topics:
            # best effort matches both the sensor-data state publishers and the reliable command ones
            self.node.create_subscription(types[self.TYPES[topic]], topic, self._counter(topic), STATE_QOS)

    def _counter(self, topic: str):
        def on_message(msg: Any) -> None:
            self.counts[topic] += 1
            self.last[topic] = msg

        return on_message

    def spin_until(self, done, timeout: float) -> bool:
        """Process callbacks until ``done()`` or ``timeout`` [s]; whether it was done."""
        return self.ros.spin_until(done, timeout)

    def node_names(self) -> set[str]:
        return {name for name, _ in self.node.get_node_names_and_namespaces()}

    def count(self, seconds: float) -> dict[str, int]:
        """Messages received on each topic over the next ``seconds``."""
        self.counts = dict.fromkeys(self.counts, 0)
        end = time.monotonic() + seconds
        self.spin_until(lambda: time.monotonic() > end, seconds + 1.0)
        return dict(self.counts)

    def parameters(self, node: str, names: list[str], timeout: float = 30.0) -> dict[str, Any]:
        """Values of ``names`` as ``node`` reports them through its parameter services."""
        from rclpy.parameter import parameter_value_to_python
        from rclpy.parameter_client import AsyncParameterClient

        client = AsyncParameterClient(self.node, node)
        assert self.spin_until(client.services_are_ready, timeout), f"{node}'s parameter services never appeared"
        future = client.get_parameters(names)
        assert self.spin_until(future.done, timeout), f"{node} did not answer get_parameters"
        return {name: parameter_value_to_python(v) for name, v in zip(names, future.result().values, strict=True)}

    def close(self) -> None:
        self.ros.close()


@dataclass(frozen=True)
class Case:
    """One ``ros2 launch`` of a file with arguments and what it must start, publish and report."""

    file: str
    arguments: tuple[str, ...] = ()
    nodes: frozenset[str] = frozenset()  # on the graph
    absent: frozenset[str] = frozenset()  # neither started nor on the graph
    flowing: tuple[str, ...] = ()  # topics with messages
    unpublished: tuple[str, ...] = ()  # topics without a publisher (those of the nodes not started)
    silent: tuple[str, ...] = ()  # topics without a message (a node that waits for states)
    # params_file:=<a copy of this scenario with these values changed>: {node: {parameter: value}}
    edited: tuple[str, dict[str, dict[str, Any]]] | None = None
    reported: dict[str, dict[str, Any]] = field(default_factory=dict)  # parameters the nodes report
    stop: Stop = "group"


IDENTIFICATION = frozenset({"sim_robot", "identifier", "feedforward", "excitation"})
ICUB = IDENTIFICATION | {"decoupler", "pwm_feedforward"}
ARM_TOPICS = ("joint_states", "effort_controller/commands", "feedforward/reference")

CASES = {
    "identification-default": Case(
        "identification.launch.py",
        nodes=IDENTIFICATION,
        flowing=ARM_TOPICS,
        reported={"sim_robot": {"robot": "valkyrie_arm"}},
    ),
    "valkyrie-monitor": Case(
        "valkyrie_arm.launch.py",
        ("monitor:=true",),
        nodes=IDENTIFICATION | {"monitor"},
        flowing=ARM_TOPICS,
        reported={"monitor": {"host": "127.0.0.1", "allow_client_publish": False}},
    ),
    "identification-icub-params-no-excitation": Case(
        "identification.launch.py",
        ("excite:=false",),
        nodes=IDENTIFICATION - {"excitation"},
        absent=frozenset({"excitation", "decoupler", "pwm_feedforward"}),
        flowing=("joint_states", "effort_controller/commands"),
        unpublished=("feedforward/reference", "pwm_controller/commands"),
        edited=("icub_torso", {"identifier": {"window_duration": 3.21}}),
        reported={"sim_robot": {"robot": "icub_torso"}, "identifier": {"robot": "icub_torso", "window_duration": 3.21}},
    ),
    "valkyrie_arm-default": Case(
        "valkyrie_arm.launch.py",
        nodes=IDENTIFICATION,
        flowing=ARM_TOPICS,
        reported={"identifier": {"robot": "valkyrie_arm", "window_duration": 5.0}},
    ),
    "valkyrie_arm-robot-params-no-sim": Case(
        "valkyrie_arm.launch.py",
        ("use_sim:=false", "excite:=false"),
        nodes=frozenset({"identifier", "feedforward"}),
        absent=frozenset({"sim_robot", "excitation"}),
        unpublished=("joint_states", "feedforward/reference"),
        silent=("effort_controller/commands",),
        edited=("valkyrie_arm", {"identifier": {"window_duration": 3.21}, "feedforward": {"blend_rate": 12.5}}),
        reported={
            "identifier": {"window_duration": 3.21, "use_sim_time": False},
            "feedforward": {"blend_rate": 12.5, "use_sim_time": False},
        },
        stop="launch",
    ),
    "icub_torso-default": Case(
        "icub_torso.launch.py",
        nodes=ICUB,
        flowing=(*ARM_TOPICS, "motor_states", "decoupler/motor_states", "pwm_controller/commands"),
        reported={"decoupler": {"robot": "icub_torso"}, "pwm_feedforward": {"duty_limit": 1.0}},
    ),
    "icub_torso-robot-params-no-sim-no-pwm": Case(
        "icub_torso.launch.py",
        ("use_sim:=false", "pwm:=false"),
        nodes=frozenset({"identifier", "feedforward", "excitation", "decoupler"}),
        absent=frozenset({"sim_robot", "pwm_feedforward"}),
        unpublished=("joint_states", "motor_states", "pwm_controller/commands"),
        silent=("effort_controller/commands",),
        edited=("icub_torso", {"identifier": {"window_duration": 3.21}, "decoupler": {"motor_states_at_rotor": True}}),
        reported={
            "identifier": {"robot": "icub_torso", "window_duration": 3.21, "use_sim_time": False},
            "decoupler": {"motor_states_at_rotor": True, "use_sim_time": False},
        },
        stop="launch",
    ),
    "xin_bench-default": Case(
        "xin_bench.launch.py",
        nodes=frozenset({"elastic_sim", "vrec_controller"}),
        flowing=(
            "joint_states",
            "motor_states",
            "effort_controller/commands",
            "vrec_controller/deformation",
            "vrec_controller/rigid_velocity",
        ),
        reported={"vrec_controller": {"torque_limit": [272.0]}},
    ),
    "xin_bench-params-no-sim": Case(
        "xin_bench.launch.py",
        ("use_sim:=false",),
        nodes=frozenset({"vrec_controller"}),
        absent=frozenset({"elastic_sim"}),
        unpublished=("joint_states", "motor_states"),
        silent=("effort_controller/commands",),
        edited=("xin_bench", {"vrec_controller": {"torque_limit": [123.0]}}),
        reported={"vrec_controller": {"torque_limit": [123.0]}},
        stop="launch",
    ),
}

SHOW_ARGUMENTS = """
import sys
from ros2launch.api import get_share_file_path_from_package, print_arguments_of_launch_file
print_arguments_of_launch_file(
    launch_file_path=get_share_file_path_from_package(package_name="motor_ident", file_name=sys.argv[1])
)
"""


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_show_args_lists_the_documented_arguments(path: Path, ament_install) -> None:
    """``ros2 launch motor_ident <file> --show-args`` from the install lists each documented
    argument once, with its description, the included file's ones merged."""
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_ARGUMENTS, path.name],
        cwd=ament_install.workspace,
        env=ament_install.run_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    names = re.findall(r"^    '([a-z_]+)':\n        (\S.*)$", shown, flags=re.MULTILINE)
    assert sorted(name for name, _ in names) == sorted(DOCUMENTED_ARGUMENTS[path.name]), shown


# Measured per run (message counts over FLOW_WINDOW, stop times): printed with `pytest -s`.
MEASURED: dict[str, dict[str, Any]] = {}


def _edited_copy(scenario: str, changes: dict[str, dict[str, Any]], directory: Path) -> Path:
    """The scenario's parameter file with ``changes`` applied, written to ``directory``."""
    params = yaml.safe_load((REPO / "config" / "scenarios" / f"{scenario}.yaml").read_text())
    for node, values in changes.items():
        assert node in params, f"{scenario}.yaml has no {node}"
        params[node]["ros__parameters"].update(values)  # a default the file leaves out, or one it sets
    path = directory / f"edited_{scenario}.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _check_content(topic: str, msg: Any) -> None:
    """A message the scenario's nodes publish: named joints, finite numbers."""
    if hasattr(msg, "name"):  # JointState
        assert msg.name and len(msg.position) in (0, len(msg.name)), f"{topic}: {msg}"
        assert all(math.isfinite(x) for x in [*msg.position, *msg.velocity, *msg.effort]), f"{topic}: {msg}"
    elif hasattr(msg, "data"):  # Float64MultiArray command
        assert msg.data and all(math.isfinite(x) for x in msg.data), f"{topic}: {list(msg.data)}"
    else:  # JointTrajectory reference
        assert msg.joint_names and msg.points, f"{topic}: {msg}"


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_launch_runs_publishes_and_stops_cleanly(name: str, ament_install, tmp_path: Path) -> None:
    """The launch starts the expected nodes with the given parameter file, messages flow, and SIGINT
    (to the process group as Ctrl-C in a terminal sends it, or to launch alone) ends every node
    cleanly (exit code 0) and launch with exit code 0."""
    case = CASES[name]
    arguments = list(case.arguments)
    if case.edited is not None:
        arguments.append(f"params_file:={_edited_copy(*case.edited, tmp_path)}")
    probe = Probe(list(dict.fromkeys([*case.flowing, *case.unpublished, *case.silent])))
    run = LaunchRun(ament_install.run_env(), ament_install.workspace, case.file, arguments)
    try:
        on_graph = probe.spin_until(lambda: case.nodes <= probe.node_names() or run.failed(), START_TIMEOUT)
        assert on_graph and not run.failed(), f"{case.file} {arguments}: nodes missing\n{run.log()}"
        first = probe.spin_until(lambda: all(probe.counts[t] for t in case.flowing), FLOW_TIMEOUT)
        assert first, f"no message on {[t for t in case.flowing if not probe.counts[t]]}\n{run.log()}"
        counts = probe.count(FLOW_WINDOW)
        for topic in case.flowing:
            assert counts[topic] > 0, f"{topic}: no message in {FLOW_WINDOW} s"
            _check_content(topic, probe.last[topic])
        for topic in case.unpublished:
            assert probe.node.count_publishers(topic) == 0, f"{topic} has a publisher"
        for topic in case.silent:
            assert counts[topic] == 0, f"{counts[topic]} messages on {topic}"
        for node, expected in case.reported.items():
            assert probe.parameters(node, list(expected)) == expected, node
        started = run.started()
        assert set(started) == case.nodes, f"started {sorted(started)}"
        assert not (case.absent & probe.node_names())
        code, stopped, finished = run.interrupt(case.stop)
    finally:
        run.stop()
        probe.close()
    log = run.log()
    assert code == 0, f"launch exited with {code}\n{log}"
    assert set(finished) == case.nodes, f"not finished cleanly: {sorted(case.nodes - set(finished))}\n{log}"
    assert not ESCALATED.search(log), log
    MEASURED[name] = {
        "stop": case.stop,
        "messages": {t: counts[t] for t in case.flowing},
        "stop_s": stopped,
        "nodes_s": finished,
    }
    print(f"\n{name}: {MEASURED[name]}")


MANAGED = {"icub_torso.launch.py": ("identifier", "feedforward", "excitation", "pwm_feedforward")}
MANAGED["xin_bench.launch.py"] = ("vrec_controller",)


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize("file", list(MANAGED))
def test_autostart_false_leaves_managed_nodes_unconfigured(file: str, ament_install) -> None:
    """``autostart:=false``: every managed node comes up and stays unconfigured (lifecycle_msgs
    get_state), nothing is commanded while the simulated robot runs, and Ctrl-C (SIGINT to the
    process group) ends every node cleanly."""
    from lifecycle_msgs.srv import GetState

    topics = ["effort_controller/commands"]
    topics += ["pwm_controller/commands", "feedforward/reference"] if "icub" in file else []
    probe = Probe(topics)
    nodes = {"icub_torso.launch.py": ICUB, "xin_bench.launch.py": frozenset({"elastic_sim", "vrec_controller"})}[file]
    run = LaunchRun(ament_install.run_env(), ament_install.workspace, file, ["autostart:=false"])
    try:
        on_graph = probe.spin_until(lambda: nodes <= probe.node_names() or run.failed(), START_TIMEOUT)
        assert on_graph and not run.failed(), f"{file} autostart:=false: nodes missing\n{run.log()}"
        states = {}
        for name in MANAGED[file]:
            client = probe.node.create_client(GetState, f"/{name}/get_state")
            assert probe.spin_until(client.service_is_ready, 60.0), f"{name}: no get_state service"
            future = client.call_async(GetState.Request())
            assert probe.spin_until(future.done, 30.0), f"{name}: get_state not answered"
            states[name] = future.result().current_state.label
        counts = probe.count(FLOW_WINDOW)
        code, _, finished = run.interrupt("group")
    finally:
        run.stop()
        probe.close()
    assert states == dict.fromkeys(MANAGED[file], "unconfigured"), states
    assert not any(counts.values()), counts
    log = run.log()
    assert code == 0 and set(finished) == nodes, log
    assert not ESCALATED.search(log), log
