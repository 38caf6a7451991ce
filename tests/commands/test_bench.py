"""``motor-ident bench``'s JSON: the feedforward beside the echo floor, quiet and contended, in both
layouts.

The measurements are replaced by fixed figures (the real ones take minutes and depend on the
machine, see tests/ros/test_latency.py for the measurement itself): what is checked is that the
command writes every key scripts rely on, takes medians over alternating runs and divides the right
numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest


def _latency(p99: float, missed: int, cpu_us: float) -> dict[str, object]:
    return {
        "latency_p50_ms": p99 / 2,
        "latency_p99_ms": p99,
        "latency_max_ms": 2 * p99,
        "missed_cycles": missed,
        "cycles": 5000,
        "unanswered_states": 0,
        "cpu_share": 0.4,
        "cpu_us_per_message": cpu_us,
    }


def test_bench_json_has_the_floor_and_the_ratios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Medians over runs; echo keys, feedforward / echo ratios and targets per case and layout."""
    from motor_ident import cli
    from motor_ident.commands import bench
    from motor_ident.ros.bench import latency

    runs: dict[tuple[str, bool], list[dict[str, object]]] = {
        ("echo", True): [_latency(0.8, 20, 20.0)] * 3,
        ("echo", False): [_latency(1.6, 40, 20.0)] * 3,
    }
    for node in ("feedforward", "pwm_feedforward", "decoupler"):
        runs[(node, True)] = [_latency(1.2, 30, 40.0), _latency(9.0, 300, 41.0), _latency(1.1, 31, 39.0)]
        runs[(node, False)] = [_latency(2.0, 50, 30.0)] * 3
    calls: dict[tuple[str, bool], int] = {key: 0 for key in runs}

    def fake_measure(seconds: float, robot: str, *, same_process: bool, node: str, **_: Any) -> Any:
        key = (node, same_process)
        calls[key] += 1
        return runs[key][(calls[key] - 1) % 3]

    monkeypatch.setattr(latency, "measure_feedforward_latency", fake_measure)
    monkeypatch.setattr(latency, "BackgroundLoad", lambda count, kind: _NoLoad())
    monkeypatch.setattr(
        bench, "bench_feedforward", lambda seconds, **kw: _latency(3.0, 60, 50.0) | {"executor": "single_threaded"}
    )
    monkeypatch.setattr(bench, "bench_regressor", lambda: [])
    floating = {"dof": 38, "n_base": 234, "rows_us": 40.0, "base_rows_us": 30.0, "pinocchio_regressor_us": 30.0}
    floating |= {"over_pinocchio": 1.33, "base_rows_over_pinocchio": 1.0, "rows_and_wrenches_us": 50.0, "refit_hz": 1e2}
    monkeypatch.setattr(bench, "bench_floating", lambda samples: [floating])  # its table row is printed
    monkeypatch.setattr(
        bench, "bench_refit", lambda updates: [{"window": 2000, "incremental_hz": 1.0, "full_resolve_hz": 1.0}]
    )
    monkeypatch.setattr(bench, "bench_consistency", lambda repeats: {"sdp_ms": 1.0, "sdp_p95_ms": 1.0, "fast_us": 1.0})
    monkeypatch.setattr(bench, "bench_batch", lambda seconds: {"x_realtime": 1.0, "record_s": seconds})
    monkeypatch.setattr(bench, "bench_online", lambda seconds: [{"decimation": "average", "us_per_sample": 40.0}])
    monkeypatch.setattr(
        bench, "bench_memory", lambda seconds: {"rss_start_mb": 1.0, "rss_end_mb": 1.0, "sim_s": seconds}
    )
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--runs", "3", "--ff-seconds", "1", "--background", "1", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["online_us_per_sample"] == {"average": 40.0}
    assert summary["ff_latency_p99_ms"] == 1.2  # the median of 1.2, 9.0, 1.1: one bad run does not decide
    assert summary["echo_latency_p99_ms"] == 0.8 and summary["echo_missed_cycles"] == 20
    assert summary["echo_latency_p99_ms_separate"] == 1.6 and summary["echo_missed_cycles_separate"] == 40
    assert math.isclose(summary["ff_over_echo_p99"], 1.2 / 0.8)
    assert math.isclose(summary["ff_over_echo_p99_separate"], 2.0 / 1.6)
    assert math.isclose(summary["ff_over_echo_cpu_separate"], 30.0 / 20.0)
    assert summary["decoupler_latency_p99_ms"] == 1.2 and summary["pwm_feedforward_echo_missed_cycles"] == 20
    assert summary["ff_latency_p99_ms_separate"] == 2.0
    assert summary["ff_latency_p99_ms_contended"] == 1.2 and "ff_over_echo_p99_separate_contended" in summary
    targets = summary["ff_targets_separate"]
    assert targets["CPU/message <= 2.0 x echo"] is True and targets["p99 <= 1.0 ms"] is False
    assert "p99 <= 1.0 ms" not in summary["ff_targets_separate_contended"]
    # 3 runs x quiet and contended for each case (the feedforward on two robots); an echo beside each
    assert calls[("decoupler", False)] == 6 and calls[("feedforward", True)] == 12 and calls[("echo", False)] == 24
    assert summary["feedforward_7dof_targets_separate"]["CPU/message <= 3.0 x echo"] is True


def test_latency_only_measures_the_chosen_cases_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--latency-only --nodes decoupler``: the decoupler beside the echo, quiet and contended,
    both layouts, and no other benchmark; its keys and a missed target reported as missed."""
    from motor_ident import cli
    from motor_ident.commands import bench
    from motor_ident.ros.bench import latency

    measured: list[tuple[str, str, bool]] = []

    def fake_measure(seconds: float, robot: str, *, same_process: bool, node: str, **_: Any) -> Any:
        measured.append((node, robot, same_process))
        return _latency(0.5, 10, 20.0) if node == "echo" else _latency(1.0, 10, 20.0)

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("only the 1 kHz path was asked for")

    monkeypatch.setattr(latency, "measure_feedforward_latency", fake_measure)
    monkeypatch.setattr(latency, "BackgroundLoad", lambda count, kind: _NoLoad())
    others = ("bench_regressor", "bench_floating", "bench_refit", "bench_consistency", "bench_online", "bench_batch")
    others += ("bench_memory",)
    for name in others:
        monkeypatch.setattr(bench, name, must_not_run)
    out = tmp_path / "bench.json"
    argv = ["bench", "--latency-only", "--nodes", "decoupler", "--runs", "2", "--ff-seconds", "1", "--json", str(out)]
    assert cli.main(argv) == 0
    summary = json.loads(out.read_text())
    assert {node for node, _, _ in measured} == {"decoupler", "echo"}
    assert {robot for _, robot, _ in measured} == {"icub_torso"}
    assert len(measured) == 2 * 2 * 2 * 2  # echo and node, 2 runs, 2 layouts, quiet and contended
    assert summary["decoupler_over_echo_p99_separate_contended"] == 2.0
    assert summary["decoupler_targets"]["p99 <= 1.3 x echo"] is False
    assert not any(key.startswith("ff_") for key in summary)


class _NoLoad:
    def __enter__(self) -> _NoLoad:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_floating_base_bench_sizes_and_ratios() -> None:
    """The floating-base cost rows: iCub's 7 / 14 / 38 DoF, their base parameters (free motion) and
    ratios that are the quotients of the timings (the timings themselves are not asserted)."""
    from motor_ident.commands.bench_floating import bench_floating_base

    rows = bench_floating_base(samples=60, refits=2)  # 360 base rows: above 234 parameters
    assert [(r["dof"], r["n_parameters"], r["n_base"]) for r in rows] == [(7, 20, 17), (14, 90, 66), (38, 330, 234)]
    for r in rows:
        assert math.isclose(r["over_pinocchio"], r["rows_us"] / r["pinocchio_regressor_us"])
        assert math.isclose(r["base_rows_over_pinocchio"], r["base_rows_us"] / r["pinocchio_regressor_us"])
        assert r["rows_and_wrenches_us"] > r["rows_us"] > 0.0 and r["refit_hz"] > 0.0


def test_realtime_runs_the_echo_and_the_node_at_one_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--realtime`` (50, as ros2_control) and ``--realtime 70``: every run, echo and node, at that
    priority; a run refused real-time priority prints its reason once."""
    from motor_ident import cli
    from motor_ident.ros.bench import latency

    priorities: list[tuple[str, int]] = []

    def fake_measure(seconds: float, robot: str, *, same_process: bool, node: str, priority: int = 0, **_: Any) -> Any:
        priorities.append((node, priority))
        return {**_latency(0.5, 10, 20.0), "realtime_warning": "thread_priority: not permitted"}

    monkeypatch.setattr(latency, "measure_feedforward_latency", fake_measure)
    monkeypatch.setattr(latency, "BackgroundLoad", lambda count, kind: _NoLoad())
    argv = ["bench", "--latency-only", "--nodes", "decoupler", "--runs", "1", "--background", "0", "--realtime"]
    assert cli.main([*argv, "--json", str(tmp_path / "a.json")]) == 0
    assert {priority for _, priority in priorities} == {50} and {node for node, _ in priorities} == {
        "echo",
        "decoupler",
    }
    assert capsys.readouterr().out.count("warning: thread_priority: not permitted") == 1
    priorities.clear()
    assert cli.main([*argv, "70"]) == 0
    assert {priority for _, priority in priorities} == {70}
    with pytest.raises(SystemExit) as refused:  # out of SCHED_FIFO's 1-99: argparse's one line, exit 2
        cli.main([*argv, "100"])
    assert refused.value.code == 2
