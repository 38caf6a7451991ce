"""Identified parameter files (YAML), written atomically and read back with validation.

Layout::

    motor_ident_parameters: 1        # format version
    robot: valkyrie_arm
    method: wls
    parameters:                      # full vector, in the regressor's order
      names: [link1.m, ...]
      values: [...]
      std: [...]                     # optional, NaN where unknown
    base_parameters:                 # the identified combinations
      expressions: [...]
      values: [...]
      std: [...]
    metrics: {r2_per_joint: [...], condition_number: ..., ...}
    drive_gains:                     # motor currents: the gains identified from a payload run
      side: motor                    # the robot config's gain_side
      unit: N m/A
      values: {motor_name: ..., ...}
      std: {motor_name: ..., ...}

`load_drive_gains` reads the ``drive_gains`` block back: ``identify --gains FILE``, ``validate``
(from the parameter file it validates) and the identifier node's ``drive_gains_file`` convert
currents with it, so identified gains never have to be copied into a robot YAML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from motor_ident.core.estimation.identification import LARGEST_VALUE
from motor_ident.errors import ConfigError
from motor_ident.io.data import atomic_write
from motor_ident.schema import config_number, read_yaml, require_mapping

FloatArray = NDArray[np.float64]
FORMAT_VERSION = 1


@dataclass(frozen=True, eq=False)
class ParameterSet:
    """A full parameter vector with names and optional standard deviations."""

    names: tuple[str, ...]
    values: FloatArray
    std: FloatArray | None = None
    robot: str = ""
    method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class DriveGains:
    """Drive gains of motor currents, as a parameter file's ``drive_gains`` block holds them.

    Attributes:
        values: gain per motor name [N m/A], on ``side``.
        side: ``joint`` (gearbox output) or ``motor`` (rotor, times the gear ratio).
        std: standard deviation per motor name [N m/A] (empty when unknown).
        origin: where they were read from (a path), for notes.
    """

    values: dict[str, float]
    side: str
    std: dict[str, float] = field(default_factory=dict)
    origin: str = ""

    def block(self) -> dict[str, Any]:
        """The ``drive_gains`` block of a parameter file."""
        out: dict[str, Any] = {"side": self.side, "unit": "N m/A", "values": dict(self.values)}
        if self.std:
            out["std"] = dict(self.std)
        return out


def drive_gains_of(params: ParameterSet, origin: str = "") -> DriveGains | None:
    """The ``drive_gains`` block of a loaded parameter file (None when it has none).

    Raises:
        ConfigError: the block is malformed (the message names the key).
    """
    block = params.extra.get("drive_gains")
    if block is None:
        return None
    return _drive_gains(block, origin)


def load_drive_gains(path: str | Path) -> DriveGains:
    """The drive gains a parameter file holds (``identify --payload-data ... --out FILE`` writes them).

    Raises:
        ConfigError: missing or unreadable file, or a file without a ``drive_gains`` block.
    """
    doc = read_yaml(Path(path))
    block = doc.get("drive_gains") if isinstance(doc, Mapping) else None
    if block is None:
        raise ConfigError(
            f"{path}: no drive_gains block (identify --payload-data FILE --payload-mass KG --out {path} writes one)"
        )
    return _drive_gains(block, str(path))


def _drive_gains(block: Any, origin: str) -> DriveGains:
    key = f"{origin or 'parameter file'}: drive_gains"
    if not isinstance(block, Mapping) or not isinstance(block.get("values"), Mapping):
        raise ConfigError(f"{key} = {block!r}: expected {{side: joint|motor, values: {{motor: gain}}, std: ...}}")
    side = str(block.get("side", "joint"))
    if side not in ("joint", "motor"):
        raise ConfigError(f"{key}.side = {side!r}: expected 'joint' or 'motor'")
    std_block = block.get("std") or {}
    if not isinstance(std_block, Mapping):
        raise ConfigError(f"{key}.std = {std_block!r}: expected a mapping motor name -> std [N m/A]")
    values = {str(k): _value(v, f"{key}.values.{k}") for k, v in block["values"].items()}
    std = {str(k): _value(v, f"{key}.std.{k}") for k, v in std_block.items()}
    return DriveGains(values=values, side=side, std=std, origin=origin)


def _value(raw: Any, key: str) -> float:
    return config_number(raw, key, largest=LARGEST_VALUE)


def _is_nan(raw: Any) -> bool:
    return isinstance(raw, float) and np.isnan(raw)


def _floats(values: Sequence[float] | FloatArray) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=float)]


def save_parameters(path: str | Path, params: ParameterSet) -> None:
    """Write ``params`` to ``path`` as YAML, atomically (temporary file + rename)."""
    doc: dict[str, Any] = {
        "motor_ident_parameters": FORMAT_VERSION,
        "robot": params.robot,
        "method": params.method,
        "parameters": {"names": list(params.names), "values": _floats(params.values)},
    }
    if params.std is not None:
        doc["parameters"]["std"] = _floats(params.std)
    doc.update(params.extra)
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    atomic_write(path, lambda tmp: tmp.write_text(text))


def load_parameters(path: str | Path, expected_names: Sequence[str] | None = None) -> ParameterSet:
    """Read a parameter file written by `save_parameters`.

    Args:
        path: the YAML file.
        expected_names: when given, the file must hold exactly these parameters (any order);
            the values are returned in this order.

    Raises:
        ConfigError: missing, unreadable, corrupt or incompatible file (the message says which).
    """
    path = Path(path)
    doc = read_yaml(path)
    if not isinstance(doc, Mapping) or doc.get("motor_ident_parameters") != FORMAT_VERSION:
        raise ConfigError(
            f"parameter file {path}: not a motor_ident parameter file (no motor_ident_parameters: {FORMAT_VERSION})"
        )
    block = doc.get("parameters")
    if not isinstance(block, Mapping) or "names" not in block or "values" not in block:
        raise ConfigError(f"parameter file {path}: 'parameters' needs 'names' and 'values'")
    require_mapping(block, f"parameter file {path}: parameters", allowed={"names", "values", "std"})
    lists = {key: block.get(key) for key in ("names", "values", "std")}
    for key, items in lists.items():
        if not (isinstance(items, list) or (key == "std" and items is None)):
            raise ConfigError(f"parameter file {path}: parameters.{key} = {items!r}: expected a list")
    if not all(isinstance(n, str) for n in block["names"]):
        raise ConfigError(f"parameter file {path}: parameters.names: expected a list of names")
    names = tuple(block["names"])
    values = np.array(
        [_value(v, f"parameter file {path}: parameters.values[{i}]") for i, v in enumerate(block["values"])]
    )
    std = None
    if block.get("std") is not None:  # NaN: a parameter the data did not identify
        std = np.array(
            [
                np.nan if _is_nan(v) else _value(v, f"parameter file {path}: parameters.std[{i}]")
                for i, v in enumerate(block["std"])
            ]
        )
    if values.shape != (len(names),) or (std is not None and std.shape != values.shape):
        raise ConfigError(f"parameter file {path}: parameters: {len(names)} names but {values.size} values")
    if expected_names is not None:
        if set(expected_names) != set(names) or len(expected_names) != len(names):
            missing = sorted(set(expected_names) - set(names))[:5]
            unexpected = sorted(set(names) - set(expected_names))[:5]
            raise ConfigError(
                f"parameter file {path}: parameters.names do not match this robot: missing {missing}, "
                f"unexpected {unexpected}"
            )
        order = [names.index(n) for n in expected_names]
        names, values = tuple(expected_names), values[order]
        std = None if std is None else std[order]
    extra = {k: v for k, v in doc.items() if k not in ("motor_ident_parameters", "robot", "method", "parameters")}
    return ParameterSet(
        names=names,
        values=values,
        std=std,
        robot=str(doc.get("robot", "")),
        method=str(doc.get("method", "")),
        extra=extra,
    )
