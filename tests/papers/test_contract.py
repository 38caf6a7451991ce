"""The row contract of every reproduction: kind, reproduced, required, passed, engine; rows that can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main
from motor_ident.errors import ConfigError
from motor_ident.papers.reproduction import KIND_TITLES, PAPERS, Reproduction, row
from motor_ident.papers.xin import reproduce as xin


def _result(rows: list[dict]) -> Reproduction:
    return Reproduction(paper="x", title="t", rows=rows, columns=[("ours", "ours.value")], engine="test")


def test_passed_only_when_every_required_row_is_reproduced() -> None:
    """Unrequired failures do not fail; a required failure does; no required row at all is not a pass."""
    ok = row("a", "paper", paper=1.0, ours=1.0, reproduced=True, required=True)
    info = row("b", "recovery", paper=1.0, ours=2.0, reproduced=False)
    assert _result([ok, info]).passed
    assert not _result([ok, row("c", "paper", ours=3.0, reproduced=False, required=True)]).passed
    assert not _result([info]).passed
    with pytest.raises(ConfigError, match="kind"):
        row("d", "agreement", ours=1.0)
    with pytest.raises(ConfigError, match="verdict"):
        row("e", "paper", ours=1.0, required=True)


def test_markdown_separates_paper_recovery_and_self_check_rows() -> None:
    """One section per kind, each row's verdict printed; failed required rows named in the summary."""
    result = _result(
        [
            row("p", "paper", paper=2.0, ours=2.1, reproduced=True, required=True),
            row("r", "recovery", paper=1.0, ours=1.5, reproduced=False, required=True, criterion="50 % off"),
            row("s", "self-check", ours=0.0, reproduced=True),
        ]
    )
    text = result.markdown()
    for kind in ("paper", "recovery", "self-check"):
        assert f"## {KIND_TITLES[kind]}" in text
    assert "| r | 1.5000 | NOT reproduced (required) | 50 % off |" in text
    assert "NOT reproduced (required): r" in text


def test_xin_gain_rows_fail_on_a_perturbed_table1() -> None:
    """Eq. 16 with Table 1 reproduces Table 2 (xi >= 0.707); with J_m 20 % off the same rows fail."""
    bench = xin.xin_bench_parameters()
    table1 = xin.table1_parameters()
    rows, _ = xin.gain_rows(table1, bench)
    motor = [r for r in rows if r["required"]]
    assert len(motor) == 3 and all(r["reproduced"] for r in motor)
    assert all(abs(r["ours"]["value"] / r["paper"]["value"] - 1.0) < 0.05 for r in motor)
    perturbed = table1.__class__(**{**table1.__dict__, "motor_inertia": 1.2 * table1.motor_inertia})
    rows, _ = xin.gain_rows(perturbed, bench)
    assert not any(r["reproduced"] for r in rows if r["required"])


def _shorten(paper: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Shorter experiments of ``paper`` for a contract test; returns extra CLI arguments."""
    if paper == "xin":
        monkeypatch.setattr(xin, "LOAD_SCALES", (1.0,))
    elif paper == "guedelha":
        from motor_ident.papers.guedelha import reproduce as guedelha

        for name, value in (("FRICTION_DURATION_S", 8.0), ("PWM_DURATION_S", 5.0), ("TRACKING_DURATION_S", 5.0)):
            monkeypatch.setattr(guedelha, name, value)
    elif paper == "kolathaya":
        from motor_ident.papers.kolathaya import reproduce as kolathaya

        monkeypatch.setattr(kolathaya, "DURATION_S", 18.0)  # the 50-sample buffer is full at 16.7 s
        monkeypatch.setattr(kolathaya, "OURS_DURATION_S", 5.0)
    elif paper == "liu":
        from motor_ident.core.elastic.residual import ResidualConfig
        from motor_ident.papers.liu import reproduce as liu

        short = liu.LiuSettings(
            speeds=(0.04, 0.1, 0.35),
            train_s=6.0,
            heldout_s=3.0,
            residual=ResidualConfig(n_components=3, max_samples=300),
            rbf=ResidualConfig(kind="rbf", max_samples=200),
            iterations=1,
        )
        monkeypatch.setattr(liu, "LiuSettings", lambda: short)
    elif paper == "szabo":
        return ["--runs", "10", "--starts", "1"]
    return []


@pytest.mark.slow
@pytest.mark.parametrize("paper", PAPERS)
def test_reproduce_json_contract_on_mujoco(paper: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``reproduce <paper> --engine mujoco`` runs; its JSON names the plant and gives every row kind and verdict."""
    extra = _shorten(paper, monkeypatch)
    out, table = tmp_path / "r.json", tmp_path / "r.md"
    code = main(["reproduce", paper, "--engine", "mujoco", "--json", str(out), "--out", str(table), *extra])
    result = json.loads(out.read_text())
    assert code == (0 if result["passed"] else 1)
    assert result["engine_requested"] == "mujoco"
    if paper in ("kolathaya", "szabo"):  # rigid-body robots: the MuJoCo plant ran
        assert result["engine"].startswith("MuJoCo plant")
    else:  # own plants (two-inertia bench, motor chains, elastic arm), and they say so
        assert "--engine does not apply" in result["engine"]
    assert result["rows"] and result["required"]
    for r in result["rows"]:
        assert r["kind"] in ("paper", "recovery", "self-check") and r["reproduced"] in (True, False, None), r
        assert not r["required"] or r["reproduced"] is not None
    assert result["passed"] == all(r["reproduced"] is True for r in result["rows"] if r["required"])
    text = table.read_text()
    assert "## Paper vs ours" in text and "## Recovery" in text


def test_every_paper_is_listed() -> None:
    """The contract tests cover the registered papers."""
    assert set(PAPERS) == {"guedelha", "kolathaya", "liu", "szabo", "xin"}
