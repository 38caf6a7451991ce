"""Launch files: valid Python, every executable is an entry point, every parameter file exists.

``launch`` / ``launch_ros`` are not on PyPI, so the files are checked statically here; on a ROS 2
install `ros2 launch` runs them.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import REPO

LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))


def _entry_points() -> set[str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NODES" for t in node.targets):
            return {k.value for k in node.value.keys}  # type: ignore[union-attr]
    return set()


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_is_consistent(path) -> None:
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
    for call in [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "DeclareLaunchArgument"
    ]:
        assert any(k.arg == "description" for k in call.keywords), f"{path.name}: argument without description"


def test_every_entry_point_imports() -> None:
    """Each node entry point names an importable main()."""
    import importlib

    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NODES" for t in node.targets):
            for value in node.value.values:  # type: ignore[union-attr]
                module, func = value.value.split(":")
                assert callable(getattr(importlib.import_module(module), func))
