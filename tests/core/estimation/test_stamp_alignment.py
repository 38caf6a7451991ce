"""Pairing joint states with a secondary stream by stamp: matches, drops with reasons, bounded wait."""

from __future__ import annotations

import numpy as np

from motor_ident.core.estimation.stamp_alignment import LATE, UNMATCHED, StampAligner


def test_pairs_in_any_arrival_order_and_drops_what_the_stream_skipped() -> None:
    """Secondary before or after the state: paired; a stamp the stream skipped: dropped as unmatched."""
    aligner: StampAligner[int] = StampAligner("motor_states", tolerance=1e-4)
    aligner.add_secondary(0.001, np.array([1.0]))
    aligner.add_primary(0.001, 1)  # secondary came first
    aligner.add_primary(0.002, 2)  # secondary comes later
    pairs, drops = aligner.pop()
    assert [(t, item) for t, item, _ in pairs] == [(0.001, 1)] and drops == []
    aligner.add_secondary(0.002, np.array([2.0]))
    aligner.add_primary(0.003, 3)  # the stream skips 0.003
    aligner.add_secondary(0.004, np.array([4.0]))
    aligner.add_primary(0.004, 4)
    pairs, drops = aligner.pop()
    assert [(item, float(v[0])) for _, item, v in pairs] == [(2, 2.0), (4, 4.0)]
    assert [(d.t, d.kind) for d in drops] == [(0.003, UNMATCHED)]


def test_waiting_is_bounded_when_the_stream_is_missing() -> None:
    """With no secondary at all, no more than max_pending states wait; the rest are dropped as late."""
    aligner: StampAligner[int] = StampAligner("ft_sensor/wrench", tolerance=1e-4, max_pending=5)
    dropped = []
    for k in range(12):
        aligner.add_primary(0.001 * (k + 1), k)
        pairs, drops = aligner.pop()
        assert pairs == []
        dropped += drops
    assert len(dropped) == 7 and {d.kind for d in dropped} == {LATE}
    assert "ft_sensor/wrench" in dropped[0].detail
