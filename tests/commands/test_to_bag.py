"""`motor-ident to-bag`: a vendor CSV read through its data spec becomes a rosbag2 on the recorded stamps,
with the topics of its torque source; the bag reads back to the same samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from motor_ident.cli import main
from tests.conftest import REPO

LOG = REPO / "examples" / "arm_log"


@pytest.mark.parametrize("source", ["joint_effort", "motor_current"])
def test_csv_to_bag_reads_back_to_the_recorded_samples(source: str, tmp_path: Path, capfd) -> None:
    """The bag's joint states carry the recorded stamps, positions and torques (or /motor_states the currents)."""
    from motor_ident.commands.data_options import read_file
    from motor_ident.io.bags.read import read_bag
    from motor_ident.io.data_spec import load_spec

    out = tmp_path / "arm"
    args = ["to-bag", str(LOG / "identification.csv"), "--spec", str(LOG / "spec.yaml"), "--robot", "valkyrie_arm"]
    args += ["--out", str(out), "--keep-time", "1.5:4.5", "--torque-source", source, "--json", str(tmp_path / "s.json")]
    assert main(args) == 0, capfd.readouterr().err
    summary = json.loads((tmp_path / "s.json").read_text())
    csv = read_file(LOG / "identification.csv", load_spec(LOG / "spec.yaml"))
    kept = (csv.t >= csv.t[0] + 1.5) & (csv.t <= csv.t[0] + 4.5)
    bag = read_bag(out)
    js = bag.joint_states
    assert summary["samples"] == js.t.size and js.t.size >= kept.sum() - 1  # the grid may end before the last stamp
    n = js.t.size
    np.testing.assert_allclose(js.t, csv.t[kept][:n], atol=1e-9, err_msg="recorded stamps, not a grid")
    assert np.ptp(np.diff(js.t)) > 1e-3, "the logger's jitter is kept"
    np.testing.assert_allclose(js.position, csv.select(js.names).q[kept][:n], atol=1e-12)
    assert js.velocity is not None and np.all(np.isfinite(js.velocity))
    if source == "joint_effort":
        np.testing.assert_allclose(js.effort, csv.select(js.names).tau[kept][:n], atol=1e-12)
        assert summary["topics"] == ["/joint_states"]
    else:
        assert summary["topics"] == ["/joint_states", "/motor_states"]
        assert js.effort is None
        motors = bag.motor_states
        assert motors is not None and motors.effort is not None
        np.testing.assert_allclose(motors.t, js.t, atol=1e-9)
        selected = csv.select(js.names)
        assert selected.current is not None
        order = [selected.motor_names.index(m) for m in motors.names]
        np.testing.assert_allclose(motors.effort, selected.current[kept][:n][:, order], atol=1e-12)


def test_to_bag_refuses_a_bag_and_an_existing_output(tmp_path: Path, capfd) -> None:
    """A bag as input, or an --out that exists: one line, exit 2, nothing written."""
    (tmp_path / "taken").mkdir()
    base = ["--spec", str(LOG / "spec.yaml"), "--robot", "valkyrie_arm"]
    assert main(["to-bag", str(LOG / "identification.csv"), *base, "--out", str(tmp_path / "taken")]) == 2
    assert "exists already" in capfd.readouterr().err
    assert main(["to-bag", str(tmp_path / "taken"), *base, "--out", str(tmp_path / "b")]) == 2
    assert "is a rosbag2 already" in capfd.readouterr().err
    assert not (tmp_path / "b").exists()
