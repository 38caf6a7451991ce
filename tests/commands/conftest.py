"""Fixtures of the command tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from motor_ident.cli import main


@pytest.fixture(scope="module")
def szabo_recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 2 s szabo_3dof recordings at 100 Hz (``a.npz`` seed 0, ``b.npz`` seed 1) and ``p.yaml``, identified on a."""
    folder = tmp_path_factory.mktemp("recordings")
    for name, seed in (("a.npz", "0"), ("b.npz", "1")):
        argv = ["synth", "--robot", "szabo_3dof", "--duration", "2", "--rate", "100", "--seed", seed]
        assert main([*argv, "--out", str(folder / name)]) == 0
    argv = ["identify", str(folder / "a.npz"), "--robot", "szabo_3dof", "--no-report"]
    assert main([*argv, "--out", str(folder / "p.yaml")]) == 0
    return folder
