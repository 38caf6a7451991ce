"""Where the example-robot-data package keeps its URDFs (Panda, UR5, iCub, ...)."""

from __future__ import annotations

import sys
from pathlib import Path

from motor_ident.errors import ConfigError

EXAMPLE_ROBOT_PREFIX = "example-robot-data:"
"""A robot config's ``urdf:`` starting with this names a file under example-robot-data's ``robots/``."""


def example_robot_urdf(relative: str) -> Path:
    """Path of ``robots/<relative>`` shipped by the example-robot-data package.

    Raises:
        ConfigError: the package or the file is not installed (``pip install example-robot-data``).
    """
    roots = [Path(p) for p in sys.path if p] + [Path(sys.prefix) / "lib"]
    for root in roots:
        candidate = root / "cmeel.prefix" / "share" / "example-robot-data" / "robots" / relative
        if candidate.is_file():
            return candidate
    raise ConfigError(f"URDF {relative} of example-robot-data not found: pip install example-robot-data")
