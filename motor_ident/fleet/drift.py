"""Drift alarms and fleet outliers from the parameter store.

Change detection (per robot, base parameter and day): a two-sample z-test of the day's estimate
against the robot's baseline window (its first ``baseline_days`` days),

    z = (x_d - x_b) / sqrt(s_d^2 + s_b^2),

where x_b is the inverse-variance weighted mean of the baseline estimates and s_b^2 = 1 / sum(1 /
s_i^2), each s being the estimate's own standard deviation from the fit's covariance (the
sandwich of `motor_ident.core.estimation.covariance`, which includes the residuals'
correlation), multiplied by ``std_scale`` (1 unless a check on a stationary period says
otherwise). The family-wise false-alarm budget ``alpha`` is split over every test of the report
(Bonferroni): a test alarms when |z| > Phi^-1(1 - alpha / (2 m)), m tests. With honest standard
deviations the probability of any false alarm in the whole report is at most alpha.

Fleet outliers (per base parameter): a leave-one-out prediction test of each robot's baseline value
x_r against the other n - 1 robots' baseline values (mean m, standard deviation s),

    t = (x_r - m) / (s sqrt(1 + 1 / (n - 1))),

Student's t with n - 2 degrees of freedom when the fleet's robots are draws of one normal
distribution; the budget ``alpha`` is again split (Bonferroni) over robots x parameters. With few
robots the threshold is high (t_4 for 6 robots): a fleet of six says little about its spread.
Rejected: the robust z-score with the median and MAD (Iglewicz and Hoaglin's 3.5): on stationary
simulated fleets of 6 robots it flagged 2-7 robot-parameters per fleet, the MAD of six values
being often far below the spread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from motor_ident.errors import DataError

TEST_NAME = "two-sample z-test against the baseline window, Bonferroni over all tests"
OUTLIER_NAME = "leave-one-out prediction t-test of each robot's baseline value against the other robots', Bonferroni"


@dataclass(frozen=True)
class DriftSettings:
    """Settings of `detect`.

    Attributes:
        baseline_days: days at the start of each robot's history that form its baseline [days].
        alpha: family-wise false-alarm probability of the whole report [-].
        std_scale: factor on every reported standard deviation [-] (1: trust the fits).
        min_fleet: fewest robots for fleet outliers (at least 4: two degrees of freedom).
    """

    baseline_days: int = 2
    alpha: float = 0.01
    std_scale: float = 1.0
    min_fleet: int = 5


def long_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Store rows (wide) -> one line per (robot, day, parameter): value, std, joint, expression.

    ``day`` counts calendar days (UTC) from the store's first recording. When a recording was
    identified with several settings, the latest identification is kept.

    Raises:
        DataError: no rows.
    """
    if rows.empty:
        raise DataError("the parameter store holds no rows")
    rows = rows.sort_values("identified_at").drop_duplicates(["robot", "content_hash"], keep="last")
    dates = pd.to_datetime(rows["date"])
    rows = rows.assign(day=(dates - dates.min()).dt.days.astype(int))
    out = []
    for labels_json, group in rows.groupby("parameter_labels"):
        for label in json.loads(str(labels_json)):
            name = label["name"]
            out.append(
                pd.DataFrame(
                    {
                        "robot": group["robot"].to_numpy(),
                        "day": group["day"].to_numpy(),
                        "date": group["date"].to_numpy(),
                        "time": group["time"].to_numpy(),
                        "recording": group["recording"].to_numpy(),
                        "joint": label["joint"],
                        "parameter": name,
                        "expression": label["expression"],
                        "value": group[f"p.{name}"].to_numpy(dtype=float),
                        "std": group[f"std.{name}"].to_numpy(dtype=float),
                    }
                )
            )
    return pd.concat(out, ignore_index=True).sort_values(["robot", "parameter", "time"], ignore_index=True)


def _weighted(values: np.ndarray, std: np.ndarray) -> tuple[float, float]:
    """Inverse-variance weighted mean and its standard deviation."""
    w = 1.0 / np.maximum(std, 1e-300) ** 2
    return float(np.sum(w * values) / np.sum(w)), float(np.sqrt(1.0 / np.sum(w)))


def z_scores(table: pd.DataFrame, settings: DriftSettings) -> pd.DataFrame:
    """Every test: robot, joint, parameter, day, value, baseline, baseline_std, z (days after the baseline).

    Several recordings of one day are combined by their weighted mean first.
    """
    rows = []
    for (robot, parameter), group in table.groupby(["robot", "parameter"], sort=True):
        first = int(group["day"].min())
        daily = [
            (int(day), *_weighted(g["value"].to_numpy(), settings.std_scale * g["std"].to_numpy()))
            for day, g in group.groupby("day")
        ]
        baseline = [(v, s) for day, v, s in daily if day < first + settings.baseline_days]
        if not baseline:
            continue
        x_b, s_b = _weighted(np.array([v for v, _ in baseline]), np.array([s for _, s in baseline]))
        joint = str(group["joint"].iloc[0])
        for day, value, std in daily:
            if day < first + settings.baseline_days:
                continue
            z = (value - x_b) / np.hypot(std, s_b)
            rows.append((robot, joint, parameter, day, value, std, x_b, s_b, z))
    columns = ["robot", "joint", "parameter", "day", "value", "std", "baseline", "baseline_std", "z"]
    return pd.DataFrame(rows, columns=columns)


def threshold(tests: int, alpha: float) -> float:
    """Two-sided z threshold keeping the family-wise false-alarm probability of ``tests`` tests at ``alpha``."""
    from scipy.stats import norm  # slow import (0.8 s)

    return float(norm.isf(alpha / (2.0 * max(tests, 1))))


def fleet_outliers(table: pd.DataFrame, settings: DriftSettings) -> tuple[pd.DataFrame, float]:
    """Robots whose baseline value of a parameter is far from the other robots' (t, threshold)."""
    from scipy.stats import t as student  # slow import (0.8 s)

    columns = ["robot", "joint", "parameter", "value", "fleet_mean", "fleet_std", "z"]
    per_robot = []
    for (robot, parameter), group in table.groupby(["robot", "parameter"], sort=True):
        base = group[group["day"] < group["day"].min() + settings.baseline_days]
        value, _ = _weighted(base["value"].to_numpy(), base["std"].to_numpy())
        per_robot.append((robot, str(group["joint"].iloc[0]), parameter, value))
    frame = pd.DataFrame(per_robot, columns=["robot", "joint", "parameter", "value"])
    n = frame["robot"].nunique()
    if n < max(settings.min_fleet, 4):
        return pd.DataFrame([], columns=columns), float("inf")
    t_star = float(student.isf(settings.alpha / (2.0 * len(frame)), n - 2))
    out = []
    for parameter, group in frame.groupby("parameter"):
        values = group["value"].to_numpy()
        for k, row in enumerate(group.itertuples()):
            others = np.delete(values, k)
            mean, std = float(others.mean()), float(others.std(ddof=1))
            t = (values[k] - mean) / (std * np.sqrt(1.0 + 1.0 / others.size)) if std > 0.0 else 0.0
            if abs(t) > t_star:
                out.append((row.robot, row.joint, parameter, values[k], mean, std, t))
    return pd.DataFrame(out, columns=columns), t_star


def detect(table: pd.DataFrame, settings: DriftSettings) -> dict[str, Any]:
    """Alarms and outliers of a long table (`long_table`), as the JSON ``fleet report`` writes."""
    tests = z_scores(table, settings)
    z_star = threshold(len(tests), settings.alpha)
    alarms = tests[np.abs(tests["z"]) > z_star]
    outliers, t_star = fleet_outliers(table, settings)
    robots = sorted(table["robot"].unique())
    return {
        "test": TEST_NAME,
        "alpha": settings.alpha,
        "tests": int(len(tests)),
        "threshold": z_star,
        "baseline_days": settings.baseline_days,
        "std_scale": settings.std_scale,
        "fraction_beyond_1.96": float(np.mean(np.abs(tests["z"]) > 1.96)) if len(tests) else None,
        "max_abs_z": float(np.max(np.abs(tests["z"]))) if len(tests) else None,
        "alarms": [
            {
                "robot": a.robot,
                "joint": a.joint,
                "parameter": a.parameter,
                "day": int(a.day),
                "value": float(a.value),
                "baseline": float(a.baseline),
                "statistic": float(a.z),
                "threshold": z_star,
                "test": "z",
            }
            for a in alarms.itertuples()
        ],
        "outlier_test": OUTLIER_NAME,
        "outlier_threshold": t_star,
        "outliers": [
            {
                "robot": o.robot,
                "joint": o.joint,
                "parameter": o.parameter,
                "value": float(o.value),
                "fleet_mean": float(o.fleet_mean),
                "fleet_std": float(o.fleet_std),
                "statistic": float(o.z),
                "threshold": t_star,
            }
            for o in outliers.itertuples()
        ],
        "outliers_note": None
        if len(robots) >= max(settings.min_fleet, 4)
        else f"{len(robots)} robots: fleet outliers need at least {max(settings.min_fleet, 4)}",
        "robots": robots,
    }
