"""The shipped RViz configs: valid YAML, fixed on the URDF's root link, robot model from /robot_description."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import REPO

CONFIGS = sorted((REPO / "config" / "rviz").glob("*.rviz"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_rviz_config_matches_its_robot(path) -> None:
    """Fixed frame = root link of the scenario's URDF; RobotModel reads the latched /robot_description."""
    config = yaml.safe_load(path.read_text())
    manager = config["Visualization Manager"]
    urdf = ET.parse(REPO / "config" / "urdf" / f"{path.stem}.urdf").getroot()
    children = {j.find("child").get("link") for j in urdf.iter("joint")}
    roots = [link.get("name") for link in urdf.iter("link") if link.get("name") not in children]
    assert manager["Global Options"]["Fixed Frame"] == roots[0]
    displays = {d["Class"]: d for d in manager["Displays"]}
    model = displays["rviz_default_plugins/RobotModel"]
    assert model["Description Topic"]["Value"] == "/robot_description"
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"
    assert "rviz_default_plugins/TF" in displays
