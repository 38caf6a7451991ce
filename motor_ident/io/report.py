"""The HTML report of an identification: one self-contained page plus its PNG figures.

`write_report` writes into a directory ``index.html`` and, next to it, ``torque.png`` (measured
vs predicted torque per joint, held-out part shaded), ``residuals.png`` (residual histograms,
training and held-out), ``friction.png`` (the identified friction model over the velocities of
the data, with the data's friction-like torque: measured minus the rigid-body prediction) and,
for a run with the online identifier, ``gate.png`` (gate state and R^2 over time). The tables
give R^2 / NRMSE per joint on training and held-out data, the condition number, and every base
parameter with its standard deviation and identifiability class (`BaseParameters.classes`).

The page needs nothing but the PNGs beside it (no scripts or styles from the network). A few
lines of inline script mark on ``<body data-figures="loaded/total">`` how many figures the
browser could display and warn on the page when one is missing; the headless-browser test reads
that mark. Every file is written atomically, figures first and the page last, so a page that
exists always finds its figures.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.identification import Identification
from motor_ident.core.rigid_body.base_params import COMBINATION, IDENTIFIABLE
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.io.data import atomic_directory, atomic_write

FloatArray = NDArray[np.float64]

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; font-family: monospace; }
img { max-width: 100%; border: 1px solid #ddd; margin-bottom: 1em; }
.warn { color: #a60; } .missing { color: #c00; font-weight: bold; }
"""

_FIGURE_CHECK = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var loaded = images.filter(function (im) { return im.complete && im.naturalWidth > 0; });
  document.body.setAttribute("data-figures", loaded.length + "/" + images.length);
  images.forEach(function (im) {
    if (!(im.complete && im.naturalWidth > 0)) {
      var note = document.createElement("p");
      note.className = "missing";
      note.textContent = "figure " + im.getAttribute("src") + " is missing: keep the PNG files next to this page";
      im.parentNode.insertBefore(note, im);
    }
  });
});
"""


@dataclass(frozen=True, eq=False)
class ReportInput:
    """What a report shows.

    Attributes:
        title: page title.
        source: where the data came from (file path, scenario).
        robot: robot config name.
        regressor: the robot's full regressor.
        result: the identification.
        t: sample times (N,) [s]; q, qd, qdd, tau: joint data (N, n) in the regressor's joint
            order, the first ``result.n_train`` samples for training, the rest held out.
        gate: online gate timeline as (time [s], open) pairs, or None for an offline fit.
        r2: online R^2 per joint over time as (time (M,) [s], values (M, n)), or None.
        notes: warnings to show (data dropped, recovered bag, ...).
    """

    title: str
    source: str
    robot: str
    regressor: Regressor
    result: Identification
    t: FloatArray
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray
    gate: Sequence[tuple[float, bool]] | None = None
    r2: tuple[FloatArray, FloatArray] | None = None
    notes: Sequence[str] = ()


def _subsample(N: int, limit: int) -> NDArray[np.int64]:
    return np.unique(np.linspace(0, N - 1, min(N, limit)).round().astype(np.int64)) if N else np.zeros(0, np.int64)


FIGURE_FORMATS = ("png", "svg", "pdf")
"""File formats `save_figure` writes, chosen by the file's suffix (PNG for any other suffix)."""


def save_figure(fig: object, path: str | Path, *, dpi: int = 100) -> None:
    """Write a matplotlib figure atomically (temporary file beside ``path``, then rename), then close it.

    Goes through `atomic_write`: an interrupted or failing ``savefig`` leaves no image, whole or
    partial, and an older image at ``path`` untouched. The format follows the suffix of ``path``
    (`FIGURE_FORMATS`; PNG otherwise).
    """
    import matplotlib.pyplot as plt  # here: matplotlib.pyplot costs ~0.7 s at import (measured, idle)

    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    fmt = suffix if suffix in FIGURE_FORMATS else "png"
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi))  # type: ignore[attr-defined]
    finally:
        plt.close(fig)  # type: ignore[arg-type]


def write_report(out_dir: str | Path, data: ReportInput, *, max_points: int = 20000, max_drawn: int = 2500) -> Path:
    """Write the report of ``data`` into ``out_dir``; returns the path of ``index.html``.

    Args:
        out_dir: directory to create or update.
        data: what to show.
        max_points: residuals and predictions are computed on at most this many evenly spaced samples.
        max_drawn: time series and scatter plots draw at most this many of those (drawing is what
            costs: a figure of 20000 points takes seconds to render).
    """
    atomic_directory(
        out_dir, lambda tmp: _write_into(tmp, data, max_points=max_points, max_drawn=max_drawn)
    )  # whole or absent
    return Path(out_dir) / "index.html"


def _write_into(out: Path, data: ReportInput, *, max_points: int = 20000, max_drawn: int = 2500) -> None:
    import matplotlib  # here: matplotlib.pyplot costs ~0.7 s at import (measured, idle)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reg, res = data.regressor, data.result
    joints = reg.robot.joint_names
    n = len(joints)
    N = data.t.shape[0]
    idx = _subsample(N, max_points)
    t, q, qd, qdd, tau = (x[idx] for x in (data.t, data.q, data.qd, data.qdd, data.tau))
    predicted = (
        np.concatenate(
            [reg.predict(res.theta, *(x[s : s + 5000] for x in (q, qd, qdd))) for s in range(0, idx.size, 5000)]
        )
        if idx.size
        else np.zeros((0, n))
    )
    friction = reg.friction_torque(qd, res.theta) if idx.size else np.zeros((0, n))
    heldout = idx >= res.n_train
    drawn = _subsample(idx.size, max_drawn)
    t_split = data.t[res.n_train] if res.n_heldout else None
    figures: list[tuple[str, str]] = []

    # Measured vs predicted torque per joint.
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.9 * n + 0.6), sharex=True, squeeze=False)
    for j, name in enumerate(joints):
        ax = axes[j, 0]
        ax.plot(t[drawn], tau[drawn, j], color="0.55", linewidth=0.6, label="measured")
        ax.plot(t[drawn], predicted[drawn, j], color="tab:blue", linewidth=0.8, label="predicted")
        if t_split is not None:
            ax.axvspan(t_split, data.t[-1], color="tab:orange", alpha=0.12, label="held out")
        ax.set_ylabel(f"{name}\n[N m]", fontsize=8)
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle("Joint torque: measured vs predicted by the identified model")
    fig.tight_layout()
    save_figure(fig, out / "torque.png")
    figures.append(("torque.png", "Measured and predicted joint torque"))

    # Residual histograms.
    residual = tau - predicted
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.6 * rows), squeeze=False)
    for j, name in enumerate(joints):
        ax = axes[j // cols, j % cols]
        for mask, label, color in ((~heldout, "training", "tab:blue"), (heldout, "held out", "tab:orange")):
            if mask.any():
                span = tuple(np.percentile(residual[:, j], [0.1, 99.9]))  # one spike must not squash the rest
                ax.hist(
                    residual[mask, j],
                    bins=40,
                    range=span,
                    histtype="stepfilled",
                    alpha=0.5,
                    color=color,
                    density=True,
                    label=label,
                )
        ax.set_title(f"{name}: std {np.std(residual[:, j]):.3g} N m", fontsize=8)
        ax.set_xlabel("residual [N m]", fontsize=8)
        ax.legend(fontsize=6)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].axis("off")
    fig.tight_layout()
    save_figure(fig, out / "residuals.png")
    figures.append(("residuals.png", "Residuals (measured - predicted)"))

    # Friction over the data's velocities.
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.6 * rows), squeeze=False)
    rigid = predicted - friction
    for j, name in enumerate(joints):
        ax = axes[j // cols, j % cols]
        ax.scatter(
            qd[drawn, j], tau[drawn, j] - rigid[drawn, j], s=1, color="0.6", alpha=0.4, label="measured - rigid body"
        )
        lo, hi = (float(np.min(qd[:, j])), float(np.max(qd[:, j]))) if idx.size else (-1.0, 1.0)
        v = np.linspace(lo, hi, 400)
        V = np.zeros((v.size, n))
        V[:, j] = v
        ax.plot(v, reg.friction_torque(V, res.theta)[:, j], color="tab:red", linewidth=1.2, label="identified")
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("velocity [rad/s]", fontsize=8)
        ax.set_ylabel("friction [N m]", fontsize=8)
        ax.legend(fontsize=6)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].axis("off")
    fig.tight_layout()
    save_figure(fig, out / "friction.png")
    figures.append(("friction.png", "Friction model over the velocities of the data"))

    if data.gate:
        fig, ax = plt.subplots(figsize=(10, 2.8))
        tg = np.array([g[0] for g in data.gate] + [float(data.t[-1]) if N else data.gate[-1][0]])
        state = np.array([float(g[1]) for g in data.gate] + [float(data.gate[-1][1])])
        ax.step(tg, state, where="post", color="k", linewidth=1.6, label="gate open (identified model active)")
        if data.r2 is not None and data.r2[0].size:
            for j, name in enumerate(joints):
                ax.plot(data.r2[0], data.r2[1][:, j], linewidth=0.7, label=f"R2 {name}")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("time [s]")
        ax.legend(fontsize=7, ncol=3, loc="lower right")
        ax.set_title("Online identifier: gate state (1 = open) and R2 per joint on its window")
        fig.tight_layout()
        save_figure(fig, out / "gate.png")
        figures.append(("gate.png", "Online identifier: gate state over time"))

    page = _page(data, figures)
    path = out / "index.html"
    atomic_write(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))


def _page(data: ReportInput, figures: list[tuple[str, str]]) -> str:
    res, fit = data.result, data.result.fit
    joints = data.regressor.robot.joint_names
    e = html.escape

    def num(x: float, fmt: str = ".4f") -> str:
        return f"{x:{fmt}}" if np.isfinite(x) else str(x)

    metric_rows = []
    for j, name in enumerate(joints):
        held = res.heldout
        cells = [num(fit.r2[j]), num(fit.r2_uncentred[j]), num(fit.nrmse[j]), num(fit.rmse[j], ".4g")]
        cells += (
            [num(held.r2[j]), num(held.r2_uncentred[j]), num(held.nrmse[j]), num(held.rmse[j], ".4g")]
            if held is not None
            else ["-"] * 4
        )
        metric_rows.append(f"<tr><td class='text'>{e(name)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    base = res.base
    row_class = [IDENTIFIABLE if not np.any(base.B[r]) else COMBINATION for r in range(base.n_base)]
    std = fit.std
    param_rows = []
    for i, (expr, value, s, cls) in enumerate(zip(base.expressions(), fit.theta, std, row_class)):
        rel = abs(s / value) * 100.0 if value else float("inf")
        param_rows.append(
            f"<tr><td>{i}</td><td class='text'>{e(expr)}</td><td>{value:.6g}</td><td>{s:.3g}</td>"
            f"<td>{num(rel, '.3g')}</td><td class='text'>{e(cls)}</td></tr>"
        )
    unidentifiable = [name for name, c in zip(base.names, base.classes()) if c not in (IDENTIFIABLE, COMBINATION)]
    gate_text = ""
    if data.gate:
        opened = next((t for t, is_open in data.gate if is_open), None)
        gate_text = (
            f"<p>Gate opened first at {opened:.3f} s; open at the end: {data.gate[-1][1]}.</p>"
            if opened is not None
            else "<p>The gate never opened.</p>"
        )
    notes = "".join(f"<li class='warn'>{e(n)}</li>" for n in data.notes)
    figs = "".join(f"<h3>{e(caption)}</h3><p><img src='{e(name)}' alt='{e(caption)}'></p>" for name, caption in figures)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(data.title)}</title><style>{_STYLE}</style></head>
<body data-figures="unknown">
<h1>{e(data.title)}</h1>
<p>robot <b>{e(data.robot)}</b>, data <code>{e(data.source)}</code>: {res.n_train} training samples,
{res.n_heldout} held out; estimator <b>{e(fit.method)}</b>.</p>
{f"<ul>{notes}</ul>" if notes else ""}
<h2>Fit per joint</h2>
<table><tr><th rowspan="2">joint</th><th colspan="4">training</th><th colspan="4">held out</th></tr>
<tr><th>R2</th><th>R2 uncentred</th><th>NRMSE</th><th>RMSE [N m]</th>
<th>R2</th><th>R2 uncentred</th><th>NRMSE</th><th>RMSE [N m]</th></tr>
{"".join(metric_rows)}</table>
<h2>Conditioning</h2>
<table><tr><th>condition number of the (weighted) regressor</th><th>base parameters</th>
<th>full parameters</th></tr>
<tr><td>{num(fit.condition_number, ".4g")}</td><td>{base.n_base}</td><td>{base.n_full}</td></tr></table>
{gate_text}
<h2>Figures</h2>
{figs}
<h2>Base parameters</h2>
<table><tr><th>#</th><th>expression</th><th>value</th><th>std</th><th>std [%]</th><th>class</th></tr>
{"".join(param_rows)}</table>
<p>Unidentifiable (no effect on the torques, {len(unidentifiable)}):
<code>{e(", ".join(unidentifiable) or "-")}</code></p>
<script>{_FIGURE_CHECK}</script>
</body></html>
"""
