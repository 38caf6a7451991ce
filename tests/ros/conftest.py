"""Fixtures of the ROS tests: motor_ident built with colcon into an ament install, as ``ros2 launch`` needs."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class AmentInstall:
    """motor_ident built by colcon: the workspace and the environment of a process that uses it."""

    workspace: Path  # holds src/, build/, install/
    env: dict[str, str]  # os.environ after sourcing install/local_setup.sh, DDS kept on this machine


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
