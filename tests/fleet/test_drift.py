"""Drift alarms and fleet outliers on a hand-made parameter history with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from motor_ident.fleet.drift import DriftSettings, detect, z_scores

ROBOTS, DAYS = 6, 5


def _table(rng: np.random.Generator) -> pd.DataFrame:
    """6 robots x 5 days of two parameters: robot_02's 'b' jumps 12 std on day 3, robot_05's 'a' is off."""
    rows = []
    for r in range(ROBOTS):
        level = {
            "a": 1.0 + 0.05 * rng.standard_normal() + (1.0 if r == 5 else 0.0),
            "b": 2.0 + 0.05 * rng.standard_normal(),
        }
        for day in range(DAYS):
            for parameter, std in (("a", 0.01), ("b", 0.02)):
                jump = 12 * std if (r == 2 and parameter == "b" and day >= 3) else 0.0
                value = level[parameter] + jump + std * rng.standard_normal()
                rows.append((f"robot_{r:02d}", day, f"2026-01-0{day + 5}", day * 86400.0, f"r{r}d{day}",
                             "j1", parameter, parameter, value, std))  # fmt: skip
    columns = ["robot", "day", "date", "time", "recording", "joint", "parameter", "expression", "value", "std"]
    return pd.DataFrame(rows, columns=columns)


def test_a_jump_beyond_its_uncertainty_alarms_from_its_day(rng: np.random.Generator) -> None:
    """Only robot_02's 'b' on days 3 and 4 alarm; the threshold is the Bonferroni z of all tests."""
    result = detect(_table(rng), DriftSettings())
    m = ROBOTS * 2 * (DAYS - 2)
    assert result["tests"] == m
    np.testing.assert_allclose(result["threshold"], norm.isf(0.01 / (2 * m)))
    assert [(a["robot"], a["parameter"], a["day"]) for a in result["alarms"]] == [
        ("robot_02", "b", 3),
        ("robot_02", "b", 4),
    ]


def test_z_uses_both_uncertainties(rng: np.random.Generator) -> None:
    """z = (x - baseline) / sqrt(s^2 + s_b^2) with the baseline's weighted mean over 2 days (s_b = s / sqrt 2)."""
    table = _table(rng)
    tests = z_scores(table, DriftSettings())
    one = table[(table["robot"] == "robot_00") & (table["parameter"] == "a")]
    baseline = one["value"].iloc[:2].mean()
    expected = (one["value"].iloc[2] - baseline) / np.hypot(0.01, 0.01 / np.sqrt(2))
    z = tests[(tests["robot"] == "robot_00") & (tests["parameter"] == "a") & (tests["day"] == 2)]["z"]
    np.testing.assert_allclose(z.to_numpy(), [expected])


def test_the_robot_unlike_its_siblings_is_a_fleet_outlier(rng: np.random.Generator) -> None:
    """robot_05's 'a' (20 fleet spreads off) is flagged by the leave-one-out t-test; nothing below min_fleet."""
    table = _table(rng)
    result = detect(table, DriftSettings())
    assert [(o["robot"], o["parameter"]) for o in result["outliers"]] == [("robot_05", "a")]
    assert result["outliers"][0]["statistic"] > result["outlier_threshold"] > 5.0
    small = detect(table[table["robot"] < "robot_04"], DriftSettings())
    assert small["outliers"] == [] and "need at least 5" in small["outliers_note"]
