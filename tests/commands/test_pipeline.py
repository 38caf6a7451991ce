"""``identify`` / ``validate`` as stages: every flag reaches the options, outputs checked first, results kept."""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import fields
from pathlib import Path

import pytest

from motor_ident.cli import build_parser, main
from motor_ident.commands.options import IdentifyOptions, RecordingOptions, ValidateOptions
from motor_ident.errors import EstimationError


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize(("command", "options"), [("identify", IdentifyOptions), ("validate", ValidateOptions)])
def test_every_flag_lands_in_a_field_of_the_options(command: str, options: type) -> None:
    """A flag the parser defines but no options field holds would be dropped silently on the way to the stages."""
    held = {f.name for f in fields(options)} | {f.name for f in fields(RecordingOptions)}
    dests = {a.dest for a in _subparser(command)._actions if a.dest not in ("help", "func")}
    assert dests - held == set()


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["identify", "{d}/a.npz", "--out", "{d}/a.npz"], "is DATA"),
        (["identify", "{d}/a.npz", "--json", "{d}/b.npz", "--validate-on", "{d}/b.npz"], "is --validate-on"),
        (["identify", "{d}/a.npz", "--out", "{d}"], "is a directory"),
        (["identify", "{d}/a.npz", "--out", "{o}/x.yaml", "--json", "{o}/x.yaml"], "both name"),
        (["identify", "{d}/a.npz", "--report", "{d}/a.npz"], "is DATA"),
        (["identify", "{d}/a.npz", "--out", "{d}/a.npz/x.yaml"], "not a folder"),
        (["validate", "{d}/p.yaml", "{d}/b.npz", "--json", "{d}/p.yaml"], "is PARAMS"),
        (["validate", "{d}/p.yaml", "{d}/b.npz", "--urdf-out", "{o}/u.urdf", "--json", "{o}/u.urdf"], "both name"),
    ],
)
def test_outputs_are_checked_before_any_work(
    szabo_recordings: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    """A bad output path: exit 2 with one line naming it, before reading the data; no input changed, nothing written."""
    before = _digest(szabo_recordings)
    given = [a.format(d=szabo_recordings, o=tmp_path) for a in argv]
    assert main([*given, "--robot", "szabo_3dof"]) == 2
    err = capsys.readouterr()
    assert named in err.err and len(err.err.strip().splitlines()) == 1, err.err
    assert "reading" not in err.out  # refused before the read stage
    assert _digest(szabo_recordings) == before and list(tmp_path.iterdir()) == []


def test_a_failing_urdf_stage_keeps_every_result_and_says_so(
    szabo_recordings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--urdf-out failing after the fit: parameters, JSON (every stage's status) and report written, exit 3."""
    import motor_ident.commands.validate as validate

    def fails(*args: object) -> None:
        raise EstimationError("no consistent links near these parameters")

    monkeypatch.setattr(validate, "write_nearest_urdf", fails)
    out, summary = tmp_path / "p.yaml", tmp_path / "p.json"
    argv = [
        "identify",
        str(szabo_recordings / "a.npz"),
        "--robot",
        "szabo_3dof",
        "--out",
        str(out),
        "--json",
        str(summary),
    ]
    assert main([*argv, "--urdf-out", str(tmp_path / "x.urdf")]) == 3
    assert "stage urdf: no consistent links near these parameters" in capsys.readouterr().err
    payload = json.loads(summary.read_text())
    assert payload["stages"] == {
        "read": "done",
        "prepare": "done",
        "fit": "done",
        "parameters": "done",
        "validate": "skipped",
        "urdf": "failed",
        "report": "done",
    }
    assert payload["stage_errors"] == {"urdf": "no consistent links near these parameters"}
    assert len(payload["r2_per_joint"]) == 3 and out.is_file() and (tmp_path / "p_report" / "index.html").is_file()
    assert not (tmp_path / "x.urdf").exists()

    # with a verdict that fails too, the verdict's exit 1 is what the caller sees
    argv += ["--validate-on", str(szabo_recordings / "b.npz"), "--max-rre", "0.01", "--no-report"]
    assert main([*argv, "--urdf-out", str(tmp_path / "x.urdf")]) == 1
    payload = json.loads(summary.read_text())
    assert payload["validation"]["passed"] is False and payload["stages"]["urdf"] == "failed"
    assert payload["stages"]["report"] == "skipped"


def test_a_folder_that_cannot_be_written_is_refused_before_any_work(
    szabo_recordings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--report into a read-only folder: exit 2 naming it (os.access faked: root may write anywhere)."""
    import motor_ident.commands.pipeline as pipeline

    monkeypatch.setattr(pipeline.os, "access", lambda path, mode: Path(path) != tmp_path)
    argv = ["identify", str(szabo_recordings / "a.npz"), "--robot", "szabo_3dof", "--out", str(szabo_recordings / "x")]
    assert main([*argv, "--report", str(tmp_path / "report")]) == 2
    assert (
        f"--report {tmp_path / 'report'}: cannot write into {tmp_path} (permission denied)" in capsys.readouterr().err
    )
    assert not (szabo_recordings / "x").exists()
