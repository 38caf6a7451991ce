"""Excitation design: criteria against direct formulas, limits, rest to rest, gain over random, YAML, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.excitation.criteria import Criterion, condition_number, d_optimality, frobenius_condition
from motor_ident.core.excitation.design import ExcitationConfig, ExcitationProblem, ExcitationResult
from motor_ident.core.excitation.fourier import FourierTrajectory
from motor_ident.core.excitation.limits import limits_from_robot
from motor_ident.core.excitation.optimise import baseline_trajectory, design_excitation
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.io.trajectory import NamedTrajectory, load_trajectory, save_trajectory

ACCELERATION = 5.0  # rad/s^2


def _problem(**overrides: object) -> ExcitationProblem:
    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    settings = {"criterion": "cond", "samples": 50, "starts": 2, "max_iterations": 60, "seed": 0, **overrides}
    torque_fraction = settings.pop("torque_fraction", None)
    return ExcitationProblem(
        regressor,
        structural_base_parameters(regressor),
        limits_from_robot(
            regressor.robot,
            acceleration=ACCELERATION,
            position_margin=0.05,
            torque_fraction=torque_fraction,  # type: ignore[arg-type]
        ),
        ExcitationConfig(**settings),  # type: ignore[arg-type]
        theta_nominal=config.nominal_parameters(regressor),
    )


@pytest.fixture(scope="module")
def problem() -> ExcitationProblem:
    """The szabo_3dof problem, condition-number criterion, small settings for speed."""
    return _problem()


@pytest.fixture(scope="module")
def designed(problem: ExcitationProblem) -> ExcitationResult:
    """One optimised trajectory shared by the tests of this module."""
    return design_excitation(problem)


def test_criteria_match_direct_formulas(rng: np.random.Generator) -> None:
    """cond, CondF(W'W) (Szabó & Szádeczky-Kardoss 2021, eq. 20) and -log det(W'W / N) agree with textbooks."""
    W = rng.standard_normal((300, 7)) * np.array([1.0, 3.0, 0.2, 5.0, 1.0, 0.7, 2.0])
    A = W.T @ W
    np.testing.assert_allclose(condition_number(W), np.linalg.cond(W), rtol=1e-10)
    direct = np.linalg.norm(A, "fro") * np.linalg.norm(np.linalg.inv(A), "fro")
    np.testing.assert_allclose(frobenius_condition(W), direct, rtol=1e-9)
    np.testing.assert_allclose(d_optimality(W, 100), -np.linalg.slogdet(A / 100)[1], rtol=1e-10)
    singular = W.copy()
    singular[:, 2] = singular[:, 0]
    assert condition_number(singular) >= 1e14


def test_limits_and_rest_to_rest(problem: ExcitationProblem, designed: ExcitationResult) -> None:
    """The optimum stays within q, qd, qdd limits on a fine grid and starts and ends at rest."""
    t = np.linspace(0.0, problem.period, 8001)
    q, qd, qdd = designed.trajectory.evaluate(t)
    lim = problem.limits
    assert np.all(q <= lim.position_upper + 1e-9) and np.all(q >= lim.position_lower - 1e-9)
    assert np.all(np.abs(qd) <= lim.velocity + 1e-9)
    assert np.all(np.abs(qdd) <= ACCELERATION + 1e-9)
    np.testing.assert_allclose(qd[[0, -1]], 0.0, atol=1e-12)
    np.testing.assert_allclose(qdd[[0, -1]], 0.0, atol=1e-12)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-12)
    np.testing.assert_allclose(designed.trajectory.q0, lim.centre)
    # The optimum uses the limits: some bound is (nearly) active.
    assert problem.feasible_scale(designed.trajectory) < 1.05


def test_optimum_beats_random_trajectories(problem: ExcitationProblem, designed: ExcitationResult) -> None:
    """Condition number >= 5x lower than random Fourier trajectories in the same limits, and below full-range ones."""
    rng = np.random.default_rng(7)
    random = [problem.all_criteria(baseline_trajectory(problem, rng))["condition_number"] for _ in range(3)]
    full = [
        problem.all_criteria(baseline_trajectory(problem, rng, fill_limits=True))["condition_number"] for _ in range(3)
    ]
    assert designed.condition_number * 5.0 <= min(random), (designed.condition_number, random)
    assert designed.condition_number * 1.3 <= np.mean(full), (designed.condition_number, full)
    # Every start ended no worse than where it began, and the best start is reported.
    for history in designed.history:
        assert history[-1] <= history[0]
    assert designed.criterion_value == pytest.approx(designed.start_values.min())


def test_baselines_respect_limits(problem: ExcitationProblem) -> None:
    """Random baselines are feasible; the full-range one touches a limit."""
    rng = np.random.default_rng(3)
    for fill in (False, True):
        trajectory = baseline_trajectory(problem, rng, fill_limits=fill)
        violation = problem.violation(trajectory, samples=4000)
        assert violation.position <= 1e-9 and violation.velocity <= 1e-9 and violation.acceleration <= 1e-9
    assert problem.feasible_scale(trajectory, samples=4000) == pytest.approx(1.0, abs=2e-3)


def test_block_split_is_exact(problem: ExcitationProblem, rng: np.random.Generator) -> None:
    """Inertia + velocity + gravity blocks sum to the rigid regressor; linear in qdd, quadratic in qd, resp."""
    q, qd, qdd = (rng.standard_normal((20, 3)) for _ in range(3))
    alpha, beta, gamma = problem._blocks(q, qd, qdd)
    cols = problem.base.independent[problem.rigid_base_columns]
    np.testing.assert_allclose(alpha + beta + gamma, problem.regressor.rows(q, qd, qdd)[..., cols], atol=1e-10)
    alpha2, beta2, gamma2 = problem._blocks(q, 2.0 * qd, 3.0 * qdd)
    np.testing.assert_allclose(alpha2, 3.0 * alpha, atol=1e-10)
    np.testing.assert_allclose(beta2, 4.0 * beta, atol=1e-10)
    np.testing.assert_allclose(gamma2, gamma, atol=1e-12)
    # Gravity excites only first moments: fewer base columns than the inertia block.
    a_cols, b_cols, g_cols = problem._structural_block_columns()
    assert 0 < g_cols.size < a_cols.size


def test_rigid_only_criterion_is_the_friction_free_condition_number(problem: ExcitationProblem) -> None:
    """``rigid_only`` evaluates cond on the rigid-body base columns: the number all_criteria reports as
    condition_number_rigid (the matrix the block criterion and Liu et al.'s Table 2 use), not the full one."""
    rigid = _problem(rigid_only=True)
    trajectory = baseline_trajectory(problem, np.random.default_rng(5), fill_limits=True)
    values = problem.all_criteria(trajectory)
    L = problem.base_regressor(trajectory, weighted=False)
    assert values["condition_number_rigid"] == pytest.approx(condition_number(L[:, problem.rigid_base_columns]))
    assert rigid.criterion_value(trajectory, Criterion.COND) == pytest.approx(values["condition_number_rigid"])
    assert problem.rigid_base_columns.size < L.shape[1]  # friction columns exist and are dropped


def test_every_criterion_improves_on_its_start() -> None:
    """A few iterations of each criterion lower it from the random start, within the limits."""
    for criterion in Criterion:
        problem = _problem(criterion=criterion.value, starts=1, max_iterations=8, samples=30)
        result = design_excitation(problem)
        assert result.criterion_value < result.history[0][0], criterion
        assert problem.violation(result.trajectory).worst <= 1e-9, criterion


def test_design_is_reproducible() -> None:
    """The same seed gives the same coefficients; another seed another trajectory."""
    runs = [design_excitation(_problem(starts=1, max_iterations=5, samples=30, seed=s)) for s in (4, 4, 5)]
    np.testing.assert_array_equal(runs[0].trajectory.a, runs[1].trajectory.a)
    np.testing.assert_array_equal(runs[0].trajectory.b, runs[1].trajectory.b)
    assert not np.allclose(runs[0].trajectory.a, runs[2].trajectory.a)


def test_torque_bound_is_respected() -> None:
    """With a torque bound, RNEA + friction along the optimum stays within it."""
    problem = _problem(torque_fraction=0.4, starts=1, max_iterations=15, samples=30)
    result = design_excitation(problem)
    tau = problem.torque(result.trajectory)
    assert problem.limits.torque is not None
    assert np.all(np.abs(tau) <= problem.limits.torque + 1e-6), np.abs(tau).max(axis=0)


def test_bad_settings_name_the_key() -> None:
    """Invalid settings raise ConfigError naming the key and value."""
    with pytest.raises(ConfigError, match="criterion = 'bogus'"):
        ExcitationConfig(criterion="bogus")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="harmonics = 1"):
        ExcitationConfig(harmonics=1)
    with pytest.raises(ConfigError, match="block_weights"):
        ExcitationConfig(block_weights=(0.0, 0.0, 0.0))


def test_trajectory_yaml_round_trip(tmp_path: Path, rng: np.random.Generator) -> None:
    """Save then load gives the same coefficients; select() reorders joints; a broken file is a ConfigError."""
    trajectory = FourierTrajectory(
        a=rng.standard_normal((3, 4)), b=rng.standard_normal((3, 4)), q0=rng.standard_normal(3), base_frequency=0.2
    )
    path = tmp_path / "traj.yaml"
    save_trajectory(path, NamedTrajectory(trajectory, ("j1", "j2", "j3"), {"criterion": "cond"}))
    loaded = load_trajectory(path)
    assert loaded.joints == ("j1", "j2", "j3") and loaded.metadata["criterion"] == "cond"
    np.testing.assert_array_equal(loaded.trajectory.a, trajectory.a)
    np.testing.assert_array_equal(loaded.trajectory.b, trajectory.b)
    reordered = loaded.select(["j3", "j1", "j2"])
    t = np.linspace(0.0, 5.0, 11)
    np.testing.assert_allclose(reordered.evaluate(t)[0], trajectory.evaluate(t)[0][:, [2, 0, 1]])
    with pytest.raises(ConfigError, match="j9"):
        loaded.select(["j9"])
    path.write_text(path.read_text().replace("base_frequency: 0.2", "base_frequency: -1"))
    with pytest.raises(ConfigError, match="base_frequency"):
        load_trajectory(path)


def test_cli_excite_writes_yaml_json_png(tmp_path: Path) -> None:
    """motor-ident excite writes a loadable trajectory, the JSON keys of the design brief and a PNG."""
    from motor_ident.cli import main

    out, report, plot = tmp_path / "traj.yaml", tmp_path / "excite.json", tmp_path / "excite.png"
    argv = ["excite", "--robot", "szabo_3dof", "--criterion", "frobenius", "--starts", "1", "--samples", "30"]
    argv += ["--max-iterations", "10", "--out", str(out), "--json", str(report), "--plot", str(plot)]
    assert main(argv) == 0
    payload = json.loads(report.read_text())
    assert {"criterion_value", "condition_number", "baseline_condition_number"} <= payload.keys()
    assert payload["criterion_value"] == pytest.approx(payload["criteria"]["frobenius"])
    assert payload["condition_number"] < payload["baseline_condition_number"]
    assert load_trajectory(out).joints == ("joint1", "joint2", "joint3")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
