"""Scenario files load into node settings; a wrong key or value names the file, node and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from motor_ident.errors import ConfigError
from motor_ident.scenario.loader import load_scenario


@pytest.mark.parametrize("name", ["valkyrie_arm", "icub_torso", "xin_bench"])
def test_shipped_scenarios_load(name: str) -> None:
    """Every shipped scenario passes the settings' checks."""
    scenario = load_scenario(name)
    assert scenario.path.stem == name


def test_values_and_overrides_reach_the_settings() -> None:
    """The file's values and then the overrides land in the node settings."""
    scenario = load_scenario("icub_torso", {"identifier": {"window_duration": 3.0}})
    identifier = scenario.nodes["identifier"]
    assert (identifier.robot, identifier.core.velocity_cutoff_hz, identifier.core.window_duration) == (
        "icub_torso",
        30.0,
        3.0,
    )
    assert scenario.nodes["sim_robot"].plant.command_interface == "pwm"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("identifier:\n  ros__parameters:\n    windw: 3\n", "node identifier: unknown setting(s) ['windw']"),
        ("sim_robot:\n  ros__parameters:\n    rate_hz: 1000\n", "node sim_robot: rate_hz = 1000: expected a float"),
        ("feedforward:\n  parameters:\n    kp: [1.0]\n", "feedforward: unknown key(s) ['parameters']"),
    ],
)
def test_bad_file_names_file_node_and_key(tmp_path: Path, section: str, message: str) -> None:
    """The error says which file, node and key, and what was expected."""
    path = tmp_path / "bad.yaml"
    path.write_text(section)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_every_node_section_and_leading_slash(tmp_path: Path) -> None:
    """``/**`` reaches every node that has the key, as in ROS 2; ``/node`` is ``node``; the node's
    own section wins; the nodes named are kept in file order."""
    path = tmp_path / "wildcard.yaml"
    path.write_text(
        "/**:\n  ros__parameters:\n    use_sim_time: true\n    robot: icub_torso\n    diagnostics_period: 2.0\n"
        "/identifier:\n  ros__parameters:\n    window_duration: 3.0\n"
        "elastic_sim:\n  ros__parameters:\n    load_scale: 1.5\n"
        "sim_robot:\n  ros__parameters:\n    robot: valkyrie_arm\n"
    )
    scenario = load_scenario(path)
    assert scenario.named == ("identifier", "elastic_sim", "sim_robot")
    assert (scenario.nodes["identifier"].robot, scenario.nodes["identifier"].core.window_duration) == (
        "icub_torso",
        3.0,
    )
    assert scenario.nodes["identifier"].diagnostics_period == 2.0
    assert scenario.nodes["sim_robot"].robot == "valkyrie_arm"
    assert scenario.nodes["elastic_sim"].load_scale == 1.5  # has no robot: the /** key is not its
    assert scenario.nodes["elastic_sim"].diagnostics_period == 2.0
