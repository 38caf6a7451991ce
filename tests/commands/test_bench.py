"""``motor-ident bench``'s JSON: the feedforward beside the echo floor in both layouts.

The measurements are replaced by fixed figures (the real ones take minutes and depend on the
machine, see tests/ros/test_latency.py for the measurement itself): what is checked is that the
command writes every key scripts rely on and divides the right numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest


def _latency(p50: float, p99: float, missed: int, **extra: object) -> dict[str, object]:
    return {
        "latency_p50_ms": p50,
        "latency_p99_ms": p99,
        "latency_max_ms": 2 * p99,
        "missed_cycles": missed,
        "cycles": 5000,
        "cpu_share": 0.4,
        **extra,
    }


def test_bench_json_has_the_floor_and_the_ratios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Echo keys and feedforward / echo p99 ratios for the same-process and separate layouts."""
    from motor_ident import cli
    from motor_ident.commands import bench

    figures = {
        ("feedforward", True): _latency(0.5, 1.2, 30),
        ("echo", True): _latency(0.3, 0.8, 20),
        ("feedforward", False): _latency(0.6, 2.0, 50),
        ("echo", False): _latency(0.4, 1.6, 40),
    }

    def fake_feedforward(seconds, *, same_process=True, executor=None, node="feedforward"):
        return {**figures[(node, same_process)], "executor": executor or "events"}

    monkeypatch.setattr(bench, "bench_feedforward", fake_feedforward)
    monkeypatch.setattr(bench, "bench_regressor", lambda: [])
    monkeypatch.setattr(bench, "bench_floating", lambda samples: [])
    monkeypatch.setattr(
        bench, "bench_refit", lambda updates: [{"window": 2000, "incremental_hz": 1.0, "full_resolve_hz": 1.0}]
    )
    monkeypatch.setattr(bench, "bench_consistency", lambda repeats: {"sdp_ms": 1.0, "sdp_p95_ms": 1.0, "fast_us": 1.0})
    monkeypatch.setattr(bench, "bench_batch", lambda seconds: {"x_realtime": 1.0, "record_s": seconds})
    monkeypatch.setattr(
        bench, "bench_memory", lambda seconds: {"rss_start_mb": 1.0, "rss_end_mb": 1.0, "sim_s": seconds}
    )
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--quick", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["echo_latency_p99_ms"] == 0.8 and summary["echo_missed_cycles"] == 20
    assert summary["echo_latency_p99_ms_separate"] == 1.6 and summary["echo_missed_cycles_separate"] == 40
    assert math.isclose(summary["ff_over_echo_p99"], 1.2 / 0.8)
    assert math.isclose(summary["ff_over_echo_p99_separate"], 2.0 / 1.6)
    assert summary["ff_latency_p99_ms"] == 1.2 and summary["ff_separate_latency_p99_ms"] == 2.0
