"""Paper reproductions: each paper's published result next to ours (``motor-ident reproduce <paper>``).

A reproduction is a function ``reproduce(options) -> Reproduction`` in
``motor_ident/papers/<name>/reproduce.py``. `PAPERS` lists the short names; `motor_ident.papers.registry`
imports each function and maps the name to it. This module holds the shared types only, so that the
command line can list the papers without importing them (all five import scipy.signal and
scipy.stats: about 1 s on an idle machine, 4-7 s under load).

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
    """

    runs: int = 100
    seed: int = 0
    starts: int = 4
    trajectory: Path | None = None
    progress: ProgressFn | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.runs, int) or self.runs < 2:
            raise ConfigError(f"runs = {self.runs!r}: expected an integer >= 2")
        if not isinstance(self.starts, int) or self.starts < 1:
            raise ConfigError(f"starts = {self.starts!r}: expected an integer >= 1")


@dataclass(frozen=True, eq=False)
class Reproduction:
    """A paper's result beside ours.

    Attributes:
        paper: short name.
        title: the paper's title.
        rows: one dict per compared quantity: ``{"name", "paper", "ours"}`` (paper may be None
            where the paper has no comparable number).
        checks: named pass/fail criteria.
        columns: (header, key path) of the printed table; a key path is "paper.x" or "ours.x".
        notes: lines printed under the table.
        extra: further JSON-friendly results.
    """

    paper: str
    title: str
    rows: list[dict[str, Any]]
    checks: dict[str, bool]
    columns: list[tuple[str, str]]
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """All checks passed."""
        return all(self.checks.values())

    def table(self) -> list[list[str]]:
        """The table as strings, header first."""
        out = [["name"] + [h for h, _ in self.columns]]
        for row in self.rows:
            line = [str(row["name"])]
            for _, key in self.columns:
                side, item = key.split(".", 1)
                value = (row.get(side) or {}).get(item)
                line.append(_format(value))
            out.append(line)
        return out

    def text(self) -> str:
        """Aligned plain-text table with the checks and notes."""
        table = self.table()
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        lines = [self.title, ""]
        for i, r in enumerate(table):
            lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines.append("")
        lines += [f"[{'pass' if ok else 'FAIL'}] {name}" for name, ok in self.checks.items()]
        lines += [""] + self.notes if self.notes else []
        return "\n".join(lines)

    def markdown(self) -> str:
        """The table as Markdown, with the checks and notes."""
        table = self.table()
        lines = [f"# {self.title}", "", "| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
        lines += ["| " + " | ".join(r) + " |" for r in table[1:]]
        lines += ["", *[f"- {'pass' if ok else 'FAIL'}: {name}" for name, ok in self.checks.items()]]
        lines += ["", *self.notes] if self.notes else []
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """The table as CSV."""
        buffer = io.StringIO()
        csv.writer(buffer).writerows(self.table())
        return buffer.getvalue()

    def to_json(self) -> dict[str, Any]:
        """JSON payload: ``rows``, ``passed``, ``checks`` and the extra results."""
        return {
            "paper": self.paper,
            "title": self.title,
            "rows": self.rows,
            "passed": self.passed,
            "checks": self.checks,
            "notes": self.notes,
            **self.extra,
        }


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
