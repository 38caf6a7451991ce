"""The latency measurement of ``motor-ident bench``: every command is paired with the state it answers."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.ros


@pytest.mark.parametrize("node", ["feedforward", "echo"])
@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "robot-process"])
def test_commands_are_paired_with_their_states(same_process: bool, node: str) -> None:
    """States are answered and paired by sequence number: latencies positive, finite, ordered, bounded by the run,
    for the feedforward node and for the bare echo that measures the floor.

    How many states are answered depends on the machine's load, so only the pairing is asserted.
    """
    from motor_ident.ros.latency import measure_feedforward_latency

    figures = measure_feedforward_latency(1.5, same_process=same_process, node=node)
    assert figures["node"] == node
    answered = figures["cycles"] - figures["unanswered_states"]
    assert figures["cycles"] > 500  # a 1 kHz timer over 1.5 s, even on a busy machine
    assert 50 <= answered <= figures["cycles"]
    p50, p99, worst = figures["latency_p50_ms"], figures["latency_p99_ms"], figures["latency_max_ms"]
    assert np.isfinite([p50, p99, worst]).all()
    # paired by sequence number: a latency can never exceed the run, nor be negative
    assert 0.0 < p50 <= p99 <= worst < 1e3 * (figures["seconds"] + 1.0)
    assert figures["nonfinite_commands"] == 0


@pytest.mark.parametrize("kind", ["cpu", "alloc"])
def test_background_load_runs_and_stops(kind: str) -> None:
    """The contended case's busy processes run during the block and are gone after it."""
    from motor_ident.ros.latency import BackgroundLoad

    with BackgroundLoad(2, kind) as load:  # type: ignore[arg-type]
        processes = list(load._processes)
        assert len(processes) == 2 and all(p.is_alive() for p in processes)
    assert not any(p.is_alive() for p in processes)
