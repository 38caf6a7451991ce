"""Paper reproductions: each paper's published result next to ours (``motor-ident reproduce <paper>``).

A reproduction is a function ``reproduce(options) -> Reproduction`` in
``motor_ident/papers/<name>/reproduce.py``. `PAPERS` lists the short names; `motor_ident.papers.registry`
imports each function and maps the name to it. This module holds the shared types only, so that the
command line can list the papers without importing them (all five import scipy.signal and
scipy.stats: about 1 s on an idle machine, 4-7 s under load).

Every row says what it compares (`row`, ``kind``): ``paper`` rows put a number the paper printed
beside a number our code computed from data; ``recovery`` rows put our simulated plant's truth
beside our estimate; ``self-check`` rows test our code against itself and never count as agreement
with the paper. A row's verdict is ``reproduced`` (True / False / None for rows printed for
information); `Reproduction.passed` is True when every row marked ``required`` is reproduced. Each
paper's module docstring lists its required rows.

To add a paper: write ``motor_ident/papers/<name>/reproduce.py`` with such a function, add the name
to `PAPERS` and one import line to `motor_ident.papers.registry`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from motor_ident.errors import ConfigError

# short names of the papers with a reproduction (motor_ident/papers/<name>/reproduce.py)
PAPERS = ("guedelha", "kolathaya", "liu", "szabo", "xin")
# simulators a reproduction can run its rigid-body plants on (ReproduceOptions.engine)
ENGINES = ("pinocchio", "mujoco")

ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ReproduceOptions:
    """Settings shared by the reproductions (each uses the ones that apply to it).

    Attributes:
        runs: Monte Carlo runs.
        seed: seed of every random draw.
        starts: random starts of an excitation optimisation.
        trajectory: a saved excitation trajectory (YAML) to use instead of optimising one.
        progress: called as ``progress(stage, done, total)``.
        engine: simulator of the rigid-body plants, ``pinocchio`` (the estimator's own dynamics:
            exact recovery) or ``mujoco`` (an independent engine with unmodelled effects); plants
            that are not rigid-body robots keep their own simulator and say so in ``engine``.
    """

    runs: int = 100
    seed: int = 0
    starts: int = 4
    trajectory: Path | None = None
    progress: ProgressFn | None = None
    engine: str = "pinocchio"

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"engine = {self.engine!r}: expected one of {list(ENGINES)}")
        if not isinstance(self.runs, int) or self.runs < 2:
            raise ConfigError(f"runs = {self.runs!r}: expected an integer >= 2")
        if not isinstance(self.starts, int) or self.starts < 1:
            raise ConfigError(f"starts = {self.starts!r}: expected an integer >= 1")


KINDS = ("paper", "recovery", "self-check")
# how each kind of row reads in the tables
KIND_TITLES = {
    "paper": "Paper vs ours: a number the paper printed beside a number our code computed from data",
    "recovery": "Recovery: our simulated plant's truth vs our estimate (not a comparison with the paper)",
    "self-check": "Self-checks: consistency of our own code (not counted as agreement with the paper)",
}


def row(
    name: str,
    kind: str,
    *,
    paper: Any = None,
    ours: Any = None,
    reproduced: bool | None = None,
    required: bool = False,
    criterion: str = "",
    **more: Any,
) -> dict[str, Any]:
    """One row of a reproduction.

    Args:
        name: what is compared.
        kind: ``paper`` (a number the paper printed beside one our code computed from data),
            ``recovery`` (our plant's truth beside our estimate) or ``self-check`` (our own code
            against itself: never counted as agreement with the paper).
        paper, ours: a value or a dict of values (a bare value becomes ``{"value": v}``); for a
            recovery row ``paper`` holds the plant's truth.
        reproduced: the verdict (None: a row without one, printed for information).
        required: counts toward `Reproduction.passed` (each paper documents its required rows).
        criterion: the test applied, with the measured numbers where it fails.
        more: further JSON-friendly fields.

    Raises:
        ConfigError: unknown kind, or a required row without a verdict.
    """
    if kind not in KINDS:
        raise ConfigError(f"row {name!r}: kind {kind!r}, expected one of {list(KINDS)}")
    if required and reproduced is None:
        raise ConfigError(f"row {name!r}: a required row needs a verdict (reproduced True or False)")
    return {
        "name": name,
        "kind": kind,
        "paper": paper if paper is None or isinstance(paper, dict) else {"value": paper},
        "ours": ours if ours is None or isinstance(ours, dict) else {"value": ours},
        "reproduced": None if reproduced is None else bool(reproduced),
        "required": bool(required),
        "criterion": criterion,
        **more,
    }


@dataclass(frozen=True, eq=False)
class Reproduction:
    """A paper's result beside ours.

    Attributes:
        paper: short name.
        title: the paper's title.
        rows: `row` dicts.
        columns: (header, key path) of the value columns; a key path is "paper.x" or "ours.x".
        engine: the plant that produced the data (which simulator, and whether ``--engine`` applied).
        notes: lines printed under the table.
        extra: further JSON-friendly results.
    """

    paper: str
    title: str
    rows: list[dict[str, Any]]
    columns: list[tuple[str, str]]
    engine: str
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for r in self.rows:
            if r.get("kind") not in KINDS or "reproduced" not in r:
                raise ConfigError(f"row {r.get('name')!r}: build rows with motor_ident.papers.reproduction.row")

    @property
    def required(self) -> list[dict[str, Any]]:
        """The rows `passed` is decided on."""
        return [r for r in self.rows if r["required"]]

    @property
    def passed(self) -> bool:
        """There are required rows and every one of them is reproduced."""
        return bool(self.required) and all(r["reproduced"] is True for r in self.required)

    def table(self, kind: str | None = None) -> list[list[str]]:
        """The table as strings, header first (rows of one ``kind``, or all with a kind column)."""
        head = ([] if kind else ["kind"]) + ["name"] + [h for h, _ in self.columns] + ["verdict", "criterion"]
        out = [head]
        for r in self.rows:
            if kind is not None and r["kind"] != kind:
                continue
            line = ([] if kind else [r["kind"]]) + [str(r["name"])]
            for _, key in self.columns:
                side, item = key.split(".", 1)
                line.append(_format((r.get(side) or {}).get(item)))
            out.append(line + [_verdict(r), r.get("criterion") or ""])
        return out

    def text(self) -> str:
        """Aligned plain-text tables, one per kind of row, with the verdict and notes."""
        lines = [self.title, f"plant: {self.engine}"]
        for kind in KINDS:
            table = self.table(kind)
            if len(table) == 1:
                continue
            widths = [max(len(r[k]) for r in table) for k in range(len(table[0]) - 1)]
            lines += ["", KIND_TITLES[kind]]
            for i, r in enumerate(table):
                cells = [c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r[:-1], widths))]
                lines.append("  ".join(cells) + ("  " + r[-1] if r[-1] else ""))
                if i == 0:
                    lines.append("  ".join("-" * w for w in widths))
        lines += ["", self.summary()]
        lines += [""] + self.notes if self.notes else []
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: required rows reproduced, and the verdicts of the others."""
        required = self.required
        ok = sum(r["reproduced"] is True for r in required)
        others = [r for r in self.rows if not r["required"] and r["reproduced"] is not None]
        other_ok = sum(r["reproduced"] is True for r in others)
        failed = [r["name"] for r in required if r["reproduced"] is not True]
        line = (
            f"required rows reproduced: {ok}/{len(required)}; other rows with a verdict: {other_ok}/{len(others)} "
            "reproduced"
        )
        return line + (f"; NOT reproduced (required): {'; '.join(failed)}" if failed else "")

    def markdown(self) -> str:
        """Markdown: one section per kind of row, the verdict column, the summary and notes."""
        lines = [f"# {self.title}", "", f"Plant: {self.engine}"]
        for kind in KINDS:
            table = self.table(kind)
            if len(table) == 1:
                continue
            lines += ["", f"## {KIND_TITLES[kind]}", "", "| " + " | ".join(table[0]) + " |"]
            lines += ["|" + "---|" * len(table[0])] + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in table[1:]]
        lines += ["", self.summary(), "", "Verdicts marked (required) decide PASSED / FAILED."]
        lines += ["", *[f"- {n}" for n in self.notes]] if self.notes else []
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """The table as CSV (a kind column first)."""
        buffer = io.StringIO()
        csv.writer(buffer).writerows(self.table())
        return buffer.getvalue()

    def to_json(self) -> dict[str, Any]:
        """JSON payload: ``rows`` (each with ``kind``, ``reproduced``, ``required``), ``passed``, ``engine``."""
        return {
            "paper": self.paper,
            "title": self.title,
            "engine": self.engine,
            "passed": self.passed,
            "required": [r["name"] for r in self.required],
            "rows": self.rows,
            "notes": self.notes,
            **self.extra,
        }


def _verdict(r: dict[str, Any]) -> str:
    if r["reproduced"] is None:
        return "-"
    text = "reproduced" if r["reproduced"] else "NOT reproduced"
    return f"{text} (required)" if r["required"] else text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _format(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0.0:
            return "0"
        return f"{value:.3e}" if abs(value) < 1e-2 or abs(value) >= 1e4 else f"{value:.4f}"
    return str(value)
