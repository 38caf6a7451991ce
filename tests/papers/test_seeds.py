"""Verdicts over seeds: a claim holds on at least 4 of 5, not applicable stays so, the spread is the seeds' range."""

from __future__ import annotations

import pytest

from motor_ident.errors import ConfigError
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction, row
from motor_ident.papers.seeds import merge, needed, over_seeds


def _run(seed: int, held: list[bool], applicable: list[bool]) -> Reproduction:
    rows = [
        row("claim", "paper", paper=1.0, ours=float(seed), reproduced=held[seed], required=True),
        row("gated", "paper", paper="x", ours=0.1, reproduced=True, required=True, applicable=applicable[seed]),
        row("ablation", "ours", ours=2.0, reproduced=held[seed]),
        row("info", "paper", paper=3.0, ours=4.0),
    ]
    return Reproduction(paper="p", title="t", rows=rows, columns=[("ours", "ours.value")], engine="e")


def test_a_claim_holds_on_four_of_five_seeds() -> None:
    """4 of 5 seeds reproduce; 3 of 5 do not; not applicable on every seed stays not applicable."""
    assert [needed(n) for n in (1, 2, 3, 5, 10)] == [1, 2, 3, 4, 8]
    seeds = list(range(5))
    four = merge([_run(s, [True] * 4 + [False], [False] * 5) for s in seeds], seeds, 12.0)
    rows = {r["name"]: r for r in four.rows}
    assert rows["claim"]["status"] == "reproduced" and rows["claim"]["seeds"]["text"] == "4/5"
    assert rows["claim"]["spread"]["text"] == "0 .. 4" and rows["claim"]["ours"]["value"] == 0.0
    assert rows["gated"]["status"] == "not applicable" and rows["gated"]["reproduced"] is None
    assert rows["ablation"]["status"] == "passed" and rows["info"]["status"] == "reported"
    assert four.verdict == "partly reproduced" and four.extra["wall_s"] == 12.0
    three = merge([_run(s, [True] * 3 + [False] * 2, [True] * 5) for s in seeds], seeds, 1.0)
    rows = {r["name"]: r for r in three.rows}
    assert rows["claim"]["status"] == "not reproduced" and rows["gated"]["status"] == "reproduced"
    assert rows["ablation"]["status"] == "failed"
    assert "PAPER PARTLY REPRODUCED: 1/2 key claims" in three.summary()


def test_over_seeds_runs_each_seed_once_and_refuses_zero() -> None:
    """Seeds --seed onwards, each run once (once in all without random draws); zero seeds refused."""
    seen: list[int] = []

    def run(options: ReproduceOptions) -> Reproduction:
        seen.append(options.seed)
        return _run(options.seed % 5, [True] * 5, [True] * 5)

    result = over_seeds(run, ReproduceOptions(seed=3), 3)
    assert seen == [3, 4, 5] and result.extra["seeds"] == [3, 4, 5] and result.passed
    seen.clear()
    once = over_seeds(run, ReproduceOptions(seed=0), 5, seeded=False)
    assert seen == [0] and once.extra["seeds"] == [0] and "one run stands for all 5" in once.notes[-1]
    with pytest.raises(ConfigError, match="seeds"):
        over_seeds(run, ReproduceOptions(), 0)


def _seed_run(options: ReproduceOptions) -> Reproduction:
    return _run(options.seed % 5, [True, False, True, True, True], [True] * 5)


def test_seeds_in_processes_merge_as_in_one() -> None:
    """--jobs 2: the same merged rows, in seed order, as one process running the seeds in turn."""
    one = over_seeds(_seed_run, ReproduceOptions(seed=0), 5)
    two = over_seeds(_seed_run, ReproduceOptions(seed=0), 5, jobs=2)
    assert [r["seeds"] for r in two.rows] == [r["seeds"] for r in one.rows]
    assert [r["ours_by_seed"] for r in two.rows] == [r["ours_by_seed"] for r in one.rows]
    assert two.extra["seeds"] == [0, 1, 2, 3, 4] and two.verdict == one.verdict == "reproduced"
