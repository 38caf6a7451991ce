"""Xin et al. 2020 reproduction through the CLI: FRF pair, VREC pole damping, ripple against pure PI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from motor_ident.cli import main


def test_reproduce_xin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """19/21 Hz within 5 %, designed damping within 10 % on both sides, VREC ripple below pure PI; table written.

    Only the nominal load here: the +-50 % loads are checked by tests/core/test_vrec.py.
    """
    import motor_ident.papers.xin.reproduce as xin

    monkeypatch.setattr(xin, "LOAD_SCALES", (1.0,))
    out = tmp_path / "xin.json"
    table = tmp_path / "xin.md"
    assert main(["reproduce", "xin", "--json", str(out), "--out", str(table)]) == 0
    result = json.loads(out.read_text())
    assert result["passed"], result["checks"]
    rows = {row["name"]: row for row in result["rows"]}
    for name, truth in (
        ("anti-resonance f_a [Hz] (FRF peak pick)", 19.0),
        ("resonance f_r [Hz] (FRF peak pick)", 21.0),
    ):
        assert abs(rows[name]["ours"]["value"] / truth - 1.0) < 0.05
    dampings = [r for r in result["rows"] if r["name"].endswith(": resonant pole damping")]
    assert len(dampings) == 8
    for row in dampings:
        assert abs(row["ours"]["value"] / row["paper"]["value"] - 1.0) < 0.10, row
    assert set(result["ripple"]) == {"motor x1.0", "link x1.0"}
    for key, ripple in result["ripple"].items():
        assert ripple["vrec"] < 0.6 * ripple["pure_pi"], key
    assert abs(result["two_inertia_fit"]["stiffness"] / 34000.0 - 1.0) < 0.05
    assert "| resonance f_r [Hz] (FRF peak pick) |" in table.read_text()
