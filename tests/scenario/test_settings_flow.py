"""One default, changed in one place, reaches every path that builds from the settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from motor_ident.core.estimation.online import IdentifierConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def window_321(monkeypatch: pytest.MonkeyPatch) -> float:
    """The identifier window's default, patched where it is defined (core IdentifierConfig)."""
    field = {f.name: f for f in dataclasses.fields(IdentifierConfig)}["window_duration"]
    monkeypatch.setattr(field, "default", 3.21)
    return 3.21


@pytest.fixture
def robot_only(tmp_path: Path) -> Path:
    """A scenario file that names the robot and nothing else."""
    path = tmp_path / "robot_only.yaml"
    path.write_text(
        "".join(f"{node}:\n  ros__parameters:\n    robot: valkyrie_arm\n" for node in ("sim_robot", "identifier"))
    )
    return path


def test_default_reaches_closed_loop_identify_and_docs(window_321, robot_only, monkeypatch) -> None:
    """Closed loop, identify --online and the generated table all use the patched window."""
    import motor_ident.scenario.build as build
    from motor_ident.commands.online_replay import online_replay
    from motor_ident.scenario.closed_loop import build_closed_loop
    from motor_ident.scenario.nodes import parameters_markdown

    assert build_closed_loop(robot_only).identifier.config.window_duration == window_321
    built = []
    original = build.build_identifier
    monkeypatch.setattr(build, "build_identifier", lambda *a, **k: built.append(original(*a, **k)) or built[-1])
    joints = ("shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow")
    t = np.arange(5) / 1000.0
    zeros = np.zeros((5, 4))
    online_replay(str(robot_only), joints, t, zeros, zeros, zeros)
    assert built and built[0].config.window_duration == window_321
    assert f"| `window_duration` | `{window_321}` |" in parameters_markdown()


@pytest.mark.ros
def test_default_reaches_the_node(window_321) -> None:
    """The identifier node declares and uses the patched window."""
    import rclpy
    from rclpy.parameter import Parameter

    from motor_ident.ros.nodes.identifier_node import IdentifierNode
    from motor_ident.ros.runtime.lifecycle import start

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = IdentifierNode(context=context, parameter_overrides=[Parameter("require_consistent", value=False)])
        start(node)  # a managed node declares its settings at configure
        assert node.get_parameter("window_duration").value == window_321
        assert node.core.config.window_duration == window_321
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_docs_parameters_current() -> None:
    """docs/parameters.md is what the settings classes generate."""
    from motor_ident.scenario.nodes import parameters_markdown

    assert (ROOT / "docs" / "parameters.md").read_text() == parameters_markdown(), (
        "docs/parameters.md is stale: run `python -m motor_ident.scenario.nodes > docs/parameters.md`"
    )


# Keys that name what a scenario runs, written even when they equal the default.
IDENTITY_KEYS = ("robot", "joints")


@pytest.mark.parametrize("path", sorted((ROOT / "config" / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_scenarios_restate_no_default(path: Path) -> None:
    """A shipped scenario writes only what it chooses: a value equal to the default would stop
    following the default when it changes."""
    from motor_ident.scenario.loader import load_scenario
    from motor_ident.scenario.nodes import NODE_SETTINGS
    from motor_ident.schema import flatten

    restated = []
    for node, values in load_scenario(path).parameters.items():
        defaults = flatten(NODE_SETTINGS[node]()) if node in NODE_SETTINGS else {}
        for key, value in values.items():
            value = tuple(value) if isinstance(value, list) else value
            if key in defaults and key not in IDENTITY_KEYS and value == defaults[key]:
                restated.append(f"{node}: {key}: {value!r}")
    assert not restated, f"{path.name} restates defaults (delete these lines): {restated}"
