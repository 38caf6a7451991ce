"""Guedelha et al. 2021 reproduction through the CLI (experiments shortened): paper values beside ours, checks pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main
from motor_ident.papers.guedelha import reproduce as guedelha


def test_reproduce_guedelha(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Rows carry kind and verdict; v_s is identified; the paper's nominal-column robustness claim is checked."""
    monkeypatch.setattr(guedelha, "FRICTION_DURATION_S", 8.0)
    monkeypatch.setattr(guedelha, "PWM_DURATION_S", 5.0)
    monkeypatch.setattr(guedelha, "TRACKING_DURATION_S", 5.0)
    out = tmp_path / "guedelha.json"
    code = main(["reproduce", "guedelha", "--seed", "3", "--seeds", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    assert code == (0 if result["passed"] else 1)
    rows = {row["name"]: row for row in result["rows"]}
    knee = rows["Table 1 r_knee K_v [N m s/deg]"]
    assert knee["kind"] == "recovery" and knee["paper"]["value"] == 0.69 and knee["reproduced"]
    assert result["leg_worst_kpwm_error_pct"] < 2.0
    vs = result["stribeck_velocity_deg_s"]  # identified, not given (truth 1 deg/s)
    assert len(vs) == 6 and all(0.1 < v < 30.0 for v in vs.values())
    claim = next(r for r in result["rows"] if r["name"].startswith("sec. 3.4.2"))
    assert claim["kind"] == "paper" and claim["required"]  # a key claim, not reproduced in our simulation
    assert claim["status"] == ("reproduced" if claim["reproduced"] else "not reproduced")
    assert result["verdict"] in (("reproduced",) if result["passed"] else ("partly reproduced", "not reproduced"))
    for name in (
        "Fig. 10 knee: Coulomb+viscous K_c above the Stribeck K_c [N m], data friction of another law (arctan)",
        "Fig. 10 knee: Coulomb+viscous K_c above the Stribeck K_c [N m], data friction IS the Stribeck model fitted",
    ):  # the model-choice claim is key on data of another law; on the fitted law it follows from the input
        assert rows[name]["required"] is ("another law" in name) and rows[name]["kind"] in ("paper", "recovery")
    stribeck = rows["Fig. 10 knee Stribeck sigma_s+ [N m]: simulator input recovered"]
    assert stribeck["kind"] == "recovery" and stribeck["paper"]["value"] == 1.27
    torso = result["torso_worst_errors_pct"]
    # the paper's nominal-column method errs like joint by joint on a 5 % coupling error: not reproduced
    nominal, joint = torso["motor-wise, nominal column, T 5 % off"], torso["joint-wise, T 5 % off"]
    assert claim["reproduced"] is (nominal["k_pwm"] < 0.8 * joint["k_pwm"])
    assert result["tracking_rmse_with_compensation"] * 3.0 < result["tracking_rmse_without_compensation"]
    printed = capsys.readouterr().out
    assert "Recovery: our simulated plant's truth" in printed and "NOT reproduced (key claim)" in printed
    assert "PASSED" not in printed and "key claims" in printed
