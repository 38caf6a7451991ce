"""Szabó & Szádeczky-Kardoss 2021: 24 base parameters, unbiased friction, WLS at the Cramer-Rao bound, CLI table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from motor_ident.core.excitation.fourier import FourierTrajectory
from motor_ident.papers.szabo.reproduce import (
    PAPER_TABLE2,
    MonteCarlo,
    SzaboSettings,
    monte_carlo,
    optimised_trajectory,
)

RUNS = 400  # enough that a variance ratio outside [0.7, 1.4] is a real disagreement (sd of the ratio ~0.07)
SETTINGS = SzaboSettings(samples=50, max_iterations=60, data_stiction_gain=None, data_stribeck_gain=None)
MISMATCHED = SzaboSettings(samples=50, max_iterations=60)  # the data's K_v, delta differ from the fitted ones


@pytest.fixture(scope="module")
def excitation() -> tuple[FourierTrajectory, dict[str, float]]:
    """One optimised (Frobenius criterion) trajectory for the whole module."""
    return optimised_trajectory(starts=1, seed=0, settings=SETTINGS)


def test_friction_shape_mismatch_biases_joint2_like_the_paper(
    excitation: tuple[FourierTrajectory, dict[str, float]],
) -> None:
    """Data with K_v, delta other than the fitted ones: tau_v(2) biased low, tau_sc(2) high, as in Table 2."""
    mc = monte_carlo(excitation[0], runs=60, seed=2, settings=MISMATCHED)
    assert np.all(mc.shape_error > 0.05)
    for name, sign in (("joint2.tau_v", -1.0), ("joint2.tau_sc", 1.0)):
        k = mc.names.index(name)
        z = (mc.ls[:, k].mean() - mc.exact[k]) / mc.ls[:, k].std(ddof=1)
        assert sign * z > 0.2, (name, z)


@pytest.fixture(scope="module")
def mc(excitation: tuple[FourierTrajectory, dict[str, float]]) -> MonteCarlo:
    """LS and WLS over RUNS noise draws along the optimised trajectory."""
    return monte_carlo(excitation[0], runs=RUNS, seed=1, settings=SETTINGS)


def _friction(mc: MonteCarlo) -> np.ndarray:
    return np.array([k for k, name in enumerate(mc.names) if name.split(".")[-1] in ("tau_s", "tau_sc", "tau_v")])


def test_24_identifiable_parameters_and_exact_model(mc: MonteCarlo) -> None:
    """24 base parameters as in the paper, all 9 friction parameters identifiable alone; L theta = RNEA + friction."""
    assert mc.n_base == 24
    assert _friction(mc).size == 9
    assert mc.model_error < 1e-8


def test_friction_estimates_unbiased(mc: MonteCarlo) -> None:
    """LS and WLS friction means lie within 3 standard errors of the exact (paper's) values."""
    idx = _friction(mc)
    for estimates in (mc.ls, mc.wls):
        error = estimates[:, idx].mean(axis=0) - mc.exact[idx]
        standard_error = estimates[:, idx].std(axis=0, ddof=1) / np.sqrt(RUNS)
        assert np.all(np.abs(error) <= 3.0 * standard_error), error / standard_error
    paper_exact = {row[0]: row[1] for row in PAPER_TABLE2}
    for k in idx:
        joint, name = mc.names[k].split(".")
        assert mc.exact[k] == pytest.approx(paper_exact[f"{name}({joint[-1]})"])


def test_wls_variance_not_above_ls(mc: MonteCarlo) -> None:
    """WLS has no larger empirical variance than LS for at least 80 % of the parameters."""
    assert np.mean(mc.wls.var(axis=0, ddof=1) <= mc.ls.var(axis=0, ddof=1)) >= 0.8


def test_wls_covariance_at_cramer_rao_bound(mc: MonteCarlo) -> None:
    """Empirical WLS variance / diag((L' Sigma^-1 L)^-1) within [0.7, 1.4]; LS matches its sandwich covariance."""
    wls_ratio = mc.wls.var(axis=0, ddof=1) / np.diag(mc.crb)
    ls_ratio = mc.ls.var(axis=0, ddof=1) / np.diag(mc.ls_covariance)
    assert np.all((wls_ratio > 0.7) & (wls_ratio < 1.4)), wls_ratio
    assert np.all((ls_ratio > 0.7) & (ls_ratio < 1.4)), ls_ratio
    # Gauss-Markov: the bound itself is below the LS covariance for every parameter.
    assert np.all(np.diag(mc.crb) <= np.diag(mc.ls_covariance) * (1.0 + 1e-9))


def test_optimised_trajectory_better_than_random(excitation: tuple[FourierTrajectory, dict[str, float]]) -> None:
    """The Frobenius-optimised trajectory is better conditioned than random ones within the same limits."""
    values = excitation[1]
    assert values["condition_number"] * 5.0 <= values["baseline_condition_number"]
    assert values["condition_number"] < values["baseline_full_range_condition_number"]


def test_cli_reproduce_szabo(tmp_path: Path, excitation: tuple[FourierTrajectory, dict[str, float]]) -> None:
    """motor-ident reproduce szabo: rows with kind and verdict, the joint-2 bias beside the paper's, CSV table."""
    from motor_ident.cli import main
    from motor_ident.io.trajectory import NamedTrajectory, save_trajectory

    trajectory_file, report, table = tmp_path / "traj.yaml", tmp_path / "szabo.json", tmp_path / "szabo.csv"
    save_trajectory(trajectory_file, NamedTrajectory(excitation[0], ("joint1", "joint2", "joint3")))
    argv = ["reproduce", "szabo", "--runs", "100", "--trajectory", str(trajectory_file)]
    code = main(argv + ["--json", str(report), "--out", str(table)])
    payload = json.loads(report.read_text())
    assert code == (0 if payload["passed"] else 1)
    assert payload["passed"] is True, payload["required"]
    rows = {row["name"]: row for row in payload["rows"]}
    assert rows["identifiable (base) parameters"]["ours"]["exact"] == 24
    for joint, (tau_s, tau_v, tau_sc) in enumerate(zip([2, 1, 2], [0.5, 0.277, 0.03], [-0.3, -0.2, -0.3]), 1):
        assert rows[f"joint{joint}.tau_s: LS bias (mean - exact) / sd"]["paper"]["exact"] == tau_s
        assert rows[f"joint{joint}.tau_v: LS bias (mean - exact) / sd"]["paper"]["exact"] == tau_v
        assert rows[f"joint{joint}.tau_sc: LS bias (mean - exact) / sd"]["paper"]["exact"] == tau_sc
    bias = rows["joint2.tau_v: LS bias (mean - exact) / sd"]
    assert bias["kind"] == "paper" and bias["reproduced"] is not None
    assert rows["link3.mx: WLS variance / Cramer-Rao bound"]["kind"] == "self-check"
    assert table.read_text().splitlines()[0].startswith("kind,name,exact,LS mean")
