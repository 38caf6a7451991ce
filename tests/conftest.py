"""Shared fixtures. All tests are ROS-free unless marked ``ros``."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# Keep DDS on this machine and give each test session its own domain, before rclpy loads.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded random generator."""
    return np.random.default_rng(12345)


def example_robot_urdf(relative: str) -> Path:
    """Path of a URDF shipped by the example-robot-data package (skips the test when absent)."""
    from motor_ident.errors import ConfigError
    from motor_ident.io.urdf_paths import example_robot_urdf as find

    try:
        return find(relative)
    except ConfigError as exc:
        pytest.skip(str(exc))
