"""Numbers and plots of a scenario run (``motor-ident demo`` / ``motor-ident run``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.io.report import save_figure

FloatArray = NDArray[np.float64]


@dataclass
class Recording:
    """Time series the `Recorder` collected (lists of (time, array) appended in arrival order).

    With ``keep_series`` False (long runs) only the counters grow: ``states``, ``commands``,
    ``nonfinite_commands``; the lists stay empty except ``gate``, which changes rarely. Arrays are
    per joint in the scenario's joint order; messages that did not fit (another publisher's, a
    malformed one) are not kept but counted in ``dropped``: topic -> reason -> count.
    """

    keep_series: bool = True
    states: int = 0
    state: list[tuple[float, FloatArray, FloatArray]] = field(default_factory=list)  # t, q, effort
    predicted: list[tuple[float, FloatArray]] = field(default_factory=list)
    tracking_error: list[tuple[float, FloatArray]] = field(default_factory=list)
    r2: list[tuple[float, FloatArray]] = field(default_factory=list)
    gate: list[tuple[float, bool]] = field(default_factory=list)
    command_step: list[tuple[float, float]] = field(default_factory=list)  # t, max |u_k - u_k-1| [N m]
    commands: int = 0
    nonfinite_commands: int = 0
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class RunResult:
    """What a scenario run produced.

    ``settings``: node name -> setting name -> the value the run used, for every node it started
    (the identifier's ``r2_threshold`` and the excitation's ``ramp_time`` shape the report).
    ``lockstep``: simulator node name -> its lockstep counts (`motor_ident.sim.lockstep.LockstepCounts`
    as a dict), for the simulators that ran in lockstep.
    ``commands_published``: commands the controllers (feedforward, pwm_feedforward) published, by
    their own count (node processes: their first /diagnostics after the run's end); None when no
    controller was heard.
    The recorder's own count (``recording.commands``) is what reached it, fewer on a busy machine.
    """

    scenario: str
    robot: str
    joints: tuple[str, ...]
    sim_time: float
    wall_time: float
    recording: Recording
    identifier_summary: dict[str, object]
    settings: Mapping[str, Mapping[str, Any]]
    lockstep: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    commands_published: int | None = None

    def setting(self, node: str, name: str) -> Any:
        """The value of setting ``name`` of ``node`` in this run (None when the run did not start it)."""
        return self.settings.get(node, {}).get(name)


def _series(pairs: list[tuple[float, Any]], width: int | None = None) -> tuple[FloatArray, FloatArray]:
    """Times (k,) and values (k, width) of the pairs whose value has ``width`` entries (all pairs
    of scalars when None): a ragged entry is left out, never an error."""
    times, values = [], []
    for t, value in pairs:
        array = np.asarray(value, dtype=float)
        if (array.shape == () if width is None else array.shape == (width,)) and np.isfinite(t):
            times.append(float(t))
            values.append(array)
    if not values:
        return np.zeros(0), np.zeros((0,) if width is None else (0, width))
    return np.array(times), np.array(values)


def summarize(result: RunResult, *, settle: float = 1.0) -> dict[str, Any]:
    """The demo's JSON: when the gate opened, R^2, tracking RMSE before and after, command counts,
    and the settings of every node.

    The ramp-in lasts the excitation's ``ramp_time`` (none without an excitation node). Tracking
    RMSE is over all joints [rad]: ``nominal`` from the end of the ramp-in to the gate
    opening, ``identified`` from ``settle`` seconds after the opening to the end. Command steps
    (largest change of any joint's command between consecutive commands [N m]):
    ``command_step_max_at_switch`` from the gate opening to ``settle`` seconds after it (the model
    switch), ``command_step_max_tracking`` over the rest of the run after the ramp-in.
    """
    rec = result.recording
    ramp_time = float(result.setting("excitation", "ramp_time") or 0.0)
    opened = next((t for t, is_open in rec.gate if is_open), None)
    t_err, err = _series(rec.tracking_error, len(result.joints))

    def rmse(mask: np.ndarray) -> float | None:
        return float(np.sqrt(np.mean(err[mask] ** 2))) if mask.any() else None

    if t_err.size:
        before = rmse((t_err >= ramp_time) & (t_err < (opened if opened is not None else np.inf)))
        after = rmse(t_err >= opened + settle) if opened is not None else None
    else:
        before = after = None
    t_step, step = _series(rec.command_step)
    switching = (t_step >= opened) & (t_step <= opened + settle) if opened is not None else np.zeros(t_step.size, bool)
    tracking = (t_step >= ramp_time) & ~switching
    summary = result.identifier_summary
    return {
        "scenario": result.scenario,
        "robot": result.robot,
        "joints": list(result.joints),
        "sim_time_s": result.sim_time,
        "wall_time_s": result.wall_time,
        "gate_opened_at_s": opened,
        "gate_open_at_end": summary["gate_open"],
        "gate_reason": summary["reason"],
        "r2_per_joint": summary["r2_per_joint"],
        "r2_uncentred_per_joint": summary["r2_uncentred_per_joint"],
        "condition_number": summary["condition_number"],
        "tracking_rmse_nominal": before,
        "tracking_rmse_identified": after,
        "commands_published": result.commands_published,
        "commands_recorded": rec.commands,
        "command_step_max_at_switch": float(step[switching].max()) if switching.any() else None,
        "command_step_max_tracking": float(step[tracking].max()) if tracking.any() else None,
        "physically_consistent": summary["physically_consistent"],
        "nonfinite_commands": rec.nonfinite_commands,
        "dropped_samples": summary["dropped_samples"],
        "recorder_dropped_messages": {topic: dict(counts) for topic, counts in rec.dropped.items()},
        "lockstep": {node: dict(counts) for node, counts in result.lockstep.items()},
        "settings": {
            node: {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
            for node, values in result.settings.items()
        },
    }


def plot_run(result: RunResult, out_dir: str | Path) -> list[Path]:
    """PNG plots of a run: measured vs predicted torque, R^2 over time with the identifier's
    ``r2_threshold``, tracking error (as Kolathaya et al. 2016)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = result.recording
    opened = next((t for t, is_open in rec.gate if is_open), None)
    paths = []

    def mark(ax: Any) -> None:
        if opened is not None:
            ax.axvline(opened, color="tab:green", linestyle="--", linewidth=1, label="gate opens")

    n = len(result.joints)
    t_state, effort = _series([(t, tau) for t, _, tau in rec.state], n)
    t_pred, pred = _series(rec.predicted, n)
    fig, axes = plt.subplots(len(result.joints), 1, figsize=(9, 2.0 * len(result.joints)), sharex=True, squeeze=False)
    for j, name in enumerate(result.joints):
        ax = axes[j, 0]
        if effort.size:
            ax.plot(t_state, effort[:, j], color="0.6", linewidth=0.5, label="measured")
        if pred.size:
            ax.plot(t_pred, pred[:, j], color="tab:blue", linewidth=1.0, label="predicted (active model)")
        mark(ax)
        ax.set_ylabel(f"{name}\n[N m]", fontsize=8)
    if axes[0, 0].get_legend_handles_labels()[0]:
        axes[0, 0].legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle("Joint torque: measured vs predicted by the active model")
    fig.tight_layout()
    paths.append(out / "torque_measured_vs_predicted.png")
    save_figure(fig, paths[-1], dpi=110)

    t_r2, r2 = _series(rec.r2, n)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    if r2.size:
        for j, name in enumerate(result.joints):
            ax.plot(t_r2, r2[:, j], label=name)
    r2_threshold = result.setting("identifier", "r2_threshold")
    if r2_threshold is not None:
        ax.axhline(r2_threshold, color="k", linestyle=":", label=f"threshold {r2_threshold:g}")
    mark(ax)
    low = float(np.nanmin(r2)) if r2.size and np.isfinite(r2).any() else 1.0
    ax.set_ylim(max(0.0, low - 0.02), 1.002)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("R2 on the buffer")
    if ax.get_legend_handles_labels()[0]:  # no identifier: no R^2, no threshold
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    paths.append(out / "r2_over_time.png")
    save_figure(fig, paths[-1], dpi=110)

    t_err, err = _series(rec.tracking_error, n)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    if err.size:
        ax.semilogy(t_err, np.maximum(np.linalg.norm(err, axis=1), 1e-6), color="tab:red", linewidth=0.8)
    mark(ax)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("|q_ref - q| [rad]")
    ax.set_title("Tracking error: nominal model, then identified model")
    if opened is not None:
        ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "tracking_error.png")
    save_figure(fig, paths[-1], dpi=110)
    return paths
