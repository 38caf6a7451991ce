"""Recorded joint data in CSV or NPZ files.

NPZ: arrays ``t`` (N,), ``q`` (N, n), ``tau`` (N, n), optional ``qd`` and ``qdd`` (N, n), and
``joint_names`` (n,) strings. CSV: a header row with ``t``, then ``q.<joint>``, ``tau.<joint>``
and optionally ``qd.<joint>`` / ``qdd.<joint>`` columns. Units: s, rad, rad/s, rad/s^2, N m.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.signals import savgol_derivatives
from motor_ident.errors import DataError

FloatArray = NDArray[np.float64]
FIELDS = ("q", "qd", "qdd", "tau")
WriteFn = Callable[[Path], object]  # its return value (e.g. bytes written) is ignored


@dataclass(frozen=True, eq=False)
class JointRecord:
    """Time series of n joints. ``qd`` / ``qdd`` may be None until derived."""

    t: FloatArray
    joint_names: tuple[str, ...]
    q: FloatArray
    tau: FloatArray
    qd: FloatArray | None = None
    qdd: FloatArray | None = None

    def __post_init__(self) -> None:
        N, n = self.t.shape[0], len(self.joint_names)
        for name in FIELDS:
            arr = getattr(self, name)
            if arr is not None and arr.shape != (N, n):
                raise DataError(
                    f"{name} has shape {arr.shape}: expected ({N}, {n}) for joints {list(self.joint_names)}"
                )
            if arr is not None and not np.all(np.isfinite(arr)):
                rows = np.flatnonzero(~np.all(np.isfinite(arr), axis=1))
                raise DataError(f"{name} holds NaN or Inf in {rows.size} samples (first at index {rows[0]})")

    def select(self, joint_names: Sequence[str]) -> JointRecord:
        """The same record with joints in the order ``joint_names``.

        Raises:
            DataError: a joint is missing from the record.
        """
        missing = [j for j in joint_names if j not in self.joint_names]
        if missing:
            raise DataError(f"joints {missing} are not in the data; it holds {list(self.joint_names)}")
        idx = [self.joint_names.index(j) for j in joint_names]
        pick = {name: (None if getattr(self, name) is None else getattr(self, name)[:, idx]) for name in FIELDS}
        return JointRecord(t=self.t, joint_names=tuple(joint_names), **pick)  # type: ignore[arg-type]  # q, tau are set

    def with_derivatives(self, window_s: float = 0.05) -> JointRecord:
        """Fill missing qd / qdd by zero-phase Savitzky-Golay differentiation of q (or of qd)."""
        if self.qd is not None and self.qdd is not None:
            return self
        _, qd, qdd = savgol_derivatives(self.t, self.q, window_s=window_s)
        if self.qd is not None:
            _, qdd, _ = savgol_derivatives(self.t, self.qd, window_s=window_s)
            qd = self.qd
        return JointRecord(t=self.t, joint_names=self.joint_names, q=self.q, tau=self.tau, qd=qd, qdd=qdd)


def load_record(path: str | Path) -> JointRecord:
    """Read a CSV or NPZ record.

    Raises:
        DataError: the file is missing, unreadable or lacks the needed arrays / columns.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            return _load_npz(path)
        if suffix == ".csv":
            return _load_csv(path)
    except (OSError, ValueError, KeyError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: cannot read: {exc}") from None
    raise DataError(
        f"{path}: unknown data format {suffix!r}; expected .npz or .csv (bags: use a .mcap / bag directory)"
    )


def _load_npz(path: Path) -> JointRecord:
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in ("t", "q", "tau", "joint_names") if k not in z.files]
        if missing:
            raise DataError(f"{path}: arrays {missing} are missing; it holds {z.files}")
        arrays = {k: (np.asarray(z[k], dtype=float) if k in z.files else None) for k in FIELDS}
        return JointRecord(
            t=np.asarray(z["t"], dtype=float),
            joint_names=tuple(str(s) for s in z["joint_names"]),
            q=np.asarray(z["q"], dtype=float),
            tau=np.asarray(z["tau"], dtype=float),
            qd=arrays["qd"],
            qdd=arrays["qdd"],
        )


def _load_csv(path: Path) -> JointRecord:
    table = np.genfromtxt(path, delimiter=",", names=True, dtype=float, deletechars="", encoding="utf-8")
    if table.dtype.names is None:
        raise DataError(f"{path}: the first row must be a header ('t', 'q.<joint>', 'tau.<joint>', ...)")
    return record_from_columns({c: np.atleast_1d(table[c]).astype(float) for c in table.dtype.names}, str(path))


def record_from_columns(columns: Mapping[str, FloatArray], source: str) -> JointRecord:
    """A record from named columns of N samples each: ``t``, ``q.<joint>``, ``tau.<joint>``, and
    optionally ``qd.<joint>`` / ``qdd.<joint>`` (units as in the module docstring).

    Args:
        columns: column name -> (N,) values, in SI units.
        source: where the columns come from, for error messages (a file name).

    Raises:
        DataError: ``t``, a joint's ``q`` or a required column is missing.
    """
    if "t" not in columns:
        raise DataError(f"{source}: no 't' column (time [s]); it has {list(columns)}")
    joints = [c[2:] for c in columns if c.startswith("q.")]
    if not joints:
        raise DataError(f"{source}: no 'q.<joint>' columns among {list(columns)}")

    def block(prefix: str, required: bool) -> FloatArray | None:
        names = [f"{prefix}.{j}" for j in joints]
        absent = [c for c in names if c not in columns]
        if absent:
            if required:
                raise DataError(f"{source}: columns {absent} are missing")
            return None
        return np.column_stack([columns[c] for c in names])

    return JointRecord(
        t=np.asarray(columns["t"], dtype=float),
        joint_names=tuple(joints),
        q=block("q", True),  # type: ignore[arg-type]
        tau=block("tau", True),  # type: ignore[arg-type]
        qd=block("qd", False),
        qdd=block("qdd", False),
    )


def save_record(path: str | Path, record: JointRecord) -> None:
    """Write a record as NPZ or CSV (by suffix), atomically."""
    path = Path(path)
    arrays = {k: getattr(record, k) for k in FIELDS if getattr(record, k) is not None}
    if path.suffix.lower() == ".npz":

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                np.savez_compressed(f, t=record.t, joint_names=np.array(record.joint_names), **arrays)
    elif path.suffix.lower() == ".csv":
        header = ["t"] + [f"{k}.{j}" for k in arrays for j in record.joint_names]
        table = np.column_stack([record.t] + list(arrays.values()))

        def write(tmp: Path) -> None:
            np.savetxt(tmp, table, delimiter=",", header=",".join(header), comments="", fmt="%.10g")
    else:
        raise DataError(f"{path}: unknown data format; use .npz or .csv")
    atomic_write(path, write)


def atomic_write(path: str | Path, write: WriteFn) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``.

    A reader never sees a half-written file, and a failure leaves the old file untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; saved results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
