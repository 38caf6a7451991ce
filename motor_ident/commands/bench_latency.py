"""The 1 kHz path of ``motor-ident bench``: each node on it beside the echo floor, quiet and under
contention, in both process layouts.

The nodes on the path (`NODES`): the feedforward on valkyrie_arm (4 DoF) and on panda_arm (7 DoF,
``feedforward_7dof``), pwm_feedforward and the decoupler (icub_torso: three joints coupled through
a differential). For each node, case (quiet;
``background`` busy processes beside the run) and layout (stand-in robot in the node's process; in
its own, as a hardware interface on a robot), the bare echo (same robot, same joints) and the node
run ``runs`` times, alternating, so that a change of the machine's load hits both.
Each figure is the median over the runs with its range. Targets, checked in the output: the
feedforward's p99 at most `P99_OVER_ECHO` x the echo's, its missed cycles at most
`MISSED_OVER_ECHO` x the echo's, its CPU per message at most `CPU_OVER_ECHO` x the echo's (7 DoF:
`CPU_OVER_ECHO_7DOF`), and
p99 at most `P99_TARGET_MS` with the robot in its own process on a quiet machine. With
``priority`` > 0 (``--realtime``) every run, echo and node and the stand-in robot, runs at
SCHED_FIFO with that priority (`motor_ident.ros.runtime.realtime`); the busy processes never do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

P99_OVER_ECHO = 1.3
MISSED_OVER_ECHO = 1.5
CPU_OVER_ECHO = 2.0
CPU_OVER_ECHO_7DOF = 3.0
P99_TARGET_MS = 1.0
LAYOUTS = {"same": True, "separate": False}
NODES = {
    "feedforward": ("feedforward", "valkyrie_arm"),
    "feedforward_7dof": ("feedforward", "panda_arm"),
    "pwm_feedforward": ("pwm_feedforward", "icub_torso"),
    "decoupler": ("decoupler", "icub_torso"),
}
"""The cases of the 1 kHz path: name -> (node, robot it is measured on)."""
FIGURES = ("latency_p50_ms", "latency_p99_ms", "missed_cycles", "cpu_us_per_message")


def measure_cases(
    seconds: float,
    *,
    runs: int,
    background: int,
    kind: str = "cpu",
    nodes: tuple[str, ...] = tuple(NODES),
    progress: Any = None,
    priority: int = 0,
) -> dict[str, Any]:
    """Every (node, case, layout) pair of runs; ``progress(text)`` is told what runs.

    Returns: ``{node: {case: {layout: {"echo": [figures per run], "node": [...]}}}}`` with case
    ``quiet`` and, when ``background`` > 0, ``contended``.
    """
    from motor_ident.ros.bench.latency import BackgroundLoad, measure_feedforward_latency

    cases = {"quiet": 0, **({"contended": background} if background > 0 else {})}
    out: dict[str, Any] = {node: {} for node in nodes}
    for case, count in cases.items():
        with BackgroundLoad(count, kind):  # type: ignore[arg-type]
            for node in nodes:
                out[node][case] = {layout: {"echo": [], "node": []} for layout in LAYOUTS}
                for layout, same_process in LAYOUTS.items():
                    for run in range(runs):
                        which, robot = NODES[node]
                        for measured, key in (("echo", "echo"), (which, "node")):
                            if progress is not None:
                                progress(f"{measured}, {case}, robot in {layout} process, run {run + 1} of {runs}")
                            figures = measure_feedforward_latency(
                                seconds,
                                robot,
                                same_process=same_process,
                                node=measured,  # type: ignore[arg-type]
                                priority=priority,
                            )
                            out[node][case][layout][key].append(figures)
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and range of each figure over runs: ``{figure: median, figure_range: [lo, hi]}``."""
    out: dict[str, Any] = {}
    for key in FIGURES:
        values = np.array([float(r[key]) for r in runs], dtype=float)
        finite = values[np.isfinite(values)]
        out[key] = float(np.median(finite)) if finite.size else float("nan")
        out[f"{key}_range"] = [float(finite.min()), float(finite.max())] if finite.size else [float("nan")] * 2
    return out


def _ratio(a: float, b: float) -> float:
    return float(a / b) if np.isfinite(a) and np.isfinite(b) and b > 0 else float("nan")


def compare(
    ff: dict[str, Any], echo: dict[str, Any], *, quiet_separate: bool, cpu_target: float = CPU_OVER_ECHO
) -> dict[str, Any]:
    """The node's medians over the echo's, and which targets hold."""
    p99 = _ratio(ff["latency_p99_ms"], echo["latency_p99_ms"])
    missed = _ratio(ff["missed_cycles"] + 1.0, echo["missed_cycles"] + 1.0)  # +1: zero misses compare as equal
    cpu = _ratio(ff["cpu_us_per_message"], echo["cpu_us_per_message"])
    checks = {
        f"p99 <= {P99_OVER_ECHO} x echo": p99 <= P99_OVER_ECHO,
        f"missed <= {MISSED_OVER_ECHO} x echo": missed <= MISSED_OVER_ECHO,
        f"CPU/message <= {cpu_target} x echo": cpu <= cpu_target,
    }
    if quiet_separate:
        checks[f"p99 <= {P99_TARGET_MS} ms"] = ff["latency_p99_ms"] <= P99_TARGET_MS
    return {"p99_over_echo": p99, "missed_over_echo": missed, "cpu_over_echo": cpu, "targets": checks}


def summary(measured: dict[str, Any]) -> dict[str, Any]:
    """Per node, case and layout: the echo's and the node's medians and ranges, and the comparison."""
    out: dict[str, Any] = {}
    for node, cases in measured.items():
        out[node] = {}
        for case, layouts in cases.items():
            for layout, runs in layouts.items():
                echo, own = summarise(runs["echo"]), summarise(runs["node"])
                out[node][f"{case}_{layout}"] = {
                    "echo": echo,
                    "node": own,
                    **compare(
                        own,
                        echo,
                        quiet_separate=(case, layout) == ("quiet", "separate"),
                        cpu_target=CPU_OVER_ECHO_7DOF if node == "feedforward_7dof" else CPU_OVER_ECHO,
                    ),
                }
    return out


def _span(figures: dict[str, Any], key: str, fmt: str) -> str:
    lo, hi = figures[f"{key}_range"]
    return f"{figures[key]:{fmt}} ({lo:{fmt}}-{hi:{fmt}})"


def realtime_warnings(measured: dict[str, Any]) -> list[str]:
    """The distinct reasons runs of `measure_cases` went without real-time priority."""
    found = {
        run.get("realtime_warning", "")
        for cases in measured.values()
        for layouts in cases.values()
        for kinds in layouts.values()
        for runs in kinds.values()
        for run in runs
    }
    return sorted(found - {""})


def table_rows(
    summarised: dict[str, Any], *, runs: int, background: int, kind: str, priority: int = 0
) -> list[tuple[str, str, str]]:
    """Rows (measure, value, target) for the bench table."""
    rows = []
    for node, cases in summarised.items():
        for name, row in cases.items():
            case, layout = name.split("_", 1)
            where = "robot in the same process" if layout == "same" else "robot in its own process"
            load = "quiet" if case == "quiet" else f"{background} busy {kind} process(es) beside it"
            if priority > 0:
                load += f", SCHED_FIFO {priority}"
            rows.append(
                (
                    f"{NODES[node][0]} ({NODES[node][1]}) 1 kHz over DDS, {where}, {load}",
                    f"median (range) of {runs} runs",
                    "",
                )
            )
            for label, key in (("echo", "echo"), (node, "node")):
                f = row[key]
                cpu_note = " incl. the stand-in robot" if layout == "same" else ""
                rows.append(
                    (
                        f"  {label}",
                        f"p50 {_span(f, 'latency_p50_ms', '.3f')} ms, p99 {_span(f, 'latency_p99_ms', '.3f')} ms, "
                        f"missed {_span(f, 'missed_cycles', '.0f')}, "
                        f"CPU {_span(f, 'cpu_us_per_message', '.0f')} us/msg{cpu_note}",
                        "floor" if key == "echo" else "",
                    )
                )
            verdict = ", ".join(f"{target}: {'met' if ok else 'MISSED'}" for target, ok in row["targets"].items())
            rows.append(
                (
                    f"  {node} / echo",
                    f"p99 x {row['p99_over_echo']:.2f}, missed x {row['missed_over_echo']:.2f}, "
                    f"CPU x {row['cpu_over_echo']:.2f}",
                    verdict,
                )
            )
    return rows
