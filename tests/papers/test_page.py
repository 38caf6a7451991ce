"""docs/reproductions.md's key-claim tables: generated from runs' JSON, equal to their records and to the code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from motor_ident.cli import main
from motor_ident.papers.page import begin_marker, block, end_marker, update_page
from motor_ident.papers.reproduction import PAPERS, UNSEEDED_PAPERS, Reproduction, row

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reproductions.md"
RECORDS = REPO / "docs" / "reproductions"
# the columns of a key-claim table that do not depend on how many seeds ran
SEED_COLUMNS = ("spread over seeds", "seeds held", "verdict")


def _record(paper: str) -> dict[str, Any]:
    return json.loads((RECORDS / f"{paper}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("paper", PAPERS)
def test_page_block_is_generated_from_its_record(paper: str) -> None:
    """The page's block for each paper is exactly what reproduce-page makes of the paper's record."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(begin_marker(paper)) == 1 and text.count(end_marker(paper)) == 1
    assert update_page(text, [_record(paper)]) == text, f"run `motor-ident reproduce-page` for {paper}"


def test_records_are_five_seed_runs() -> None:
    """Every record the page is made of ran the default 5 seeds (one run for a paper without random draws)."""
    for paper in PAPERS:
        record = _record(paper)
        assert record["seeds"] == ([0] if paper in UNSEEDED_PAPERS else [0, 1, 2, 3, 4]), paper
        assert record["rows"] and all(r["required"] and r["kind"] == "paper" for r in record["rows"])


def _run_json(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    result = Reproduction(paper="szabo", title="t", rows=rows, columns=[("ours", "ours.value")], engine="e")
    path = tmp_path / name
    path.write_text(json.dumps({**result.to_json(), "seeds": [0], "seeds_needed": 1, "wall_s": 1.0}))
    return path


def test_reproduce_page_rewrites_a_stale_block_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--check exits 1 on a block that differs from the run, 0 once written; a non-run JSON exits 2."""
    page = tmp_path / "page.md"
    page.write_text(f"# x\n\n{begin_marker('szabo')}\nhand-typed numbers\n{end_marker('szabo')}\n\nprose\n")
    run = _run_json(tmp_path, "run.json", [row("a", "paper", paper=1.0, ours=0.5, reproduced=False, required=True)])
    args = ["reproduce-page", str(run), "--page", str(page), "--records", str(tmp_path / "records")]
    assert main([*args, "--check"]) == 1 and "szabo" in capsys.readouterr().out
    assert main(args) == 0
    text = page.read_text()
    assert "hand-typed" not in text and text.endswith("\n\nprose\n")
    assert "| a | 0.5000 | NOT reproduced (key claim) |" in text and "PAPER NOT REPRODUCED: 0/1" in text
    assert main([*args, "--check"]) == 0
    assert json.loads((tmp_path / "records" / "szabo.json").read_text())["rows"][0]["name"] == "a"
    bad = tmp_path / "bad.json"
    bad.write_text('{"paper": "szabo"}')
    assert main(["reproduce-page", str(bad), "--page", str(page)]) == 2
    assert "not the JSON of a reproduction run" in capsys.readouterr().err


def _seed_free_lines(payload: dict[str, Any]) -> list[list[str]]:
    """The block's table without the columns that depend on how many seeds ran."""
    lines = [line for line in block(payload).split("\n") if line.startswith("| ")]
    cells = [line[2:-2].split(" | ") for line in lines]
    keep = [k for k, head in enumerate(cells[0]) if head not in SEED_COLUMNS]
    return [[c[k] for k in keep] for c in cells]


def _agrees_with_record(paper: str, tmp_path: Path, extra: list[str]) -> None:
    out = tmp_path / f"{paper}.json"
    main(["reproduce", paper, "--seeds", "1", "--json", str(out), *extra])
    fresh = _seed_free_lines(json.loads(out.read_text()))
    assert fresh == _seed_free_lines(_record(paper)), (
        f"{paper}: the code's key claims (first seed) differ from docs/reproductions/{paper}.json: rerun "
        f"`motor-ident reproduce {paper} --json F` and `motor-ident reproduce-page F`"
    )


def test_xin_output_agrees_with_the_page(tmp_path: Path) -> None:
    """xin draws nothing at random: a fresh run prints the page's key-claim table, cell for cell."""
    _agrees_with_record("xin", tmp_path, [])


# liu's full run (three excitation designs, loops 1-3 twice: about 40 s of CPU) stays out of the suite; its page
# block is checked against its record only
FRESH_RUN_PAPERS = [p for p in PAPERS if p not in UNSEEDED_PAPERS and p != "liu"]


@pytest.mark.slow
@pytest.mark.parametrize("paper", FRESH_RUN_PAPERS)
def test_first_seed_agrees_with_the_page(paper: str, tmp_path: Path) -> None:
    """A fresh run on the first seed prints the page's key claims and first-seed values (6-10 s of CPU each)."""
    _agrees_with_record(paper, tmp_path, [])
