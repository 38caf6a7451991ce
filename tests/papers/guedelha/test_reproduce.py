"""Guedelha et al. 2021 reproduction through the CLI (experiments shortened): paper values beside ours, checks pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main
from motor_ident.papers.guedelha import reproduce as guedelha


def test_reproduce_guedelha(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Table 1 recovered, Stribeck beats Coulomb+viscous, motor-wise resists a 5 % coupling error."""
    monkeypatch.setattr(guedelha, "FRICTION_DURATION_S", 8.0)
    monkeypatch.setattr(guedelha, "PWM_DURATION_S", 5.0)
    monkeypatch.setattr(guedelha, "TRACKING_DURATION_S", 5.0)
    out = tmp_path / "guedelha.json"
    assert main(["reproduce", "guedelha", "--seed", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["passed"], result["checks"]
    rows = {row["name"]: row for row in result["rows"]}
    knee = rows["Table 1 r_knee sigma_s- [N m]"]
    assert knee["paper"]["value"] == 1.95 and abs(knee["ours"]["error_pct"]) < 5.0
    assert rows["Table 1 r_hip_pitch K_v [N m s/deg]"]["paper"]["value"] == 1.16
    assert result["leg_worst_kpwm_error_pct"] < 2.0
    torso = result["torso_worst_errors_pct"]
    assert torso["joint-wise, T 5 % off"]["k_pwm"] > 3.0 > torso["motor-wise, column measured, T 5 % off"]["k_pwm"]
    assert result["tracking_rmse_with_compensation"] * 3.0 < result["tracking_rmse_without_compensation"]
    printed = capsys.readouterr().out
    assert "Table 1 r_knee sigma_s+" in printed and "sim truth" in printed
