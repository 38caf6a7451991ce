"""Excitation trajectory files (YAML): the Fourier coefficients with their joint names.

Layout (units in the header comment of every file written)::

    motor_ident_excitation: 1          # format version
    joints: [joint1, joint2, joint3]   # one per coefficient row
    base_frequency: 0.1                # f_f [Hz]; the period is 1 / f_f
    q0: [...]                          # offsets [rad]
    a: [[...], ...]                    # (n, M) sine-velocity coefficients [rad/s]
    b: [[...], ...]                    # (n, M) cosine-velocity coefficients [rad/s]
    metadata: {robot: ..., criterion: ..., criterion_value: ..., condition_number: ...}

q_i(t) = q0_i + sum_l a_il / (w_f l) sin(w_f l t) - b_il / (w_f l) cos(w_f l t), w_f = 2 pi f_f
(`motor_ident.core.excitation.fourier.FourierTrajectory`). The excitation node reads these files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from motor_ident.core.estimation.identification import LARGEST_VALUE
from motor_ident.core.excitation.fourier import FourierTrajectory
from motor_ident.errors import ConfigError
from motor_ident.io.data import atomic_write
from motor_ident.io.robot_config import config_directories
from motor_ident.schema import config_number, read_yaml, require_mapping

FORMAT_VERSION = 1

_HEADER = """\
# motor_ident excitation trajectory: finite Fourier series (Szabó & Szádeczky-Kardoss, eq. 22), one row per joint.
#   q_i(t)  = q0_i + sum_l a_il / (w_f l) sin(w_f l t) - b_il / (w_f l) cos(w_f l t),  w_f = 2 pi base_frequency
#   qd_i(t) = sum_l a_il cos(w_f l t) + b_il sin(w_f l t)
# Units: base_frequency [Hz], q0 [rad], a and b [rad/s].
"""


@dataclass(frozen=True)
class NamedTrajectory:
    """A trajectory with the joint names its rows belong to (what the YAML file holds).

    Attributes:
        trajectory: the Fourier series.
        joints: joint names, one per row of the coefficients.
        metadata: extra information (robot, criterion, values), YAML friendly.
        source: the file it was read from (for error messages; not saved).
    """

    trajectory: FourierTrajectory
    joints: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    def __post_init__(self) -> None:
        if len(self.joints) != self.trajectory.a.shape[0] or len(set(self.joints)) != len(self.joints):
            raise ConfigError(
                f"{self.source or 'trajectory'}: joints {list(self.joints)}: expected {self.trajectory.a.shape[0]} "
                "distinct names, one per coefficient row"
            )

    def select(self, joint_names: Sequence[str]) -> FourierTrajectory:
        """The trajectory reordered to ``joint_names``.

        Raises:
            ConfigError: a requested joint is not in the trajectory.
        """
        missing = [j for j in joint_names if j not in self.joints]
        if missing:
            source = f"{self.source}: " if self.source is not None else ""
            raise ConfigError(f"{source}joints {missing} are not in the trajectory's joints {list(self.joints)}")
        idx = [self.joints.index(j) for j in joint_names]
        t = self.trajectory
        return FourierTrajectory(a=t.a[idx], b=t.b[idx], q0=t.q0[idx], base_frequency=t.base_frequency)


def save_trajectory(path: str | Path, named: NamedTrajectory) -> None:
    """Write a trajectory YAML file atomically."""
    t = named.trajectory
    doc = {
        "motor_ident_excitation": FORMAT_VERSION,
        "joints": list(named.joints),
        "base_frequency": float(t.base_frequency),
        "q0": [float(x) for x in t.q0],
        "a": [[float(x) for x in row] for row in t.a],
        "b": [[float(x) for x in row] for row in t.b],
        "metadata": dict(named.metadata),
    }
    text = _HEADER + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=1000)
    atomic_write(Path(path), lambda tmp: tmp.write_text(text))


def _numbers(raw: Any, key: str) -> np.ndarray:
    """A list of YAML numbers (`config_number`: no booleans, nothing that overflows) as an array."""
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise ConfigError(f"{key} = {raw!r}: expected a list of numbers")
    return np.array([config_number(x, f"{key}[{i}]", largest=LARGEST_VALUE) for i, x in enumerate(raw)])


def _matrix(raw: Any, key: str, joints: Sequence[str]) -> np.ndarray:
    n = len(joints)
    if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) != n:
        raise ConfigError(f"{key} = {raw!r}: expected {n} rows, one per joint of joints {list(joints)}")
    rows = [_numbers(row, f"{key}[{i}]") for i, row in enumerate(raw)]
    if len({row.size for row in rows}) != 1:
        raise ConfigError(f"{key}: rows of {[row.size for row in rows]} numbers: expected rows of equal length")
    return np.array(rows)


def find_trajectory(path: str | Path) -> Path:
    """A trajectory file: ``path`` itself, else ``path`` relative to motor_ident's share directory.

    So a scenario can name a shipped trajectory as ``examples/<file>.yaml`` whatever the working
    directory (the source tree, or ``<prefix>/share/motor_ident`` once installed).
    """
    path = Path(path)
    if path.is_file() or path.is_absolute():
        return path
    for directory in config_directories():
        if (directory.parent / path).is_file():
            return directory.parent / path
    return path


def load_trajectory(path: str | Path) -> NamedTrajectory:
    """Read a trajectory YAML file written by `save_trajectory` (found by `find_trajectory`).

    Raises:
        ConfigError: the file is missing, not YAML, or a key is missing or malformed.
    """
    path = find_trajectory(path)
    doc = require_mapping(read_yaml(path), str(path), required=("joints", "base_frequency", "q0", "a", "b"))
    if doc.get("motor_ident_excitation") != FORMAT_VERSION:
        raise ConfigError(f"{path}: expected a mapping with motor_ident_excitation: {FORMAT_VERSION}")
    joints = doc["joints"]
    if not isinstance(joints, Sequence) or isinstance(joints, str) or not all(isinstance(j, str) for j in joints):
        raise ConfigError(f"{path}: joints = {joints!r}: expected a list of joint names")
    a, b = _matrix(doc["a"], f"{path}: a", joints), _matrix(doc["b"], f"{path}: b", joints)
    q0 = _numbers(doc["q0"], f"{path}: q0")
    base_frequency = config_number(doc["base_frequency"], f"{path}: base_frequency", largest=LARGEST_VALUE)
    metadata = doc.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise ConfigError(f"{path}: metadata = {metadata!r}: expected a mapping")
    try:
        trajectory = FourierTrajectory(a=a, b=b, q0=q0, base_frequency=base_frequency)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return NamedTrajectory(trajectory=trajectory, joints=tuple(joints), metadata=dict(metadata), source=path)
