"""The row contract of every reproduction: kind, status, key claims, verdict, counts, engine; rows that can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main
from motor_ident.errors import ConfigError
from motor_ident.papers.reproduction import (
    CHECK_STATUSES,
    KIND_TITLES,
    MUJOCO_PAPERS,
    PAPER_STATUSES,
    PAPERS,
    Reproduction,
    row,
)
from motor_ident.papers.xin import reproduce as xin


def _result(rows: list[dict]) -> Reproduction:
    return Reproduction(paper="x", title="t", rows=rows, columns=[("ours", "ours.value")], engine="test")


def test_verdict_follows_the_key_paper_claims() -> None:
    """Key claims decide; a failed required check fails too; reported and structural rows never pass a run."""
    claim = row("a", "paper", paper=1.0, ours=1.0, reproduced=True, required=True)
    missed = row("c", "paper", paper=1.0, ours=3.0, reproduced=False, required=True)
    info = row("b", "recovery", paper=1.0, ours=2.0, reproduced=False)
    structural = row("n", "paper", paper=24, ours=24, reproduced=True)
    assert _result([claim, info]).passed and _result([claim, info]).verdict == "reproduced"
    assert not _result([claim, missed]).passed and _result([claim, missed]).verdict == "partly reproduced"
    assert _result([missed]).verdict == "not reproduced"
    only_structure = _result([structural, row("r", "recovery", paper=1.0, ours=1.0, reproduced=True, required=True)])
    assert not only_structure.passed and only_structure.verdict == "no key claim"
    broken = _result([claim, row("r", "recovery", paper=1.0, ours=2.0, reproduced=False, required=True)])
    assert not broken.passed and broken.verdict == "checks failed"
    with pytest.raises(ConfigError, match="kind"):
        row("d", "agreement", ours=1.0)
    with pytest.raises(ConfigError, match="verdict"):
        row("e", "paper", ours=1.0, required=True)
    with pytest.raises(ConfigError, match="not implemented"):
        row("f", "recovery", implemented=False)


def test_not_implemented_claims_count_against_the_verdict() -> None:
    """A key claim we do not compute is neither reproduced nor hidden: counted, named in the summary."""
    claim = row("a", "paper", paper=1.0, ours=1.0, reproduced=True, required=True)
    absent = row("eq. 21", "paper", paper=162.2, required=True, implemented=False)
    result = _result([claim, absent, row("s", "self-check", ours=0.0, reproduced=True)])
    assert absent["status"] == "not implemented" and not result.passed
    counts = result.counts()
    assert counts["key claims"] == {"reproduced": 1, "not reproduced": 0, "not implemented": 1, "not applicable": 0}
    assert counts["self-check"] == {"passed": 1, "failed": 0, "reported": 0}
    head, tally = result.summary().split("\n")
    assert head == "PAPER PARTLY REPRODUCED: 1/2 key claims; missed: eq. 21 (not implemented)"
    assert tally.startswith(
        "paper rows: 1 reproduced, 0 not reproduced, 1 not implemented, 0 not applicable, 0 reported"
    )


def test_not_applicable_claims_and_ours_rows() -> None:
    """A key claim whose precondition fails is 'not applicable' whatever its test gave, and never reproduced;
    an ours row (our own ablation) is never a key claim nor required."""
    gated = row("bias", "paper", paper="lower", ours=0.3, reproduced=True, required=True, applicable=False)
    assert gated["status"] == "not applicable" and gated["reproduced"] is None
    result = _result([gated, row("ablation", "ours", ours=1.0, reproduced=True)])
    assert not result.passed and result.verdict == "not reproduced"
    assert result.counts()["ours"] == {"passed": 1, "failed": 0, "reported": 0}
    assert "missed: bias (not applicable)" in result.summary()
    with pytest.raises(ConfigError, match="never required"):
        row("g", "ours", ours=1.0, reproduced=True, required=True)
    with pytest.raises(ConfigError, match="not applicable"):
        row("h", "recovery", ours=1.0, reproduced=True, applicable=False)


def test_markdown_separates_paper_recovery_and_self_check_rows() -> None:
    """One section per kind, each row's verdict printed; missed key claims and failed checks named."""
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
    assert "| p | 2.1000 | reproduced (key claim) |" in text
    assert "| r | 1.5000 | FAILED (required) | 50 % off |" in text
    assert "**OUR CHECKS FAILED (key claims 1/1 reproduced); missed: r (recovery failed)**" in text
    assert "PASSED" not in text


@pytest.mark.parametrize("paper", [p for p in PAPERS if p not in MUJOCO_PAPERS])
def test_mujoco_refused_without_a_mujoco_plant(paper: str, capsys: pytest.CaptureFixture) -> None:
    """Papers whose plants are not rigid-body robots refuse --engine mujoco (exit 2) and say why."""
    assert main(["reproduce", paper, "--engine", "mujoco"]) == 2
    assert "has no MuJoCo plant" in capsys.readouterr().err


def test_xin_gain_rows_fail_on_a_perturbed_table1() -> None:
    """Eq. 16 with Table 1 reproduces Table 2 for xi >= 0.707, not at 0.2; with J_m 20 % off the same rows fail."""
    bench = xin.xin_bench_parameters()
    table1 = xin.table1_parameters()
    rows, _ = xin.gain_rows(table1, bench)
    motor = [r for r in rows if r["required"] and r["name"].startswith("motor")]
    assert len(motor) == 4 and [r["reproduced"] for r in motor] == [False, True, True, True]  # xi = 0.2 missed
    motor = motor[1:]
    assert all(abs(r["ours"]["value"] / r["paper"]["value"] - 1.0) < 0.05 for r in motor)
    perturbed = table1.__class__(**{**table1.__dict__, "motor_inertia": 1.2 * table1.motor_inertia})
    rows, _ = xin.gain_rows(perturbed, bench)
    assert not any(r["reproduced"] for r in rows if r["required"] and r["name"].startswith("motor"))


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
def test_reproduce_json_contract(paper: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``reproduce <paper>`` (on MuJoCo where it has that plant) runs; its JSON names the plant and counts each row."""
    extra = _shorten(paper, monkeypatch)
    engine = "mujoco" if paper in MUJOCO_PAPERS else "pinocchio"
    out, table = tmp_path / "r.json", tmp_path / "r.md"
    args = ["reproduce", paper, "--engine", engine, "--seeds", "1", "--json", str(out), "--out", str(table)]
    code = main([*args, *extra])
    result = json.loads(out.read_text())
    assert code == (0 if result["passed"] else 1)
    assert result["engine_requested"] == engine
    if paper in MUJOCO_PAPERS:  # rigid-body robots: the MuJoCo plant ran
        assert result["engine"].startswith("MuJoCo plant")
    else:  # own plants (two-inertia bench, motor chains, elastic arm), and they say so
        assert "--engine does not apply" in result["engine"]
    assert result["rows"] and result["key_claims"]
    for r in result["rows"]:
        assert r["kind"] in ("paper", "recovery", "ours", "self-check") and r["reproduced"] in (True, False, None), r
        assert r["status"] in (PAPER_STATUSES if r["kind"] == "paper" else CHECK_STATUSES), r
        assert not r["required"] or r["status"] != "reported", r
    key = [r for r in result["rows"] if r["required"] and r["kind"] == "paper"]
    assert result["passed"] == (
        all(r["status"] == "reproduced" for r in key)
        and all(r["status"] == "passed" for r in result["rows"] if r["required"] and r["kind"] != "paper")
    )
    assert sum(result["counts"]["paper"].values()) == sum(r["kind"] == "paper" for r in result["rows"])
    text = table.read_text()
    assert "## Paper vs ours" in text and "## Recovery" in text and "PASSED" not in text


def test_every_paper_is_listed() -> None:
    """The contract tests cover the registered papers."""
    assert set(PAPERS) == {"guedelha", "kolathaya", "liu", "szabo", "xin"}
