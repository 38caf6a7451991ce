"""Data specs: how to read a robot's own log (vendor CSV or rosbag2) without writing code.

A data spec is a YAML file that maps the columns of a log to motor_ident's canonical names
(`motor_ident.io.data.record_from_columns`: ``t``, ``q.<joint>``, ``qd.<joint>``,
``tau.<joint>``, ``current.<motor>``, ``pwm.<motor>``, ``wrench.fx`` .. ``wrench.tz``), with units::

    data_spec: 1
    format: csv                  # csv (default) or bag
    header: false                # true: the first row names the columns
    delimiter: ","
    skip_rows: 0                 # lines to skip before the header / data
    time: {column: 0, unit: ms}  # or, without a time column:  rate_hz: 100
    columns:                     # canonical name: column index (0-based) or header name,
      q.elbow: {column: 3, unit: deg}            # or {column, unit, scale, offset}
      tau.elbow: {column: 7, unit: N m, scale: -1.0}
      current.elbow: 11                         # a bare column: SI units
      q_rotor.m6: {column: Joint_6, file: motors.csv}   # a motor's own encoder, from a file beside the log
    torque_source: joint_effort  # which field is the torque (joint_effort, motor_current, ...)
    keep: {time: [2.0, 32.0]}    # seconds from the first sample; or {samples: [200, 3200]}
    resample_hz: 100             # optional; non-uniform stamps are resampled (median step) unless
    resample: none               # none: keep the recorded stamps (default auto)
    differentiation: {method: savgol, window_s: 0.05}   # or {method: butterworth, cutoff_hz: 10}
                                                        # filter_torque: true|false
    topics: {joint_states: /joint_states}              # bags: topics to read

A value is ``raw * scale * unit + offset`` in SI units (s, rad, rad/s, N m, A, duty in [-1, 1],
N). Every error names the column and the spec key to fix.

Motor-side columns: ``q_rotor.<motor>``, ``qd_rotor.<motor>`` and ``tau_rotor.<motor>`` are a motor's
own encoder angle, speed and torque, at the rotor (before its gear). They are turned into joint
positions, velocities and torques through the robot config's transmission (gear ratios and
``couplings:``): ``q_joint = T q_rotor / rho``, ``tau_joint = T^-T rho tau_rotor``, every motor of a
group given (`rotor_columns_to_joints`). A motor turning against its joint is a one-motor
group with ``coupling: [[-1.0]]`` in the robot config (gear ratios are positive).

``file:`` reads a column from another CSV in the recording's folder, read with the same
settings and holding as many rows (a logger writing positions and torques to two files).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from motor_ident.core.actuators.torque_sources import TORQUE_SOURCES
from motor_ident.core.actuators.transmission import Transmission
from motor_ident.core.estimation.signals import Differentiation
from motor_ident.errors import ConfigError, DataError
from motor_ident.io.data import JointRecord, record_from_columns
from motor_ident.io.input_files import MAX_CSV_BYTES, text_lines
from motor_ident.io.preprocess import KeepRange, Preparation
from motor_ident.schema import read_yaml, require_mapping

FORMAT_VERSION = 1
DEG = math.pi / 180.0

# unit -> (quantity, factor to SI)
UNITS: dict[str, tuple[str, float]] = {
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "ns": ("time", 1e-9),
    "rad": ("position", 1.0),
    "deg": ("position", DEG),
    "m": ("position", 1.0),
    "mm": ("position", 1e-3),
    "rad/s": ("velocity", 1.0),
    "deg/s": ("velocity", DEG),
    "rpm": ("velocity", 2.0 * math.pi / 60.0),
    "m/s": ("velocity", 1.0),
    "rad/s^2": ("acceleration", 1.0),
    "deg/s^2": ("acceleration", DEG),
    "N m": ("torque", 1.0),
    "Nm": ("torque", 1.0),
    "N mm": ("torque", 1e-3),
    "mN m": ("torque", 1e-3),
    "N": ("force", 1.0),
    "A": ("current", 1.0),
    "mA": ("current", 1e-3),
    "duty": ("duty", 1.0),
    "percent": ("duty", 1e-2),
    "%": ("duty", 1e-2),
}

# canonical prefix -> quantities its unit may have
QUANTITIES: dict[str, tuple[str, ...]] = {
    "t": ("time",),
    "q": ("position",),
    "qd": ("velocity",),
    "qdd": ("acceleration",),
    "tau": ("torque", "force"),
    "current": ("current",),
    "pwm": ("duty",),
    "wrench": ("force", "torque"),
    "q_rotor": ("position",),
    "qd_rotor": ("velocity",),
    "tau_rotor": ("torque",),
}

# motor-side prefix -> the joint-side prefix it becomes
ROTOR_PREFIXES: dict[str, str] = {"q_rotor": "q", "qd_rotor": "qd", "tau_rotor": "tau"}

_KEYS = {
    "data_spec",
    "format",
    "header",
    "delimiter",
    "skip_rows",
    "time",
    "rate_hz",
    "columns",
    "torque_source",
    "keep",
    "resample_hz",
    "resample",
    "differentiation",
    "topics",
}


@dataclass(frozen=True)
class ColumnSpec:
    """One canonical field and where it comes from.

    Attributes:
        name: canonical name (``q.elbow``, ``t``, ...).
        column: 0-based index or header name in the file.
        factor: raw -> SI multiplier (unit factor times scale).
        offset: added after scaling, SI units.
        file: name of another CSV in the recording's folder holding the column (None: the recording).
    """

    name: str
    column: int | str
    factor: float = 1.0
    offset: float = 0.0
    file: str | None = None


@dataclass(frozen=True)
class DataSpec:
    """A parsed data spec (module docstring)."""

    path: Path | None
    format: str = "csv"
    header: bool = True
    delimiter: str = ","
    skip_rows: int = 0
    time: ColumnSpec | None = None
    rate_hz: float | None = None
    columns: tuple[ColumnSpec, ...] = ()
    torque_source: str | None = None
    preparation: Preparation = Preparation()
    topics: Mapping[str, str] | None = None

    @property
    def label(self) -> str:
        """How errors name this spec."""
        return f"data spec {self.path}" if self.path is not None else "data spec"


def _unit(value: Any, key: str, name: str) -> float:
    prefix = name.split(".", 1)[0]
    if value is None:
        return 1.0
    if not isinstance(value, str) or value not in UNITS:
        raise ConfigError(f"{key}.unit = {value!r}: expected one of {sorted(UNITS)}")
    quantity, factor = UNITS[value]
    allowed = QUANTITIES.get(prefix)
    if allowed is not None and quantity not in allowed:
        raise ConfigError(f"{key}.unit = {value!r} is a {quantity}: {name} needs a {' or '.join(allowed)} unit")
    return factor


def _flag(raw: Mapping[str, Any], key: str, default: bool, where: str = "") -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}{key} = {value!r}: expected true or false")
    return value


def _text(raw: Mapping[str, Any], key: str, default: str | None, where: str = "") -> str | None:
    value = raw.get(key, default)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{where}{key} = {value!r}: expected a non-empty string")
    return value


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{key} = {value!r}: expected a number")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} = {value!r}: expected a number") from None
    if not math.isfinite(out):
        raise ConfigError(f"{key} = {value!r}: expected a finite number")
    return out


def _column(name: str, raw: Any, key: str) -> ColumnSpec:
    if isinstance(raw, (int, str)) and not isinstance(raw, bool):
        return ColumnSpec(name=name, column=raw)
    if not isinstance(raw, Mapping) or "column" not in raw:
        raise ConfigError(f"{key} = {raw!r}: expected a column (index or header name) or {{column: ..., unit: ...}}")
    require_mapping(raw, key, allowed={"column", "unit", "scale", "offset", "file"})
    column = raw["column"]
    if isinstance(column, bool) or not isinstance(column, (int, str)) or (isinstance(column, int) and column < 0):
        raise ConfigError(f"{key}.column = {column!r}: expected a 0-based index or a header name")
    factor = _unit(raw.get("unit"), key, name) * _number(raw.get("scale", 1.0), f"{key}.scale")
    file = _text(raw, "file", None, f"{key}.")
    if file is not None and Path(file).name != file:
        raise ConfigError(f"{key}.file = {file!r}: expected a file name in the recording's folder (no directory)")
    offset = _number(raw.get("offset", 0.0), f"{key}.offset")
    return ColumnSpec(name=name, column=column, factor=factor, offset=offset, file=file)


def _keep(raw: Any) -> KeepRange | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or len(raw) != 1 or next(iter(raw)) not in ("time", "samples"):
        raise ConfigError(f"keep = {raw!r}: expected {{time: [start_s, stop_s]}} or {{samples: [first, stop]}}")
    unit, bounds = next(iter(raw.items()))
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ConfigError(f"keep.{unit} = {bounds!r}: expected [start, stop] (null for open ends)")
    lo, hi = (None if b is None else _number(b, f"keep.{unit}") for b in bounds)
    return KeepRange(start=lo, stop=hi, unit="s" if unit == "time" else "samples")


def differentiation_from_dict(raw: Any, key: str = "differentiation") -> Differentiation:
    """A ``differentiation:`` mapping (``method``, ``window_s``, ``cutoff_hz``, ``filter_torque``)."""
    if raw is None:
        return Differentiation()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key} = {raw!r}: expected a mapping such as {{method: savgol, window_s: 0.05}}")
    require_mapping(raw, key, allowed={"method", "window_s", "cutoff_hz", "filter_torque"})
    values: dict[str, Any] = {}
    for name in ("window_s", "cutoff_hz"):
        if name in raw:
            values[name] = _number(raw[name], f"{key}.{name}")
    if "method" in raw:
        values["method"] = _text(raw, "method", None, f"{key}.")
    if "filter_torque" in raw:
        values["filter_torque"] = _flag(raw, "filter_torque", False, f"{key}.")
    try:
        return Differentiation(**values)
    except ConfigError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def spec_from_dict(doc: Any, path: Path | None = None) -> DataSpec:
    """Validate a parsed data spec (module docstring).

    Raises:
        ConfigError: a key or value is wrong; the message names it.
    """
    if not isinstance(doc, Mapping) or doc.get("data_spec") != FORMAT_VERSION:
        raise ConfigError(f"expected a mapping starting with 'data_spec: {FORMAT_VERSION}'")
    require_mapping(doc, "data spec", allowed=_KEYS)
    fmt = _text(doc, "format", "csv")
    if fmt not in ("csv", "bag"):
        raise ConfigError(f"format = {fmt!r}: expected csv or bag")
    columns_raw = doc.get("columns") or {}
    if not isinstance(columns_raw, Mapping):
        raise ConfigError(f"columns = {columns_raw!r}: expected a mapping canonical name -> column")
    columns = []
    for name, raw in columns_raw.items():
        prefix = str(name).split(".", 1)[0]
        if prefix not in QUANTITIES or prefix == "t" or "." not in str(name):
            raise ConfigError(
                f"columns.{name}: expected a name such as q.<joint>, qd.<joint>, tau.<joint>, current.<motor>, "
                "pwm.<motor>, q_rotor.<motor>, tau_rotor.<motor> or wrench.fx (the time goes under 'time:')"
            )
        columns.append(_column(str(name), raw, f"columns.{name}"))
    time = None if doc.get("time") is None else _column("t", doc["time"], "time")
    rate = None if doc.get("rate_hz") is None else _number(doc["rate_hz"], "rate_hz")
    if fmt == "csv":
        if not columns:
            raise ConfigError("columns: empty; map at least q.<joint> and tau.<joint>")
        if (time is None) == (rate is None):
            raise ConfigError("give either 'time: {column: ..., unit: ...}' or 'rate_hz: ...' (a fixed rate), not both")
        if rate is not None and not rate > 0.0:
            raise ConfigError(f"rate_hz = {rate!r}: expected > 0")
    resample = None if doc.get("resample_hz") is None else _number(doc["resample_hz"], "resample_hz")
    topics = doc.get("topics")
    if topics is not None and (not isinstance(topics, Mapping) or not all(isinstance(v, str) for v in topics.values())):
        raise ConfigError(f"topics = {topics!r}: expected a mapping such as {{joint_states: /joint_states}}")
    torque_source = _text(doc, "torque_source", None)
    if torque_source is not None and torque_source not in TORQUE_SOURCES:
        raise ConfigError(f"torque_source = {torque_source!r}: expected one of {list(TORQUE_SOURCES)}")
    skip = doc.get("skip_rows", 0)
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ConfigError(f"skip_rows = {skip!r}: expected an integer >= 0")
    return DataSpec(
        path=path,
        format=fmt,
        header=_flag(doc, "header", True),
        delimiter=str(_text(doc, "delimiter", ",")),
        skip_rows=skip,
        time=time,
        rate_hz=rate,
        columns=tuple(columns),
        torque_source=torque_source,
        preparation=Preparation(
            keep=_keep(doc.get("keep")),
            resample_hz=resample,
            differentiation=differentiation_from_dict(doc.get("differentiation")),
            resample=str(_text(doc, "resample", "auto")),
        ),
        topics=None if topics is None else dict(topics),
    )


def load_spec(path: str | Path) -> DataSpec:
    """Read and validate a data spec YAML file.

    Raises:
        ConfigError: missing file, invalid YAML, or a wrong key (the message names it).
    """
    path = Path(path)
    try:
        return spec_from_dict(read_yaml(path), path)
    except ConfigError as exc:
        raise ConfigError(f"data spec {path}: {exc}") from None


def _read_table(path: Path, spec: DataSpec) -> tuple[np.ndarray, list[str] | None]:
    """The numeric table (N, k) of a CSV and its header names (None without a header).

    The file is read a block of lines at a time (`text_lines`): memory holds the table, and the
    text of one block at most.
    """
    names = None
    blocks: list[np.ndarray] = []
    width = None
    number = 0  # 1-based number of the last line read
    try:
        for block in text_lines(path, limit=MAX_CSV_BYTES, kind="CSV"):
            rows: list[list[float]] = []
            for line in block:
                number += 1
                if number <= spec.skip_rows:
                    continue
                if spec.header and names is None:
                    names = [c.strip() for c in line.split(spec.delimiter)]
                    continue
                if not line.strip():
                    continue
                cells = line.split(spec.delimiter)
                width = len(cells) if width is None else width
                rows.append(_row(path, spec, cells, width, number, line, first=not blocks and not rows))
            if rows:
                blocks.append(np.array(rows, dtype=float))
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    if spec.header and names is None:
        raise DataError(f"{path}: empty; {spec.label} says it has a header row")
    if not blocks:
        raise DataError(f"{path}: no data rows")
    return np.concatenate(blocks), names


def _row(
    path: Path, spec: DataSpec, cells: list[str], width: int, number: int, line: str, *, first: bool
) -> list[float]:
    """One row's numbers; errors name the line (and suggest a header when the first row is not numbers)."""
    if len(cells) != width:
        raise DataError(f"{path}, line {number}: {len(cells)} columns, the first row has {width}")
    try:
        return [float(c) for c in cells]
    except ValueError:
        if first and not spec.header:
            raise DataError(
                f"{path}: the first row {line[:60]!r} is not numbers: if it names the columns, set "
                f"'header: true' in {spec.label}"
            ) from None
        raise DataError(f"{path}, line {number}: not a number in {line[:80]!r}") from None


def _values(table: np.ndarray, names: list[str] | None, column: ColumnSpec, path: Path, label: str) -> np.ndarray:
    key = "time" if column.name == "t" else f"columns.{column.name}"  # the key of the spec that names the column
    where = f"{path} (through {label}: {key})"
    if isinstance(column.column, str):
        if names is None:
            raise ConfigError(
                f"{label}: {key} names the column {column.column!r} but the file has no header "
                "(header: false): give its 0-based index"
            )
        if column.column not in names:
            raise DataError(f"{where}: no column {column.column!r}; the header has {names}")
        index = names.index(column.column)
    else:
        index = column.column
        if index >= table.shape[1]:
            raise DataError(
                f"{where}: column {index} does not exist: the file has {table.shape[1]} columns, "
                f"0 to {table.shape[1] - 1}"
            )
    raw = table[:, index]
    bad = np.flatnonzero(~np.isfinite(raw))
    if bad.size:
        raise DataError(f"{where}: column {column.column!r} holds NaN or Inf in row {bad[0]}")
    return raw * column.factor + column.offset


def read_with_spec(path: str | Path, spec: DataSpec, transmission: Transmission | None = None) -> JointRecord:
    """Read a CSV log through ``spec`` into a record (SI units, canonical joint names).

    Range, resampling and derivatives are not applied here: `prepare_record` does that with
    ``spec.preparation``. Motor-side columns (``q_rotor.<motor>`` ...) become joint columns
    through ``transmission``.

    Raises:
        DataError: the file is missing or malformed, or a column the spec names is not in it.
        ConfigError: the spec does not fit the file (a header name on a headerless file), or it
            maps motor-side columns without a transmission or without every motor of a group.
    """
    path = Path(path)
    if spec.format != "csv":
        raise ConfigError(f"{spec.label}: format {spec.format!r} is read by the bag reader, not as a CSV")
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    table, names = _read_table(path, spec)
    tables: dict[str | None, tuple[np.ndarray, list[str] | None, Path]] = {None: (table, names, path)}
    for file in sorted({c.file for c in spec.columns if c.file is not None}):
        other = path.parent / file
        if not other.is_file():
            raise DataError(f"{other} does not exist: {spec.label} reads columns from {file!r} beside {path.name}")
        other_table, other_names = _read_table(other, spec)
        if other_table.shape[0] != table.shape[0]:
            raise DataError(
                f"{other}: {other_table.shape[0]} rows, {path} has {table.shape[0]}: "
                "expected one row per sample in both"
            )
        tables[file] = (other_table, other_names, other)
    columns: dict[str, np.ndarray] = {}
    if spec.time is not None:
        columns["t"] = _values(table, names, spec.time, path, spec.label)
    else:
        assert spec.rate_hz is not None
        columns["t"] = np.arange(table.shape[0]) / spec.rate_hz
    for column in spec.columns:
        column_table, column_names, where = tables[column.file]
        columns[column.name] = _values(column_table, column_names, column, where, spec.label)
    if any(name.split(".", 1)[0] in ROTOR_PREFIXES for name in columns):
        if transmission is None:
            raise ConfigError(
                f"{spec.label} maps motor-side columns (q_rotor, qd_rotor, tau_rotor): give a robot config"
            )
        columns = rotor_columns_to_joints(columns, transmission, spec.label)
    return record_from_columns(columns, f"{path} (through {spec.label})")


def rotor_columns_to_joints(
    columns: Mapping[str, np.ndarray], transmission: Transmission, label: str = "data spec"
) -> dict[str, np.ndarray]:
    """Columns with motor-side ``q_rotor.<motor>``, ``qd_rotor.<motor>``, ``tau_rotor.<motor>`` (N,) ->
    the same with ``q.<joint>``, ``qd.<joint>``, ``tau.<joint>`` instead, through each group's gear
    ratios and coupling T (`motor_ident.core.actuators.transmission`): ``q_joint = T q_rotor / rho``,
    ``tau_joint = T^-T rho tau_rotor``.

    Raises:
        ConfigError: an unknown motor, a group with some of its motors missing, or a joint given
            both on the joint side and through its motors.
    """
    out = {name: values for name, values in columns.items() if name.split(".", 1)[0] not in ROTOR_PREFIXES}
    for prefix, joint_prefix in ROTOR_PREFIXES.items():
        given = {name.split(".", 1)[1]: values for name, values in columns.items() if name.startswith(f"{prefix}.")}
        unknown = sorted(set(given) - set(transmission.motors))
        if unknown:
            raise ConfigError(
                f"{label}: columns.{prefix}.{unknown[0]}: no motor {unknown[0]!r}; the robot's motors are "
                f"{list(transmission.motors)}"
            )
        for group in transmission.groups:
            present = [m for m in group.motors if m in given]
            if not present:
                continue
            missing = [m for m in group.motors if m not in given]
            if missing:
                raise ConfigError(
                    f"{label}: columns.{prefix}.{present[0]} needs every motor of its group {list(group.motors)} "
                    f"(joints {list(group.joints)}): map {', '.join(f'{prefix}.{m}' for m in missing)} too"
                )
            both = [j for j in group.joints if f"{joint_prefix}.{j}" in columns]
            if both:
                raise ConfigError(
                    f"{label}: {joint_prefix}.{both[0]} is mapped and also comes from {prefix} columns: keep one"
                )
            rotor = np.column_stack([given[m] for m in group.motors])
            if prefix == "tau_rotor":
                joint = group.joint_torque(rotor * np.asarray(group.gear_ratio))
            elif prefix == "q_rotor":
                joint = group.joint_position(group.motor_velocity_from_rotor(rotor))
            else:
                joint = group.joint_velocity(group.motor_velocity_from_rotor(rotor))
            for k, name in enumerate(group.joints):
                out[f"{joint_prefix}.{name}"] = joint[:, k]
    return out
