"""The fleet's HTML report: every parameter of every robot and joint over time, with alarms.

One PNG per robot and joint (``<robot>__<joint>.png``): a panel per base parameter of the joint,
the daily estimates with their +-2 std band, the baseline window's weighted mean and the days that
alarmed (red). ``index.html`` lists the alarms and fleet outliers and shows the figures, in the
style of `motor_ident.io.report` (separate PNGs, written atomically, figures before the page, a
check on load that every figure displayed).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from motor_ident.io.data import atomic_write
from motor_ident.io.report import _FIGURE_CHECK, _STYLE, save_figure


def _figure(table: pd.DataFrame, tests: pd.DataFrame, alarmed: set[tuple[str, str, int]], title: str) -> object:
    import matplotlib.pyplot as plt  # slow import (0.7 s)

    parameters = list(dict.fromkeys(table["parameter"]))
    columns = min(4, len(parameters))
    rows = int(np.ceil(len(parameters) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.3 * rows), squeeze=False)
    for ax, parameter in zip(axes.ravel(), parameters):
        g = table[table["parameter"] == parameter].sort_values("time")
        day, value, std = g["day"].to_numpy(), g["value"].to_numpy(), g["std"].to_numpy()
        ax.fill_between(day, value - 2 * std, value + 2 * std, color="tab:blue", alpha=0.25, lw=0)
        ax.plot(day, value, "o-", color="tab:blue", ms=3, lw=1)
        t = tests[tests["parameter"] == parameter]
        if len(t):
            ax.axhline(float(t["baseline"].iloc[0]), color="0.4", lw=0.8, ls="--")
        robot = str(g["robot"].iloc[0])
        bad = [k for k, d in enumerate(day) if (robot, parameter, int(d)) in alarmed]
        if bad:
            ax.plot(day[bad], value[bad], "o", color="tab:red", ms=6)
        ax.set_title(parameter, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(parameters) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.supxlabel("day", fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.9, hspace=0.45, wspace=0.3)  # tight_layout: 4x slower
    return fig


def write_fleet_report(out_dir: str | Path, table: pd.DataFrame, tests: pd.DataFrame, result: dict[str, Any]) -> Path:
    """Write ``index.html`` and one PNG per robot and joint into ``out_dir``; return the page.

    Args:
        out_dir: directory to create or update.
        table: the store's long table (`motor_ident.fleet.drift.long_table`).
        tests: every test (`motor_ident.fleet.drift.z_scores`).
        result: alarms and outliers (`motor_ident.fleet.drift.detect`).
    """
    import matplotlib  # slow import (0.7 s)

    matplotlib.use("Agg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    alarmed = {(a["robot"], a["parameter"], a["day"]) for a in result["alarms"]}
    figures = []
    for (robot, joint), group in table.groupby(["robot", "joint"], sort=True):
        name = f"{robot}__{joint}.png"
        title = f"{robot} / {joint}: estimate +- 2 std, baseline mean (dashed), alarms (red)"
        t = tests[(tests["robot"] == robot) & (tests["joint"] == joint)]
        save_figure(_figure(group, t, alarmed, title), out / name)
        figures.append((name, f"{robot} / {joint}"))
    page = _page(table, result, figures)
    path = out / "index.html"
    atomic_write(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    return path


def _page(table: pd.DataFrame, result: dict[str, Any], figures: list[tuple[str, str]]) -> str:
    e = html.escape
    alarm_rows = "".join(
        f"<tr><td class='text'>{e(a['robot'])}</td><td class='text'>{e(a['joint'])}</td>"
        f"<td class='text'>{e(a['parameter'])}</td><td>{a['day']}</td><td>{a['value']:.5g}</td>"
        f"<td>{a['baseline']:.5g}</td><td>{a['statistic']:.3g}</td></tr>"
        for a in result["alarms"]
    )
    outlier_rows = "".join(
        f"<tr><td class='text'>{e(o['robot'])}</td><td class='text'>{e(o['joint'])}</td>"
        f"<td class='text'>{e(o['parameter'])}</td><td>{o['value']:.5g}</td><td>{o['fleet_mean']:.5g}</td>"
        f"<td>{o['fleet_std']:.3g}</td>"
        f"<td>{o['statistic']:.3g}</td></tr>"
        for o in result["outliers"]
    )
    expressions = table.drop_duplicates("parameter")[["parameter", "joint", "expression"]]
    expression_rows = "".join(
        f"<tr><td class='text'>{e(r.parameter)}</td><td class='text'>{e(r.joint)}</td>"
        f"<td class='text'>{e(r.expression)}</td></tr>"
        for r in expressions.itertuples()
    )
    figs = "".join(f"<h3>{e(caption)}</h3><p><img src='{e(name)}' alt='{e(caption)}'></p>" for name, caption in figures)
    note = f"<p class='warn'>{e(result['outliers_note'])}</p>" if result["outliers_note"] else ""
    days = int(table["day"].max()) + 1
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Fleet parameter report</title><style>{_STYLE}</style></head>
<body data-figures="unknown">
<h1>Fleet parameter report</h1>
<p>{len(result["robots"])} robots, {days} days, {table["recording"].nunique()} recordings.</p>
<h2>Drift alarms ({len(result["alarms"])})</h2>
<p>Test: {e(result["test"])}; baseline: each robot's first {result["baseline_days"]} days;
{result["tests"]} tests, family-wise false-alarm budget {result["alpha"]:g}, threshold |z| &gt;
{result["threshold"]:.3g}; standard deviations scaled by {result["std_scale"]:g}.</p>
<table><tr><th>robot</th><th>joint</th><th>parameter</th><th>day</th><th>value</th><th>baseline</th><th>z</th></tr>
{alarm_rows}</table>
<h2>Fleet outliers ({len(result["outliers"])})</h2>
<p>Test: {e(result["outlier_test"])}, threshold |t| &gt; {result["outlier_threshold"]:.3g}.</p>{note}
<table><tr><th>robot</th><th>joint</th><th>parameter</th><th>value</th><th>others' mean</th>
<th>others' std</th><th>t</th></tr>
{outlier_rows}</table>
<h2>Parameters over time</h2>
{figs}
<h2>Base parameters</h2>
<table><tr><th>name</th><th>joint</th><th>expression</th></tr>{expression_rows}</table>
<script>{_FIGURE_CHECK}</script>
</body></html>
"""
