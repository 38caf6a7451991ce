"""Fixtures of the ROS tests: `ros` (nodes in one rclpy context and executor, torn down after the
test) and motor_ident built with colcon into an ament install, as ``ros2 launch`` needs."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

# What `colcon build` of motor_ident reads: setup.py's data_files globs over these.
PACKAGE_SOURCES = (
    "setup.py",
    "setup.cfg",
    "package.xml",
    "resource",
    "motor_ident",
    "launch",
    "config",
    "examples",
)

LAUNCH_MODULES = ("launch_ros", "ros2launch", "osrf_pycommon")


class Ros:
    """Nodes in one rclpy context, spun by one SingleThreadedExecutor in the test's thread.

    A context manager: leaving it shuts the executor down, destroys every node it made (last
    first) and shuts the context down. ``args`` are the context's command line, e.g.
    ``["--ros-args", "--params-file", path]`` to give every node a scenario file.
    """

    def __init__(self, args: list[str] | None = None) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(args=args, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes: list[Any] = []

    def add(
        self, node_class: type, *, namespace: str | None = None, activate: bool = True, **parameters: object
    ) -> Any:
        """A ``node_class`` node in this context with ``parameters`` as overrides, spun by the
        executor; a managed node configured and activated (`motor_ident.ros.runtime.lifecycle.start`),
        unless ``activate=False`` (then left unconfigured).

        Raises whatever the node's constructor or configure raises (a refused parameter: `ConfigError`).
        """
        from rclpy.parameter import Parameter

        from motor_ident.ros.runtime.lifecycle import start

        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        extra = {} if namespace is None else {"namespace": namespace}
        node = node_class(context=self.context, parameter_overrides=overrides, **extra)
        try:
            return self._keep(start(node) if activate else node)
        except Exception:
            node.destroy_node()
            raise

    def probe(self, name: str = "probe", *, namespace: str | None = None) -> Any:
        """A plain node to publish and subscribe from the test, spun by the executor."""
        import rclpy

        return self._keep(rclpy.create_node(name, namespace=namespace, context=self.context))

    def destroy(self, node: Any) -> None:
        """Destroy ``node`` now (it leaves the executor)."""
        self.executor.remove_node(node)
        self.nodes.remove(node)
        node.destroy_node()

    def spin_until(
        self,
        done: Callable[[], object],
        timeout: float = 10.0,
        *,
        each: Callable[[], None] | None = None,
        spins: int = 1,
        period: float = 0.05,
    ) -> bool:
        """Spin until ``done()`` is true or ``timeout`` wall seconds have passed; whether it is.

        ``each()`` (e.g. a publish while discovery settles) runs before every ``spins`` calls of
        ``spin_once(period)``; ``done()`` is checked after each of them.
        """
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                return False
            if each is not None:
                each()
            for _ in range(spins):
                self.executor.spin_once(timeout_sec=period)
                if done():
                    return True
        return True

    def _keep(self, node: Any) -> Any:
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def close(self) -> None:
        """Shut the executor down, destroy every node (last first), shut the context down."""
        self.executor.shutdown()
        for node in reversed(self.nodes):
            node.destroy_node()
        self.nodes.clear()
        self.context.try_shutdown()

    def __enter__(self) -> Ros:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spin_replay(executor: Any, player: Any, timeout: float) -> bool:
    """Spin ``executor`` until the bag ``player`` has published everything (at most ``timeout`` wall
    seconds), then 0.5 s more for the last messages to arrive; whether the player finished."""
    deadline = time.monotonic() + timeout
    while not player.finished and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    settle = time.monotonic()
    while time.monotonic() - settle < 0.5:
        executor.spin_once(timeout_sec=0.02)
    return bool(player.finished)


@pytest.fixture
def ros() -> Iterator[Ros]:
    """`Ros`: one context and executor for the test; every node it made destroyed afterwards."""
    with Ros() as harness:
        yield harness


@dataclass(frozen=True)
class AmentInstall:
    """motor_ident built by colcon: the workspace and the environment of a process that uses it."""

    workspace: Path  # holds src/, build/, install/
    env: dict[str, str]  # os.environ after sourcing install/local_setup.sh, DDS kept on this machine

    def run_env(self) -> dict[str, str]:
        """``env`` with the test module's ``ROS_DOMAIN_ID`` (tests/conftest.py gives each module its own)."""
        return {**self.env, "ROS_DOMAIN_ID": os.environ["ROS_DOMAIN_ID"]}


@pytest.fixture(scope="session")
def ament_install(tmp_path_factory: pytest.TempPathFactory) -> AmentInstall:
    """The working tree's package built with ``colcon build`` in a temporary workspace (about 3 s).

    ``env`` is ``os.environ`` with ``AMENT_PREFIX_PATH`` and ``PYTHONPATH`` of the install (as
    sourcing ``install/local_setup.sh`` sets them), ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``,
    this session's ``ROS_DOMAIN_ID`` (tests/conftest.py) and one BLAS thread. Skips when launch_ros,
    ros2launch or colcon are missing: tools/setup.sh installs them from ``../shared/ros2_launch``
    when that folder exists, a sourced ROS 2 provides them otherwise.
    """
    missing = [name for name in LAUNCH_MODULES if importlib.util.find_spec(name) is None]
    colcon = shutil.which("colcon", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if colcon is None:
        missing.append("colcon")
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed: run tools/setup.sh with ../shared/ros2_launch beside the "
            "checkout, or source a ROS 2 installation, to run the launch files through launch_ros"
        )
    workspace = tmp_path_factory.mktemp("ament_workspace")
    source = workspace / "src" / "motor_ident"
    source.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PACKAGE_SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    build = subprocess.run(
        [colcon, "build", "--base-paths", "src", "--build-base", "build", "--install-base", "install"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, f"colcon build failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    setup = workspace / "install" / "local_setup.sh"
    dump = subprocess.run(
        ["sh", "-c", '. "$1" && env -0', "sh", str(setup)],
        cwd=workspace,
        capture_output=True,
        timeout=60,
        check=True,
    )
    env = dict(entry.split("=", 1) for entry in dump.stdout.decode().split("\0") if "=" in entry)
    assert str(workspace / "install") in env.get("AMENT_PREFIX_PATH", ""), "local_setup.sh set no AMENT_PREFIX_PATH"
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"]
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return AmentInstall(workspace=workspace, env=env)
