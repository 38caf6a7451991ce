"""Kolathaya et al. 2016 reproduction: the 50-row, 3 Hz buffer and R2 gate on the simulated arm, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from motor_ident.cli import main


def test_reproduce_kolathaya(tmp_path: Path) -> None:
    """The buffer fills when the paper says, the gate then opens, R2 ends below 1 and the bias drops."""
    out = tmp_path / "kolathaya.json"
    assert main(["reproduce", "kolathaya", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["passed"], result["checks"]
    paper = result["paper_settings"]
    assert 16.0 <= paper["buffer_full_s"] <= 17.5  # 50 rows at 3 Hz: 16.7 s
    assert paper["gate_opened_s"] >= paper["buffer_full_s"]
    assert all(0.95 <= r < 1.0 for r in paper["r2_end"])
    assert result["bias_after_rad"] < 0.5 * result["bias_before_rad"]
    assert result["sensor_rate"]["gate_opened_s"] < paper["gate_opened_s"]  # a bigger, faster buffer wins
    assert {row["name"] for row in result["rows"]} >= {"buffer full at [s]", "switch to identified model [s]"}
