"""A vendor CSV turned into a bag by `motor-ident to-bag` and played by `motor-ident play` (a process) into
the identifier node: the node's gate timeline and final fit equal offline replay's (`identify --online`'s
`online_replay`) on the same samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.ros

LOG = REPO / "examples" / "arm_log"
SETTINGS = {"window_duration": 2.0, "refit_period": 0.25}  # s: a short window, few refits (a lean test)


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 s of the example arm's logger file (jittered 8-13 ms stamps) as a bag, by the command."""
    out = tmp_path_factory.mktemp("to_bag") / "arm"
    run = subprocess.run(
        [sys.executable, "-m", "motor_ident.cli", "to-bag", str(LOG / "identification.csv")]
        + ["--spec", str(LOG / "spec.yaml"), "--robot", "valkyrie_arm", "--keep-time", "1.5:5.5", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return out


def test_played_bag_gives_the_offline_gate_timeline(ros, bag: Path, tmp_path: Path) -> None:
    """Every joint state reaches the node; its gate changes (stamp, state) and last R2 are offline replay's."""
    from motor_ident.commands.online_replay import online_replay
    from motor_ident.io.bags.read import read_bag
    from motor_ident.ros.nodes.identifier_node import IdentifierNode

    identifier = ros.add(IdentifierNode, robot="valkyrie_arm", **SETTINGS)
    scenario = tmp_path / "identifier.yaml"  # the same settings for identify --online
    scenario.write_text(
        "identifier:\n  ros__parameters: {robot: valkyrie_arm, "
        + ", ".join(f"{key}: {value}" for key, value in SETTINGS.items())
        + "}\n"
    )
    record = read_bag(bag).joint_record(identifier.config.joints)
    assert record.qd is not None
    offline = online_replay(
        str(scenario),
        tuple(identifier.config.joints),
        record.t,
        record.q,
        record.qd,
        record.tau,
        config=identifier.config,
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    player = subprocess.Popen(
        [sys.executable, "-m", "motor_ident.cli", "play", str(bag), "--rate", "4", "--wait", "20", "--no-clock"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert ros.spin_until(lambda: player.poll() is not None, timeout=120.0), "play did not finish in 120 s"
        ros.spin_until(lambda: identifier.core.samples_seen >= record.t.size, timeout=5.0)
    finally:
        if player.poll() is None:
            player.kill()
        out, err = player.communicate(timeout=30)
    assert player.returncode == 0, err
    assert f"published {record.t.size} messages" in out, out
    core = identifier.core
    assert (core.samples_seen, identifier.rejected) == (record.t.size, 0), "every joint state reached the node"
    assert offline["fit"] is not None and core.fit is not None, "the window filled: refits happened"
    expected = offline["gate"][1:]  # offline replay starts its timeline with (t0, closed)
    assert [g for _, g in identifier.gate_history] == [g for _, g in expected], (identifier.gate_history, expected)
    np.testing.assert_allclose([t for t, _ in identifier.gate_history], [t for t, _ in expected], atol=1e-6)
    np.testing.assert_allclose(core.fit.r2_of(core.config.gate.r2_definition), offline["r2"][-1], atol=1e-9)
