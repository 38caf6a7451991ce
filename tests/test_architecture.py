"""The core/sim split: ROS-free packages must not import rclpy or any message package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

ROS_MODULES = ("rclpy", "rosidl", "rosgraph_msgs", "builtin_interfaces", "launch", "launch_ros")


def _is_ros(module: str) -> bool:
    top = module.split(".")[0]
    return top in ROS_MODULES or top.endswith("_msgs") or top.endswith("_srvs")


@pytest.mark.parametrize("package", ["core", "sim"])
def test_package_is_ros_free(package: str) -> None:
    """No module under motor_ident/core or motor_ident/sim imports ROS, even lazily."""
    offenders = []
    for path in sorted((REPO / "motor_ident" / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(REPO)}: {name}" for name in names if _is_ros(name)]
    assert not offenders, offenders


def test_the_checker_catches_ros_imports(tmp_path: Path) -> None:
    """The import check itself flags rclpy and message packages."""
    assert _is_ros("rclpy.node") and _is_ros("sensor_msgs.msg") and _is_ros("std_srvs.srv")
    assert not _is_ros("numpy") and not _is_ros("pinocchio")


def test_files_are_read_safely() -> None:
    """No pickle, no eval/exec of user input, YAML only through safe_load, NPZ without pickles."""
    offenders = []
    for path in sorted((REPO / "motor_ident").rglob("*.py")):
        text = path.read_text()
        for pattern in ("import pickle", "pickle.load", "yaml.load(", "eval(", "exec(", "allow_pickle=True"):
            if pattern in text:
                offenders.append(f"{path.relative_to(REPO)}: {pattern}")
    assert not offenders, offenders
