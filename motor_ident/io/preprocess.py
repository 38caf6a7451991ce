"""From a loaded record to what identification needs: keep a range, uniform stamps, derivatives.

`prepare_record` runs, in this order:

1. **keep**: only the samples inside a time range (seconds from the first sample) or a sample
   range (indices, end excluded) — the robot resting before and after the motion is dropped.
2. **uniform stamps**: real loggers stamp with jitter (8-13 ms steps on a nominal 10 ms); when
   the steps differ from their median by more than 5 %, or a rate is asked for, every signal is
   interpolated onto a uniform grid (`motor_ident.core.estimation.signals.resample_uniform`) at
   the median step or the asked rate: positions by a cubic spline (their second derivative is
   used), and every measurement linearly — measured velocities included: a spline through a
   joint at rest overshoots around its exact zeros, and a sign-based friction model then sees
   Coulomb friction where the joint stood still. ``resample: none`` keeps the recorded stamps
   (the Savitzky-Golay fit runs on them). The note returned says what was done to each signal.
3. **derivatives**: missing velocities and accelerations by the chosen zero-phase filter
   (`Differentiation`), and the torque through the same filter when asked.
4. **recorded stamps** (``recorded_stamps``, for validation metrics): the derivatives computed on
   the grid are brought back onto the recorded stamps (cubic spline of the smooth filter
   outputs), and every recorded measurement is kept as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from motor_ident.core.estimation.identification import check_magnitude
from motor_ident.core.estimation.signals import (
    Differentiation,
    check_increasing,
    is_uniform,
    resample_uniform,
    sample_step,
    uniform_grid,
)
from motor_ident.errors import ConfigError, DataError
from motor_ident.io.data import JointRecord


@dataclass(frozen=True)
class KeepRange:
    """Part of a recording to keep: a time range [s from the first sample] or a sample range.

    Attributes:
        start, stop: bounds; ``None`` means the record's own start / end, a negative bound counts
            back from the end (``[1.5, -1.5]`` drops 1.5 s at both ends of any recording).
        unit: ``s`` (time from the first sample, inclusive) or ``samples`` (indices, stop excluded).
    """

    start: float | None = None
    stop: float | None = None
    unit: str = "s"

    def __post_init__(self) -> None:
        if self.unit not in ("s", "samples"):
            raise ConfigError(f"keep range unit {self.unit!r}: expected 's' or 'samples'")
        if (
            self.start is not None
            and self.stop is not None
            and (self.start >= 0.0) == (self.stop >= 0.0)
            and not self.stop > self.start
        ):
            raise ConfigError(f"keep range [{self.start}, {self.stop}] {self.unit}: expected start < stop")

    @classmethod
    def parse(cls, text: str, unit: str) -> KeepRange:
        """``"2.5:31"``, ``"2.5:"`` or ``":31"`` -> a range (the CLI's ``--keep-time`` / ``--keep-samples``)."""
        parts = text.split(":")
        if len(parts) != 2:
            raise ConfigError(f"keep range {text!r}: expected START:STOP (either may be empty), e.g. 2.5:31")
        try:
            start, stop = (None if p.strip() == "" else float(p) for p in parts)
        except ValueError:
            raise ConfigError(f"keep range {text!r}: expected numbers, e.g. 2.5:31") from None
        return cls(start=start, stop=stop, unit=unit)

    def describe(self) -> str:
        """E.g. ``1.5 s after the start to 1.5 s before the end`` or ``samples 200 to 3100``."""
        if self.unit == "samples":
            lo = "0" if self.start is None else f"{self.start:g}"
            hi = "the end" if self.stop is None else f"{self.stop:g}"
            return f"samples {lo} to {hi}"

        def bound(x: float | None, default: str) -> str:
            if x is None:
                return default
            return f"{x:g} s after the start" if x >= 0.0 else f"{-x:g} s before the end"

        return f"{bound(self.start, 'the start')} to {bound(self.stop, 'the end')}"

    def mask(self, t: np.ndarray) -> np.ndarray:
        """Boolean mask (N,) of the samples to keep, for stamps ``t`` (N,) [s]."""
        if self.unit == "samples":
            x, end, tol = np.arange(t.size, dtype=float), float(t.size), -0.5  # stop excluded
        else:
            x, end, tol = t - t[0], float(t[-1] - t[0]), 1e-9
        lo = -np.inf if self.start is None else (self.start if self.start >= 0.0 else end + self.start)
        hi = np.inf if self.stop is None else (self.stop if self.stop >= 0.0 else end + self.stop)
        return (x >= lo - abs(tol)) & (x <= hi + tol)


RESAMPLE_MODES = ("auto", "none")
"""``Preparation.resample``: resample non-uniform stamps (or at an asked rate), or never."""


@dataclass(frozen=True)
class Preparation:
    """How `prepare_record` treats a record (from the CLI and / or a data spec).

    Attributes:
        keep: the part to keep, or None for all of it.
        resample_hz: uniform rate to resample to [Hz]; None resamples only non-uniform stamps,
            at their median step.
        differentiation: the zero-phase filter for velocities and accelerations.
        resample: ``auto`` (non-uniform stamps, or a ``resample_hz``, resample) or ``none``
            (keep the recorded stamps; derivatives by Savitzky-Golay on them).
        recorded_stamps: return the record on its recorded stamps (measurements as recorded,
            derivatives from the grid) even when it was resampled: what validation metrics use.
    """

    keep: KeepRange | None = None
    resample_hz: float | None = None
    differentiation: Differentiation = Differentiation()
    resample: str = "auto"
    recorded_stamps: bool = False

    def __post_init__(self) -> None:
        if self.resample not in RESAMPLE_MODES:
            raise ConfigError(f"resample = {self.resample!r}: expected one of {list(RESAMPLE_MODES)}")
        if self.resample == "none" and self.resample_hz is not None:
            raise ConfigError(f"resample none and a resample rate ({self.resample_hz:g} Hz) contradict each other")


def _series_fields(record: JointRecord) -> list[str]:
    """Names of the record's per-sample arrays (first axis = samples), ``t`` excluded."""
    N = record.t.shape[0]
    names = []
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name != "t" and isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == N:
            names.append(f.name)
    return names


def keep_range(record: JointRecord, keep: KeepRange) -> JointRecord:
    """The samples of ``record`` inside ``keep``.

    Raises:
        DataError: fewer than 3 samples remain (the message gives the record's span).
    """
    mask = keep.mask(record.t)
    if mask.sum() < 3:
        span = record.t[-1] - record.t[0] if record.t.size else 0.0
        raise DataError(
            f"keep range {keep.describe()} leaves {int(mask.sum())} samples: the record spans "
            f"{span:.4g} s from its first sample ({record.t.size} samples)"
        )
    changes = {name: getattr(record, name)[mask] for name in _series_fields(record)}
    return replace(record, t=record.t[mask], **changes)  # type: ignore[arg-type]  # per-sample arrays only


SMOOTH_FIELDS: tuple[str, ...] = ("q",)
"""Fields resampled by a cubic spline (positions: differentiated twice afterwards); the others
linearly, measured velocities included (a spline would overshoot around the exact zeros of a
joint at rest)."""


def resample_record(record: JointRecord, grid: np.ndarray) -> JointRecord:
    """Every per-sample array of ``record`` interpolated onto ``grid`` (M,) [s] (`SMOOTH_FIELDS` by cubic spline,
    the rest linearly)."""
    changes = {
        name: resample_uniform(record.t, getattr(record, name), grid, cubic=name in SMOOTH_FIELDS)
        for name in _series_fields(record)
    }
    return replace(record, t=grid, **changes)  # type: ignore[arg-type]  # per-sample arrays only


def _take(record: JointRecord, mask: np.ndarray) -> JointRecord:
    changes = {name: getattr(record, name)[mask] for name in _series_fields(record)}
    return replace(record, t=record.t[mask], **changes)  # type: ignore[arg-type]  # per-sample arrays only


def resampling_note(record: JointRecord, grid: np.ndarray) -> str:
    """What resampling onto ``grid`` does to each signal of ``record``, in one sentence."""
    steps = np.diff(record.t)
    linear = [
        label
        for name, label in (
            ("qd", "measured velocities"),
            ("tau", "torques"),
            ("current", "currents"),
            ("pwm", "duty cycles"),
            ("wrench", "the wrench"),
        )
        if getattr(record, name, None) is not None and (name != "tau" or record.tau_measured)
    ]
    return (
        f"time stamps resampled onto a uniform {1e3 * (grid[1] - grid[0]):.4g} ms grid "
        f"({record.t.size} stamps with steps of {1e3 * steps.min():.3g}-{1e3 * steps.max():.3g} ms -> {grid.size} "
        f"samples): positions by cubic spline, {', '.join(linear) or 'the other signals'} linearly "
        "(--resample none keeps the recorded stamps)"
    )


def prepare_record(
    record: JointRecord, preparation: Preparation, *, source: str = ""
) -> tuple[JointRecord, tuple[str, ...]]:
    """Keep a range, make the stamps uniform, fill qd / qdd (module docstring).

    ``source`` (the file the record was read from) starts every error message.

    Returns:
        The record with ``qd`` and ``qdd`` set — on uniform stamps, or on the recorded ones with
        ``resample: none`` or ``recorded_stamps`` — and notes saying what was done to it (range
        kept, resampling of each signal, differentiation).

    Raises:
        DataError: stamps not increasing, too few samples, or a range that keeps too little.
        ConfigError: Butterworth differentiation on non-uniform stamps without resampling.
    """
    try:
        return _prepare(record, preparation)
    except DataError as exc:
        raise DataError(f"{source}: {exc}" if source else str(exc)) from None


def _prepare(record: JointRecord, preparation: Preparation) -> tuple[JointRecord, tuple[str, ...]]:
    for name in ("q", "qd", "tau"):  # huge values make the differentiating least squares fail
        if getattr(record, name) is not None:
            check_magnitude(name, getattr(record, name))
    notes: list[str] = []
    if preparation.keep is not None:
        before = record.t.size
        record = keep_range(record, preparation.keep)
        notes.append(f"kept {preparation.keep.describe()}: {record.t.size} of {before} samples")
    check_increasing(record.t)
    recorded = record
    resample = preparation.resample != "none" and (preparation.resample_hz is not None or not is_uniform(record.t))
    if resample:
        grid = uniform_grid(record.t, preparation.resample_hz)
        notes.append(resampling_note(record, grid))
        record = resample_record(record, grid)
    elif not is_uniform(record.t):
        notes.append(f"non-uniform time stamps kept as recorded ({record.t.size} samples, resample: none)")
    how = preparation.differentiation
    needs_derivatives = record.qd is None or record.qdd is None
    record = record.with_derivatives(differentiation=how)
    if how.filter_torque:
        record = replace(record, tau=how.derivatives(record.t, record.tau)[0])
    if needs_derivatives or how.filter_torque:
        step = sample_step(record.t)
        notes.append(f"derivatives: {how.describe(step)}" + (" on the recorded stamps" if not resample else ""))
        few = how.few_samples(step)
        if few is not None:
            notes.append(few)
    if resample and preparation.recorded_stamps:
        record = _on_recorded_stamps(recorded, record, filtered_torque=how.filter_torque)
        notes.append(f"compared on the {record.t.size} recorded stamps (derivatives brought back from the grid)")
    return record, tuple(notes)


def _on_recorded_stamps(recorded: JointRecord, gridded: JointRecord, *, filtered_torque: bool) -> JointRecord:
    """``recorded``'s samples inside the grid's span, with the grid's derivatives (and filtered torque)."""
    inside = _take(recorded, recorded.t <= gridded.t[-1] + 1e-12)

    def back(x: np.ndarray) -> np.ndarray:
        return resample_uniform(gridded.t, x, inside.t, cubic=True)

    assert gridded.qd is not None and gridded.qdd is not None
    qd = inside.qd if inside.qd is not None else back(gridded.qd)
    tau = back(gridded.tau) if filtered_torque else inside.tau
    return replace(inside, qd=qd, qdd=back(gridded.qdd), tau=tau)
