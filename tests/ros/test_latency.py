"""The latency measurement of ``motor-ident bench``: every command is paired with the state it answers."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.ros


CASES = [
    *((node, "valkyrie_arm", same) for node in ("feedforward", "echo") for same in (True, False)),
    ("pwm_feedforward", "icub_torso", True),  # answers the desired torques that come with each state
    ("decoupler", "icub_torso", True),  # republishes the state: paired by stamp
]


@pytest.mark.parametrize(("node", "robot", "same_process"), CASES, ids=lambda v: str(v))
def test_commands_are_paired_with_their_states(node: str, robot: str, same_process: bool) -> None:
    """States are answered and paired by sequence number: latencies positive, finite, ordered, bounded by the run,
    for the feedforward node and for the bare echo that measures the floor.

    How many states are answered depends on the machine's load, so only the pairing is asserted.
    """
    from motor_ident.ros.bench.latency import measure_feedforward_latency

    figures = measure_feedforward_latency(1.5, robot, same_process=same_process, node=node)  # type: ignore[arg-type]
    assert figures["node"] == node
    answered = figures["cycles"] - figures["unanswered_states"]
    assert figures["cycles"] > 200  # a 1 kHz timer over 1.5 s (1500), even on a very busy machine
    assert 50 <= answered <= figures["cycles"]
    p50, p99, worst = figures["latency_p50_ms"], figures["latency_p99_ms"], figures["latency_max_ms"]
    assert np.isfinite([p50, p99, worst]).all()
    # paired by sequence number: a latency can never exceed the run, nor be negative
    assert 0.0 < p50 <= p99 <= worst < 1e3 * (figures["seconds"] + 1.0)
    assert figures["nonfinite_commands"] == 0


@pytest.mark.parametrize("kind", ["cpu", "alloc"])
def test_background_load_runs_and_stops(kind: str) -> None:
    """The contended case's busy processes run during the block and are gone after it."""
    from motor_ident.ros.bench.latency import BackgroundLoad

    with BackgroundLoad(2, kind) as load:  # type: ignore[arg-type]
        processes = list(load._processes)
        assert len(processes) == 2 and all(p.is_alive() for p in processes)
    assert not any(p.is_alive() for p in processes)


def test_realtime_run_is_at_its_priority_and_leaves_normal_scheduling() -> None:
    """``priority``: the run at SCHED_FIFO (or the reason it was not), and this process's threads
    back at normal scheduling afterwards (the busy processes it starts next must not inherit it)."""
    import os

    from motor_ident.ros.bench.latency import measure_feedforward_latency

    figures = measure_feedforward_latency(1.0, "valkyrie_arm", node="echo", priority=10)
    assert (figures["thread_priority"], figures["realtime_warning"] == "") in ((10, True), (0, False)), figures
    assert figures["cycles"] > 200
    assert all(os.sched_getscheduler(int(tid)) == os.SCHED_OTHER for tid in os.listdir("/proc/self/task"))
