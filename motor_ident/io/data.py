"""Recorded joint data in CSV or NPZ files.

NPZ: arrays ``t`` (N,), ``q`` (N, n), ``tau`` (N, n), optional ``qd`` and ``qdd`` (N, n), and
``joint_names`` (n,) strings. CSV: a header row with ``t``, then ``q.<joint>``, ``tau.<joint>``
and optionally ``qd.<joint>`` / ``qdd.<joint>`` columns. Units: s, rad, rad/s, rad/s^2, N m.

Raw torque measurements (`motor_ident.core.actuators.torque_sources` turns them into joint torques):
NPZ arrays ``current`` (N, m) [A] and ``pwm`` (N, m) [-] with ``motor_names`` (m,), ``wrench``
(N, 6) [N, N m]; CSV columns ``current.<motor>``, ``pwm.<motor>``, ``wrench.fx`` ... ``wrench.tz``.
A record of raw measurements only has no ``tau``: it is then all NaN (`JointRecord.tau_measured`).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.signals import Differentiation
from motor_ident.errors import DataError
from motor_ident.io.input_files import MAX_CSV_BYTES, open_npz, text_lines

FloatArray = NDArray[np.float64]
FIELDS = ("q", "qd", "qdd", "tau")
MOTOR_FIELDS = ("current", "pwm")
WRENCH_AXES = ("fx", "fy", "fz", "tx", "ty", "tz")
WriteFn = Callable[[Path], object]  # its return value (e.g. bytes written) is ignored


@dataclass(frozen=True, eq=False)
class JointRecord:
    """Time series of n joints. ``qd`` / ``qdd`` may be None until derived.

    ``tau`` is all NaN when the record holds no joint torque, only raw measurements: motor
    currents ``current`` (N, m) [A] or duty cycles ``pwm`` (N, m) [-] of the motors
    ``motor_names``, or a 6-axis sensor's ``wrench`` (N, 6) [N, N m].
    """

    t: FloatArray
    joint_names: tuple[str, ...]
    q: FloatArray
    tau: FloatArray
    qd: FloatArray | None = None
    qdd: FloatArray | None = None
    motor_names: tuple[str, ...] = ()
    current: FloatArray | None = None
    pwm: FloatArray | None = None
    wrench: FloatArray | None = None

    @property
    def tau_measured(self) -> bool:
        """False when ``tau`` is the all-NaN placeholder of a record of raw measurements."""
        return not bool(np.all(np.isnan(self.tau)))

    def __post_init__(self) -> None:
        N, n = self.t.shape[0], len(self.joint_names)
        for name, width in (("current", len(self.motor_names)), ("pwm", len(self.motor_names)), ("wrench", 6)):
            arr = getattr(self, name)
            if arr is not None and arr.shape != (N, width):
                raise DataError(f"{name} has shape {arr.shape}: expected ({N}, {width})")
            if arr is not None and not np.all(np.isfinite(arr)):
                rows = np.flatnonzero(~np.all(np.isfinite(arr), axis=1))
                raise DataError(f"{name} holds NaN or Inf in {rows.size} samples (first at index {rows[0]})")
        for name in FIELDS:
            arr = getattr(self, name)
            if name == "tau" and arr is not None and arr.size and np.all(np.isnan(arr)):
                continue  # not measured: the record carries raw measurements
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
        return replace(self, joint_names=tuple(joint_names), **pick)  # type: ignore[arg-type]  # q, tau are set

    def with_derivatives(
        self, window_s: float | None = None, differentiation: Differentiation | None = None
    ) -> JointRecord:
        """Fill missing qd / qdd by zero-phase differentiation of q (or of qd).

        ``differentiation`` chooses the filter (`Differentiation`); by default Savitzky-Golay
        with a ``window_s`` window (None: the default window for the record's rate).
        """
        if self.qd is not None and self.qdd is not None:
            return self
        how = Differentiation(window_s=window_s) if differentiation is None else differentiation
        _, qd, qdd = how.derivatives(self.t, self.q)
        if self.qd is not None:
            _, qdd, _ = how.derivatives(self.t, self.qd)
            qd = self.qd
        return replace(self, qd=qd, qdd=qdd)


def load_record(path: str | Path) -> JointRecord:
    """Read a CSV or NPZ record.

    Raises:
        DataError: the file is missing, unreadable or lacks the needed arrays / columns.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".npz", ".csv") and path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty")
    try:
        if suffix == ".npz":
            return _load_npz(path)
        if suffix == ".csv":
            return _load_csv(path)
    except DataError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        # a truncated or damaged zip (BadZipFile, EOFError), arrays of the wrong type or shape
        raise DataError(f"{path}: cannot read: {type(exc).__name__}: {exc}") from None
    raise DataError(
        f"{path}: unknown data format {suffix!r}; expected .npz or .csv (bags: use a .mcap / bag directory)"
    )


def _load_npz(path: Path) -> JointRecord:
    with open_npz(path) as z:
        raw = [k for k in ("current", "pwm", "wrench") if k in z.files]
        missing = [k for k in ("t", "q", "joint_names") + (() if raw else ("tau",)) if k not in z.files]
        if missing:
            raise DataError(f"{path}: arrays {missing} are missing; it holds {z.files}")
        check_samples(np.asarray(z["t"]), str(path))
        arrays = {k: (np.asarray(z[k], dtype=float) if k in z.files else None) for k in FIELDS + MOTOR_FIELDS}
        q = np.asarray(z["q"], dtype=float)
        return JointRecord(
            t=np.asarray(z["t"], dtype=float),
            joint_names=tuple(str(s) for s in z["joint_names"]),
            q=q,
            tau=np.full(q.shape, np.nan) if arrays["tau"] is None else arrays["tau"],
            qd=arrays["qd"],
            qdd=arrays["qdd"],
            motor_names=tuple(str(s) for s in z["motor_names"]) if "motor_names" in z.files else (),
            current=arrays["current"],
            pwm=arrays["pwm"],
            wrench=np.asarray(z["wrench"], dtype=float) if "wrench" in z.files else None,
        )


def _load_csv(path: Path) -> JointRecord:
    """A CSV read in blocks of lines (`text_lines`): memory holds the table, never the text."""
    names: list[str] = []
    tables: list[np.ndarray] = []
    line_number = 0  # of the last line read, 1-based
    for block in text_lines(path, limit=MAX_CSV_BYTES, kind="CSV"):
        numbered = [(line_number + k + 1, line) for k, line in enumerate(block) if line.strip()]
        line_number += len(block)
        if not names and numbered:
            names = [c.strip() for c in numbered[0][1].split(",")]
            if any(not c or c[0].isdigit() or c[0] in "+-." for c in names):
                raise DataError(f"{path}: the first row must be a header ('t', 'q.<joint>', 'tau.<joint>', ...)")
            repeated = sorted({c for c in names if names.count(c) > 1})
            if repeated:
                raise DataError(f"{path}: columns {repeated} appear more than once in the header")
            numbered = numbered[1:]
        if numbered:
            tables.append(_parse_rows(path, numbered, len(names)))
    if not names:
        raise DataError(f"{path}: the first row must be a header ('t', 'q.<joint>', 'tau.<joint>', ...)")
    table = np.concatenate(tables) if tables else np.empty((0, len(names)))
    return record_from_columns(dict(zip(names, table.T)), str(path))


def _parse_rows(path: Path, numbered: list[tuple[int, str]], width: int) -> np.ndarray:
    """The rows (line number, text) as a (k, width) table; a bad row is named by its line."""
    try:
        table = np.loadtxt([line for _, line in numbered], delimiter=",", dtype=float, ndmin=2)
    except ValueError:
        table = None
    if table is not None and table.shape[1] == width:
        return table
    for number, line in numbered:  # find the first bad row: the error names its line
        cells = line.split(",")
        if len(cells) != width:
            raise DataError(f"{path}, line {number}: {len(cells)} values, the header names {width} columns")
        try:
            [float(c) for c in cells]
        except ValueError:
            raise DataError(f"{path}, line {number}: not a number in {line[:80]!r}") from None
    raise DataError(f"{path}: cannot read its rows as numbers")  # loadtxt refused what float() takes


def record_from_columns(columns: Mapping[str, FloatArray], source: str) -> JointRecord:
    """A record from named columns of N samples each: ``t``, ``q.<joint>``, ``tau.<joint>``, and
    optionally ``qd.<joint>`` / ``qdd.<joint>`` and the raw torque measurements ``current.<motor>``,
    ``pwm.<motor>``, ``wrench.fx`` ... ``wrench.tz`` (units as in the module docstring). With raw
    measurements the ``tau`` columns may be absent (``tau`` is then all NaN).

    Args:
        columns: column name -> (N,) values, in SI units.
        source: where the columns come from, for error messages (a file name).

    Raises:
        DataError: ``t``, a joint's ``q`` or a required column is missing.
    """
    if "t" not in columns:
        raise DataError(f"{source}: no 't' column (time [s]); it has {list(columns)}")
    check_samples(np.asarray(columns["t"]), source)
    joints = [c[2:] for c in columns if c.startswith("q.")]
    if not joints:
        raise DataError(f"{source}: no 'q.<joint>' columns among {list(columns)}")

    def block(prefix: str, required: bool) -> FloatArray | None:
        names = [f"{prefix}.{j}" for j in joints]
        absent = [c for c in names if c not in columns]
        if absent and (required or len(absent) < len(names)):  # a block is whole or absent, never partial
            raise DataError(f"{source}: columns {absent} are missing (one per joint {joints})")
        if absent:
            return None
        return np.column_stack([columns[c] for c in names])

    motors = list(dict.fromkeys(c.split(".", 1)[1] for c in columns if c.startswith(("current.", "pwm."))))

    def raw_block(prefix: str, names: Sequence[str]) -> FloatArray | None:
        present = [f"{prefix}.{m}" for m in names if f"{prefix}.{m}" in columns]
        if not present:
            return None
        if len(present) != len(names):
            absent = sorted(set(f"{prefix}.{m}" for m in names) - set(present))
            raise DataError(f"{source}: columns {absent} are missing (one per motor {list(names)})")
        return np.column_stack([np.asarray(columns[c], dtype=float) for c in present])

    current, pwm = raw_block("current", motors), raw_block("pwm", motors)
    wrench = raw_block("wrench", WRENCH_AXES)
    q = block("q", True)
    assert q is not None
    tau = block("tau", current is None and pwm is None and wrench is None)
    return JointRecord(
        t=np.asarray(columns["t"], dtype=float),
        joint_names=tuple(joints),
        q=q,
        tau=np.full(q.shape, np.nan) if tau is None else tau,
        qd=block("qd", False),
        qdd=block("qdd", False),
        motor_names=tuple(motors) if current is not None or pwm is not None else (),
        current=current,
        pwm=pwm,
        wrench=wrench,
    )


def check_samples(t: np.ndarray, source: str) -> None:
    """Check that time stamps ``t`` are one finite sample or more of a 1-D series.

    Raises:
        DataError: ``t`` is not 1-D, holds no sample (a header-only CSV, empty arrays) or a NaN / Inf.
    """
    if t.ndim != 1:
        raise DataError(f"{source}: t has shape {t.shape}: expected (N,) time stamps [s]")
    if t.size == 0:
        raise DataError(f"{source}: holds no samples")
    if t.dtype.kind in "fc" and not np.all(np.isfinite(t)):
        k = int(np.flatnonzero(~np.isfinite(t))[0])
        raise DataError(f"{source}: time stamp t[{k}] = {t[k]!r} is not finite")


def save_record(path: str | Path, record: JointRecord) -> None:
    """Write a record as NPZ or CSV (by suffix), atomically."""
    path = Path(path)
    arrays = {k: getattr(record, k) for k in FIELDS if getattr(record, k) is not None}
    if not record.tau_measured:
        del arrays["tau"]
    raw = {k: getattr(record, k) for k in MOTOR_FIELDS + ("wrench",) if getattr(record, k) is not None}
    if path.suffix.lower() == ".npz":
        names = {"motor_names": np.array(record.motor_names)} if record.motor_names else {}

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                np.savez_compressed(f, t=record.t, joint_names=np.array(record.joint_names), **arrays, **raw, **names)  # type: ignore[arg-type]
    elif path.suffix.lower() == ".csv":
        header = ["t"] + [f"{k}.{j}" for k in arrays for j in record.joint_names]
        for k in raw:
            header += [f"{k}.{m}" for m in (WRENCH_AXES if k == "wrench" else record.motor_names)]
        table = np.column_stack([record.t] + list(arrays.values()) + list(raw.values()))

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


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (in the main thread) for a few renames; they arrive when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def atomic_directory(path: str | Path, write: WriteFn) -> None:
    """Call ``write(tmp)`` on a temporary directory beside ``path``, then put its files into ``path``.

    A new ``path`` is the temporary directory renamed into place. Into an existing directory (a
    report written before, a folder that holds other files too) each entry moves over its namesake,
    ``.html`` pages last, with SIGINT and SIGTERM held back meanwhile: an interruption or a failure
    while writing leaves ``path`` as it was, never a page without its figures.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700; reports are meant to be shared
        with signals_held():
            if not path.exists():
                os.replace(tmp, path)
                return
            for entry in sorted(tmp.iterdir(), key=lambda e: (e.suffix == ".html", e.name)):
                target = path / entry.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)  # a sub-page the new one replaces
                os.replace(entry, target)
            tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
