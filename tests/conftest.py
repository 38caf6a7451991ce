"""Shared fixtures. All tests are ROS-free unless marked ``ros``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

# Keep DDS on this machine and give each test session its own domain, before rclpy loads.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
SESSION_DOMAIN = int(os.environ["ROS_DOMAIN_ID"])
_modules_seen = itertools.count()

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def module_ros_domain() -> Iterator[int]:
    """Each test module its own ``ROS_DOMAIN_ID`` (from the session's, within 100-199), set before
    its fixtures start anything. A node process that ended without leaving the graph (a SIGKILL, a
    watchdog's immediate exit) stays in its peers' discovery data until its lease expires (Fast
    DDS: 20 s); a later module starting nodes with the same names in the same domain would send
    its lifecycle and service requests to the dead one."""
    domain = 100 + (SESSION_DOMAIN - 100 + next(_modules_seen)) % 100
    previous = os.environ["ROS_DOMAIN_ID"]
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    yield domain
    os.environ["ROS_DOMAIN_ID"] = previous


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
