"""motor-ident record -> identify BAG -> HTML report, checked against the simulator's truth and in Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from motor_ident.cli import main

SCENARIO = "valkyrie_arm"
DURATION = 6.0


@pytest.fixture(scope="module")
def identified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A recorded bag of the simulated arm, identified with a quarter held out and a report."""
    root = tmp_path_factory.mktemp("record_identify")
    paths = {"bag": root / "run", "params": root / "params.yaml", "json": root / "fit.json", "report": root / "report"}
    assert main(["record", "--scenario", SCENARIO, "--out", str(paths["bag"]), "--duration", str(DURATION)]) == 0
    assert (
        main(
            [
                "identify",
                str(paths["bag"]),
                "--robot",
                SCENARIO,
                "--validate",
                "0.25",
                "--out",
                str(paths["params"]),
                "--json",
                str(paths["json"]),
                "--report",
                str(paths["report"]),
                "--online",
                SCENARIO,
            ]
        )
        == 0
    )
    return paths


def test_record_writes_the_standard_topics(identified: dict[str, Path]) -> None:
    """The recorded MCAP holds joint and motor states, commands and the gate, at the simulator's rate."""
    from motor_ident.io.bags.read import read_bag

    data = read_bag(identified["bag"])
    assert data.storage == "mcap" and data.warnings == ()
    assert {"/joint_states", "/motor_states", "/effort_controller/commands", "/identifier/gate_open"} <= set(
        data.topics
    )
    assert data.joint_states.t.size == int(DURATION * 1000)
    np.testing.assert_allclose(np.diff(data.joint_states.t), 1e-3, atol=2e-9)
    assert data.commands is not None and data.commands.values.shape == (int(DURATION * 1000), 4)


def test_identify_from_bag_recovers_the_simulated_arm(identified: dict[str, Path]) -> None:
    """Held-out R2 >= 0.95; friction and noise-free torques of the estimate match the simulator's truth."""
    from motor_ident.io.bags.read import read_bag
    from motor_ident.io.params import load_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.scenario.closed_loop import build_closed_loop

    fit = json.loads(identified["json"].read_text())
    assert min(fit["heldout_r2_per_joint"]) >= 0.95, fit["heldout_r2_per_joint"]
    assert fit["report"] == str(identified["report"] / "index.html")
    config = load_robot_config(SCENARIO)
    regressor = config.build_regressor()
    truth = build_closed_loop(SCENARIO).sim.truth
    names = list(regressor.names)
    for joint in config.joints:
        fc, fv = fit["base_parameters"][f"{joint}.fc"], fit["base_parameters"][f"{joint}.fv"]
        true_fc, true_fv = truth[names.index(f"{joint}.fc")], truth[names.index(f"{joint}.fv")]
        assert abs(fc - true_fc) < 0.05 * true_fc, (joint, fc, true_fc)
        assert abs(fv - true_fv) < 0.25 * true_fv, (joint, fv, true_fv)
    # The identified model predicts the true (noise-free) torques far better than the 0.1 N m noise.
    theta = load_parameters(identified["params"], expected_names=regressor.names).values
    record = read_bag(identified["bag"]).joint_record(config.joints).with_derivatives()
    k = slice(500, None, 5)  # past the ramp-in's first samples
    error = regressor.predict(theta, record.q[k], record.qd[k], record.qdd[k]) - regressor.predict(
        truth, record.q[k], record.qd[k], record.qdd[k]
    )
    rms = np.sqrt(np.mean(error**2, axis=0))
    assert np.all(rms < 0.06), rms


def test_online_replay_reproduces_the_recorded_identifier(identified: dict[str, Path]) -> None:
    """identify --online runs the node's estimator over the bag: same gate time and R2 as recorded live."""
    from motor_ident.io.bags.read import read_bag

    online = json.loads(identified["json"].read_text())["online"]
    data = read_bag(identified["bag"])
    assert data.gate is not None and data.r2 is not None
    opened = [t for t, v in zip(data.gate.t, data.gate.values[:, 0]) if v]
    assert online["gate_opened_at_s"] == pytest.approx(opened[0], abs=1e-9)
    np.testing.assert_allclose(online["r2_per_joint"], data.r2.values[-1], rtol=1e-9)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def test_report_renders_with_its_figures_in_chromium(identified: dict[str, Path], tmp_path: Path) -> None:
    """Headless Chromium loads the page and all its PNGs (incl. the recorded gate timeline) and draws it."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH: tools/test.sh installs the Debian package 'chromium' when run as root")
    page = identified["report"] / "index.html"
    assert {p.name for p in identified["report"].glob("*.png")} == {
        "torque.png",
        "residuals.png",
        "friction.png",
        "gate.png",
    }
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
    dom = subprocess.run(
        [*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90, check=True
    ).stdout
    assert 'data-figures="4/4"' in dom, dom[:500]
    assert "Gate opened first at" in dom and "shoulder_extensor.fc" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*flags, "--window-size=1000,1600", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    figure_area = pixels[700:, :, :]  # below the tables: the torque figure
    assert pixels.shape[:2] == (1600, 1000)
    assert figure_area.std() > 0.05 and (figure_area.mean(axis=2) < 0.5).mean() > 0.005


def test_a_missing_figure_is_reported_on_the_page(identified: dict[str, Path], tmp_path: Path) -> None:
    """With a PNG gone, the page's own check counts it and says which figure is missing."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH")
    copy = tmp_path / "report"
    shutil.copytree(identified["report"], copy)
    (copy / "friction.png").unlink()
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", (copy / "index.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    assert 'data-figures="3/4"' in dom and "figure friction.png is missing" in dom


def test_record_and_identify_refuse_bad_input(identified: dict[str, Path], tmp_path: Path, capsys) -> None:
    """An existing bag path, a zero duration, a bag without joint states: exit 2 with one clear line."""
    assert main(["record", "--out", str(identified["bag"]), "--duration", "1"]) == 2
    assert "exists already" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # refused by the option's type, as the command line is parsed
        main(["record", "--out", str(tmp_path / "new"), "--duration", "0"])
    assert refused.value.code == 2
    assert "argument --duration: '0': expected a finite number > 0" in capsys.readouterr().err
    from motor_ident.io.bags.write import BagWriter

    with BagWriter(tmp_path / "motors") as bag:
        bag.joint_state("/motor_states", 0.1, ["m"], [0.0], [0.0], [0.0])
    assert main(["identify", str(tmp_path / "motors"), "--robot", SCENARIO, "--no-report"]) == 2
    assert "no /joint_states topic" in capsys.readouterr().err
