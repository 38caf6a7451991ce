"""``motor-ident reproduce <paper>``: a paper's published result side by side with ours."""

from __future__ import annotations

import argparse
from pathlib import Path

from motor_ident.commands import arguments
from motor_ident.commands.common import write_json
from motor_ident.errors import ConfigError
from motor_ident.papers.reproduction import (
    ENGINES,
    MUJOCO_PAPERS,
    PAPERS,
    UNSEEDED_PAPERS,
    ReproduceOptions,
    check_engine,
)
from motor_ident.papers.seeds import DEFAULT_SEEDS, over_seeds


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run a paper's reproduction, print its tables and verdict, write JSON / table files.

    Runs ``--seeds`` seeds from ``--seed`` and keeps a claim where it holds on at least 4 of 5
    (`motor_ident.papers.seeds`). Exit status 0 when every key claim of the paper is reproduced and
    every required check of our own method passed, 1 otherwise
    (`motor_ident.papers.reproduction.Reproduction.passed`); 2 for an engine the paper has no plant on.
    """
    check_engine(args.paper, args.engine)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # imports every paper's reproduction (scipy.signal, scipy.stats: ~1 s idle): not at parser build
    from motor_ident.io.data import atomic_write
    from motor_ident.papers.registry import reproduction

    run = reproduction(args.paper)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as bar:
        tasks: dict[str, object] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)  # type: ignore[arg-type]

        result = over_seeds(
            run,
            ReproduceOptions(
                runs=args.runs,
                seed=args.seed,
                starts=args.starts,
                trajectory=None if args.trajectory is None else Path(args.trajectory),
                progress=progress,
                engine=args.engine,
            ),
            args.seeds,
            seeded=args.paper not in UNSEEDED_PAPERS,
            jobs=args.jobs,
        )
    print(result.text())
    if args.out:
        out = Path(args.out)
        if out.suffix.lower() == ".csv":
            text = result.csv()
        elif out.suffix.lower() in (".md", ".markdown"):
            text = result.markdown()
        else:
            raise ConfigError(f"--out {args.out}: expected a .csv or .md file")
        atomic_write(out, lambda tmp: tmp.write_text(text))
        print(f"table written to {out}")
    write_json(args.json, result.to_json())
    return 0 if result.passed else 1


def cmd_reproduce_page(args: argparse.Namespace) -> int:
    """Regenerate the page's key-claim tables from runs' JSON; write each paper's page record beside the page.

    ``--check``: write nothing, exit 1 naming the papers whose block differs. Exit 2 for a file that is
    not a run's JSON or a page without the paper's block.
    """
    import json

    from motor_ident.io.data import atomic_write
    from motor_ident.papers.page import page_record, update_page

    page = Path(args.page)
    payloads = []
    for name in args.runs:
        try:
            payloads.append(json.loads(Path(name).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{name}: cannot read a run's JSON ({exc})") from None
    try:
        text = page.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--page {page}: {exc.strerror}") from None
    new = update_page(text, payloads)
    records = Path(args.records) if args.records else page.parent / page.stem
    if args.check:
        stale = [p["paper"] for p in payloads if update_page(text, [p]) != text]
        if stale:
            print(f"{page}: the key-claim tables of {', '.join(stale)} differ from the runs' JSON")
            return 1
        print(f"{page}: the key-claim tables agree with the runs' JSON")
        return 0
    for payload in payloads:
        record = page_record(payload)
        write_json(str(records / f"{record['paper']}.json"), record)
    if new != text:
        atomic_write(page, lambda tmp: tmp.write_text(new, encoding="utf-8"))
    print(f"{page}: key-claim tables of {', '.join(p['paper'] for p in payloads)} written; records in {records}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``reproduce`` to the command line."""
    p = sub.add_parser("reproduce", help="a paper's result side by side with ours")
    p.add_argument("paper", choices=PAPERS, help="which paper")
    p.add_argument("--runs", type=arguments.COUNT, default=100, help="Monte Carlo runs (default 100)")
    p.add_argument("--seed", type=arguments.SEED, default=0, help="first seed of the random draws (default 0)")
    p.add_argument(
        "--seeds",
        type=arguments.COUNT,
        default=DEFAULT_SEEDS,
        help=f"seeds to run, --seed onwards (default {DEFAULT_SEEDS}); a claim is reproduced where it holds on at "
        "least 4 of 5 (1 for a quick look)",
    )
    p.add_argument(
        "--jobs",
        type=arguments.COUNT,
        default=1,
        help="seeds run at once, each in a process of its own (default 1; 2 on a 2-core machine halves the wall time)",
    )
    p.add_argument(
        "--starts", type=arguments.COUNT, default=4, help="random starts of the excitation optimisation (default 4)"
    )
    p.add_argument("--trajectory", help="use this excitation YAML (from motor-ident excite) instead of optimising")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="pinocchio",
        help="simulator of the rigid-body plants: pinocchio (the estimator's own dynamics, exact recovery) or "
        f"mujoco (independent engine, unmodelled effects; only {', '.join(MUJOCO_PAPERS)}: the other papers "
        "run their own plants and refuse it)",
    )
    p.add_argument("--out", help="write the tables (one per kind of row) to this .csv or .md file")
    p.add_argument(
        "--json",
        help="write rows (kind, status, required), verdict, counts, passed, engine and details to this JSON file",
    )
    p.set_defaults(func=cmd_reproduce)
    page = sub.add_parser(
        "reproduce-page", help="regenerate docs/reproductions.md's key-claim tables from reproduction runs' JSON"
    )
    page.add_argument("runs", nargs="+", help="JSON files of `motor-ident reproduce <paper> --json F` runs")
    page.add_argument("--page", default="docs/reproductions.md", help="the page (default docs/reproductions.md)")
    page.add_argument(
        "--records",
        help="directory for each paper's page record, <paper>.json (default: beside the page, docs/reproductions/)",
    )
    page.add_argument("--check", action="store_true", help="write nothing; exit 1 when a table differs from the runs")
    page.set_defaults(func=cmd_reproduce_page)
