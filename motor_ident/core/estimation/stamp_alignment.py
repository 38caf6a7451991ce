"""Pairing joint states with a second measurement stream (motor currents, PWM, a wrench) by time stamp.

A joint state waits (bounded) for the secondary sample stamped within ``tolerance`` of it. It is
dropped with a reason when the secondary stream has passed its stamp without a match, or when more
than ``max_pending`` joint states wait (the secondary is late or missing). Secondary samples older
than every waiting joint state are discarded. No clock is read here: the caller decides staleness.

Rejected: interpolating the secondary stream onto the joint-state stamps online — it needs the
next secondary sample, i.e. a delay, and hides a missing stream behind held values.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]
Primary = TypeVar("Primary")

UNMATCHED = "no secondary sample at this stamp"
"""Drop kind: the secondary stream went past the joint state's stamp without a sample near it."""

LATE = "secondary sample late or missing"
"""Drop kind: too many joint states waited for the secondary stream."""


@dataclass(frozen=True)
class Drop:
    """A joint state given up: its stamp [s] and why (``kind`` is `UNMATCHED` or `LATE`)."""

    t: float
    kind: str
    detail: str


class StampAligner(Generic[Primary]):
    """Matches primary samples (joint states) to secondary ones (values (k,)) with equal stamps.

    Args:
        secondary: name of the secondary stream, for the drop details (e.g. ``motor_states``).
        tolerance: largest stamp difference of a pair [s].
        max_pending: joint states that may wait for their secondary sample.
    """

    def __init__(self, secondary: str, tolerance: float, max_pending: int = 100) -> None:
        if not (tolerance >= 0.0 and max_pending >= 1):
            raise ConfigError(f"alignment tolerance {tolerance!r} s, max_pending {max_pending!r}: expected >= 0, >= 1")
        self.secondary, self.tolerance, self.max_pending = secondary, float(tolerance), int(max_pending)
        self._primary: deque[tuple[float, Primary]] = deque()
        self._secondary: deque[tuple[float, FloatArray]] = deque(maxlen=4 * max_pending)

    def reset(self) -> None:
        """Forget everything waiting (a clock restart)."""
        self._primary.clear()
        self._secondary.clear()

    def add_secondary(self, t: float, values: FloatArray) -> None:
        """A secondary sample stamped ``t`` [s]."""
        self._secondary.append((float(t), values))

    def add_primary(self, t: float, item: Primary) -> None:
        """A joint state stamped ``t`` [s] (``item`` is returned with its match)."""
        self._primary.append((float(t), item))

    def pop(self) -> tuple[list[tuple[float, Primary, FloatArray]], list[Drop]]:
        """Pairs ready now (stamp, item, secondary values), in stamp order, and the joint states given up."""
        pairs: list[tuple[float, Primary, FloatArray]] = []
        drops: list[Drop] = []
        tol = self.tolerance
        while self._primary:
            t, item = self._primary[0]
            while self._secondary and self._secondary[0][0] < t - tol:
                self._secondary.popleft()  # older than every waiting joint state
            if self._secondary and self._secondary[0][0] <= t + tol:
                _, values = self._secondary.popleft()
                self._primary.popleft()
                pairs.append((t, item, values))
            elif self._secondary:  # the stream is past t: nothing will come for it
                self._primary.popleft()
                nearest = self._secondary[0][0] - t
                drops.append(
                    Drop(t, UNMATCHED, f"no {self.secondary} within {tol:g} s of {t:.4f} s (next {nearest:+.4f} s)")
                )
            elif len(self._primary) > self.max_pending:
                self._primary.popleft()
                drops.append(
                    Drop(t, LATE, f"{self.secondary} for {t:.4f} s did not come while {self.max_pending} states waited")
                )
            else:
                break
        return pairs, drops
