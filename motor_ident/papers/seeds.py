"""A reproduction over several seeds: a claim counts as reproduced only where it holds on most of them.

One seed of a simulated experiment can land on either side of a criterion; a verdict a user may trust
holds across seeds. `over_seeds` runs a reproduction for seeds ``seed, seed + 1, ...`` and merges the
runs row by row: each row carries how many seeds it held on (``seeds``), the value of every seed and
their spread (``ours_by_seed``, ``spread``), and a row with a verdict is reproduced (passed) only where
it held on at least `AGREEMENT` of the seeds (4 of 5; 1 of 1 for a quick look). The values printed are
the first seed's. A row absent from a seed's run counts as not holding there.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from typing import Any

from motor_ident.errors import ConfigError
from motor_ident.papers.reproduction import ReproduceOptions, Reproduction

AGREEMENT = 0.8  # fraction of the seeds a claim must hold on (4 of 5)
DEFAULT_SEEDS = 5


def needed(seeds: int) -> int:
    """Seeds (of ``seeds``) a claim must hold on to count as reproduced: ceil(0.8 x seeds)."""
    return max(1, math.ceil(AGREEMENT * seeds - 1e-9))


def over_seeds(
    run: Callable[[ReproduceOptions], Reproduction],
    options: ReproduceOptions,
    seeds: int,
    *,
    seeded: bool = True,
    jobs: int = 1,
) -> Reproduction:
    """Run ``run`` for seeds ``options.seed`` ... ``options.seed + seeds - 1`` and merge the results (`merge`).

    ``seeded``: False for a reproduction that draws nothing at random (`UNSEEDED_PAPERS`): it runs once, and
    says so. ``jobs``: seeds run at once, each in a process of its own (forked: ``run`` and its results
    must pickle; progress is then reported per finished seed). The wall time of all the runs is in
    ``extra["wall_s"]``.

    Raises:
        ConfigError: ``seeds`` or ``jobs`` below 1.
    """
    if not isinstance(seeds, int) or seeds < 1:
        raise ConfigError(f"seeds = {seeds!r}: expected an integer >= 1")
    if not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs = {jobs!r}: expected an integer >= 1")
    start = time.monotonic()
    if not seeded:
        merged = merge([run(options)], [options.seed], time.monotonic() - start)
        merged.notes.append(f"No random draw: one run stands for all {seeds} seeds asked for.")
        return merged
    if jobs > 1 and seeds > 1:
        results = _in_processes(run, options, seeds, jobs)
        return merge(results, [options.seed + k for k in range(seeds)], time.monotonic() - start)
    results = []
    for k in range(seeds):
        seed = options.seed + k
        progress = options.progress

        def labelled(stage: str, done: int, total: int, seed: int = seed, progress: Any = progress) -> None:
            if progress is not None:
                progress(f"seed {seed}: {stage}", done, total)

        results.append(run(replace(options, seed=seed, progress=labelled)))
    return merge(results, [options.seed + k for k in range(seeds)], time.monotonic() - start)


def _in_processes(
    run: Callable[[ReproduceOptions], Reproduction], options: ReproduceOptions, seeds: int, jobs: int
) -> list[Reproduction]:
    """The runs of seeds ``options.seed`` onwards, ``jobs`` forked processes at a time, in seed order."""
    stage = f"seeds, {jobs} at a time"
    each = [replace(options, seed=options.seed + k, progress=None) for k in range(seeds)]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(run, o): k for k, o in enumerate(each)}
        out: list[Reproduction | None] = [None] * seeds
        for done, future in enumerate(as_completed(futures), start=1):
            out[futures[future]] = future.result()
            if options.progress is not None:
                options.progress(stage, done, seeds)
    return [r for r in out if r is not None]


def merge(results: list[Reproduction], seeds: list[int], wall_s: float) -> Reproduction:
    """One reproduction from the same reproduction run on ``seeds`` (``results[k]`` on ``seeds[k]``).

    Raises:
        ConfigError: no result, or as many results as seeds not given.
    """
    if not results or len(results) != len(seeds):
        raise ConfigError(f"{len(results)} results for {len(seeds)} seeds: expected one per seed, at least one")
    first = results[0]
    by_name = [{r["name"]: r for r in result.rows} for result in results]
    names = list(dict.fromkeys(name for rows in by_name for name in rows))
    need = needed(len(seeds))
    rows = [_merge_row([rows.get(name) for rows in by_name], need) for name in names]
    per_seed = [
        {
            "seed": seed,
            "verdict": r.verdict,
            "key_claims_reproduced": sum(c["status"] == "reproduced" for c in r.key_claims),
        }
        for seed, r in zip(seeds, results, strict=True)
    ]
    span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    note = (
        f"Verdicts over {len(seeds)} {span.split()[0]} ({span}): a row holds when it does on at least {need} of "
        f"{len(seeds)}; values are seed {seeds[0]}'s (every seed's and the spread in the JSON); wall time "
        f"{wall_s:.0f} s."
    )
    return Reproduction(
        paper=first.paper,
        title=first.title,
        rows=rows,
        columns=[*first.columns, ("spread over seeds", "spread.text"), ("seeds held", "seeds.text")],
        engine=first.engine,
        notes=[*first.notes, note],
        extra={
            **first.extra,
            "seeds": seeds,
            "seeds_needed": need,
            "wall_s": wall_s,
            "per_seed": per_seed,
        },
    )


def _merge_row(versions: list[dict[str, Any] | None], need: int) -> dict[str, Any]:
    """One row from its version on each seed (None where a seed's run had no such row)."""
    present = [r for r in versions if r is not None]
    base = dict(present[0])
    statuses = [None if r is None else r["status"] for r in versions]
    held = sum(s in ("reproduced", "passed") for s in statuses)
    total = len(versions)
    if base["status"] in ("reported", "not implemented") and all(s == base["status"] for s in statuses):
        verdict = None  # nothing tested on any seed
        text = "-"
    else:
        verdict = held >= need
        text = f"{held}/{total}"
    if verdict is None:
        status = base["status"]
    elif base["kind"] == "paper":
        status = (
            "reproduced"
            if verdict
            else ("not applicable" if all(s == "not applicable" for s in statuses) else "not reproduced")
        )
    else:
        status = "passed" if verdict else "failed"
    base.update(
        reproduced=None if status in ("not applicable", "not implemented", "reported") else verdict,
        status=status,
        seeds={"text": text, "held": held, "of": total, "needed": need, "statuses": statuses},
        ours_by_seed=[None if r is None else r.get("ours") for r in versions],
        spread=_spread([None if r is None else r.get("ours") for r in versions]),
    )
    return base


def _spread(values: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Min and max over the seeds of the first numeric entry of ``ours`` (``value``, ``reduction_pct``,
    ``bias_sd`` first: what varies, not a truth carried beside it)."""
    present = [v for v in values if v]
    if not present:
        return {"text": "-"}
    keys = [k for k in ("value", "reduction_pct", "bias_sd") if k in present[0]] + list(present[0])
    for key in keys:
        entries = [v.get(key) for v in present]
        numbers = [float(x) for x in entries if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if len(numbers) == len(entries) and all(math.isfinite(x) for x in numbers):
            low, high = min(numbers), max(numbers)
            return {"key": key, "min": low, "max": high, "text": f"{_short(low)} .. {_short(high)}"}
    return {"text": "-"}


def _short(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.2e}"
