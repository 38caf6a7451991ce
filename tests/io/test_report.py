"""Figures are written atomically: a run interrupted inside ``savefig`` leaves no image, whole or partial."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from motor_ident.io.demo_report import Recording, RunResult, plot_run
from motor_ident.io.report import save_figure


class Interrupted(KeyboardInterrupt):
    """Ctrl-C arriving while a figure is half written."""


@pytest.fixture
def interrupted_savefig(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``Figure.savefig`` writes the first 100 bytes of a PNG, then is interrupted; returns the files it touched."""
    touched: list[Path] = []

    def savefig(self: Figure, fname: object, **kwargs: object) -> None:
        path = Path(str(fname))
        touched.append(path)
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(92))
        raise Interrupted

    monkeypatch.setattr(Figure, "savefig", savefig)
    return touched


def _images(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ["plot.png", "plot.svg", "plot.pdf", "plot.unknown"])
def test_save_figure_writes_the_format_of_the_suffix(name: str, tmp_path: Path) -> None:
    """PNG, SVG and PDF by suffix (PNG for any other), the figure closed, no temporary file left."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, tmp_path / name)
    head = (tmp_path / name).read_bytes()[:8]
    magic = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF", "unknown": b"\x89PNG"}[name.split(".")[1]]
    assert head.startswith(magic), head
    assert not plt.fignum_exists(fig.number) and _images(tmp_path) == [name]


def test_an_interrupted_save_leaves_no_partial_image_and_the_old_one_whole(
    interrupted_savefig: list[Path], tmp_path: Path
) -> None:
    """Interrupted mid-write: the half-written temporary file is removed; an older image stays as it was."""
    old = tmp_path / "torque.png"
    old.write_bytes(b"old image")
    fig, _ = plt.subplots()
    with pytest.raises(Interrupted):
        save_figure(fig, old)
    assert interrupted_savefig and interrupted_savefig[0].parent == tmp_path and interrupted_savefig[0] != old
    assert _images(tmp_path) == ["torque.png"] and old.read_bytes() == b"old image"
    assert not plt.fignum_exists(fig.number)


def test_the_demo_plots_leave_nothing_when_interrupted(interrupted_savefig: list[Path], tmp_path: Path) -> None:
    """``motor-ident demo`` / ``run`` plots (`plot_run`): interrupted in its first figure, no PNG is left."""
    rec = Recording()
    rec.state = [(0.1 * k, np.zeros(2), np.ones(2)) for k in range(10)]
    rec.tracking_error = [(0.1 * k, np.full(2, 0.1)) for k in range(10)]
    summary = {"gate_open": False, "reason": "buffer filling", "dropped_samples": 0}
    result = RunResult("s", "robot", ("a", "b"), 1.0, 1.0, rec, summary, {})
    with pytest.raises(Interrupted):
        plot_run(result, tmp_path)
    assert len(interrupted_savefig) == 1 and _images(tmp_path) == []


def test_identify_interrupted_in_its_report_leaves_no_image(interrupted_savefig: list[Path], tmp_path: Path) -> None:
    """``motor-ident identify`` with its HTML report, interrupted in the first figure: exit 130, no PNG, no page."""
    from motor_ident.cli import main

    data = tmp_path / "data.npz"
    assert main(["synth", "--robot", "szabo_3dof", "--duration", "2", "--rate", "100", "--out", str(data)]) == 0
    assert main(["identify", str(data), "--robot", "szabo_3dof", "--report", str(tmp_path / "report")]) == 130
    assert len(interrupted_savefig) == 1 and _images(tmp_path) == ["data.npz"]
    assert not (tmp_path / "report").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["data.npz"]
