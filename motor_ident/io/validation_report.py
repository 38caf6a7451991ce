"""The HTML page of a validation: identified and nominal models predicting a separate recording.

`write_validation_report` writes ``index.html``, ``prediction.png`` (measured torque with the
identified and the nominal predictions, per joint) and ``rre.png`` (relative residual error per
joint, both models, with the acceptance limits), the metric table, the verdict with its reasons
and the provenance (versions, hashes, command line). Same machinery as `motor_ident.io.report`:
figures written atomically first, the page last, a figure check on ``<body data-figures>``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.validation import AcceptanceLimits, PredictionMetrics, Verdict
from motor_ident.io.data import atomic_directory, atomic_write
from motor_ident.io.report import _FIGURE_CHECK, _STYLE, _subsample, save_figure

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class ValidationReportInput:
    """What a validation page shows.

    Attributes:
        title: page title; source: the recording; robot: robot config name.
        joints: joint names, length n.
        t: sample times (N,) [s]; tau: measured torques (N, n) [N m].
        predicted, nominal: torques of the identified and nominal models (N, n) [N m].
        metrics, nominal_metrics: their per-joint metrics.
        limits: the acceptance limits; verdict: the outcome.
        provenance: what produced the result (versions, hashes, command line).
        notes: what was done to the data (range kept, resampling) and warnings.
    """

    title: str
    source: str
    robot: str
    joints: Sequence[str]
    t: FloatArray
    tau: FloatArray
    predicted: FloatArray
    nominal: FloatArray
    metrics: PredictionMetrics
    nominal_metrics: PredictionMetrics
    limits: AcceptanceLimits
    verdict: Verdict
    provenance: Mapping[str, Any]
    notes: Sequence[str] = ()


def write_validation_report(out_dir: str | Path, data: ValidationReportInput, *, max_drawn: int = 2500) -> Path:
    """Write the page of ``data`` into ``out_dir``; returns the path of ``index.html``."""
    atomic_directory(out_dir, lambda tmp: _write_into(tmp, data, max_drawn=max_drawn))  # whole or absent
    return Path(out_dir) / "index.html"


def _write_into(out: Path, data: ValidationReportInput, *, max_drawn: int = 2500) -> None:
    import matplotlib  # here: matplotlib.pyplot costs ~0.7 s at import (measured, idle)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(data.joints)
    drawn = _subsample(data.t.shape[0], max_drawn)
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.9 * n + 0.6), sharex=True, squeeze=False)
    for j, name in enumerate(data.joints):
        ax = axes[j, 0]
        ax.plot(data.t[drawn], data.tau[drawn, j], color="0.55", linewidth=0.6, label="measured")
        ax.plot(data.t[drawn], data.nominal[drawn, j], color="tab:orange", linewidth=0.7, label="nominal model")
        ax.plot(data.t[drawn], data.predicted[drawn, j], color="tab:blue", linewidth=0.8, label="identified model")
        ax.set_ylabel(f"{name}\n[N m]", fontsize=8)
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle("Validation recording: measured torque and the two models' predictions")
    fig.tight_layout()
    save_figure(fig, out / "prediction.png")

    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * n + 2.0), 3.2))
    x = np.arange(n)
    ax.bar(x - 0.2, data.nominal_metrics.rre, width=0.4, color="tab:orange", label="nominal")
    ax.bar(x + 0.2, data.metrics.rre, width=0.4, color="tab:blue", label="identified")
    for j, name in enumerate(data.joints):
        limit = data.limits.limit("max_rre", name)
        if limit is not None:
            ax.plot([j - 0.45, j + 0.45], [limit, limit], color="tab:red", linewidth=1.2)
    ax.set_xticks(x, list(data.joints), fontsize=7, rotation=20)
    ax.set_ylabel("RRE [%]")
    ax.set_title("Relative residual error per joint (red: acceptance limit)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "rre.png")

    page = _page(data, [("prediction.png", "Measured and predicted torque"), ("rre.png", "Relative residual error")])
    path = out / "index.html"
    atomic_write(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))


def _page(data: ValidationReportInput, figures: list[tuple[str, str]]) -> str:
    e = html.escape
    m, nm = data.metrics, data.nominal_metrics
    rows = []
    for j, name in enumerate(data.joints):
        cells = [
            f"{m.rre[j]:.3g}",
            f"{nm.rre[j]:.3g}",
            f"{m.r2[j]:.4f}",
            f"{m.r2_uncentred[j]:.4f}",
            f"{m.rmse[j]:.4g}",
            f"{m.nrmse[j]:.4f}",
            f"{nm.r2[j]:.4f}",
        ]
        rows.append(f"<tr><td class='text'>{e(name)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    verdict = data.verdict
    status = "<b style='color:#080'>PASSED</b>" if verdict.passed else "<b style='color:#c00'>FAILED</b>"
    reasons = "".join(f"<li>{e(r)}</li>" for r in verdict.reasons)
    checks = "".join(f"<li>{e(c)}</li>" for c in verdict.checks)
    prov = "".join(
        f"<tr><td class='text'>{e(str(k))}</td><td class='text'>{e(str(v))}</td></tr>"
        for k, v in data.provenance.items()
    )
    notes = "".join(f"<li class='warn'>{e(n)}</li>" for n in data.notes)
    figs = "".join(f"<h3>{e(caption)}</h3><p><img src='{e(name)}' alt='{e(caption)}'></p>" for name, caption in figures)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(data.title)}</title><style>{_STYLE}</style></head>
<body data-figures="unknown">
<h1>{e(data.title)}</h1>
<p>robot <b>{e(data.robot)}</b>, recording <code>{e(data.source)}</code>: {data.t.shape[0]} samples.</p>
{f"<ul>{notes}</ul>" if notes else ""}
<h2>Verdict: {status}</h2>
{f"<p>Failed checks:</p><ul>{reasons}</ul>" if reasons else ""}
<details><summary>every check ({len(verdict.checks)})</summary><ul>{checks}</ul></details>
<h2>Prediction per joint</h2>
<table><tr><th>joint</th><th>RRE [%]</th><th>nominal RRE [%]</th><th>R2</th><th>R2 uncentred</th>
<th>RMSE [N m]</th><th>NRMSE</th><th>nominal R2</th></tr>
{"".join(rows)}</table>
<p>RRE = 100 ||tau - tau_pred|| / ||tau|| per joint; NRMSE = RMSE / range of the measured torque.</p>
<h2>Figures</h2>
{figs}
<h2>Provenance</h2>
<table>{prov}</table>
<script>{_FIGURE_CHECK}</script>
</body></html>
"""
