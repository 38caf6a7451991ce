"""Paper reproductions: each paper's published result next to ours (``motor-ident reproduce <paper>``).

A reproduction is a function ``reproduce(options) -> Reproduction`` in
``motor_ident/papers/<name>/reproduce.py``. `PAPERS` lists the short names; `motor_ident.papers.registry`
imports each function and maps the name to it. This module holds the shared types only, so that the
command line can list the papers without importing them (all five import scipy.signal and
scipy.stats: about 1 s on an idle machine, 4-7 s under load).

Every row says what it compares (`row`, ``kind``): ``paper`` rows are claims of the paper, a number
or a statement it printed beside what our code computed from data; ``recovery`` rows put our
simulated plant's truth (simulator inputs included, even where they are the paper's numbers) beside
our estimate; ``ours`` rows are our own ablations and extensions (never a claim of the paper);
``self-check`` rows test our code against itself. None of the last three ever counts as agreement
with the paper.

A paper row is reproduced (``reproduced=True``), NOT reproduced (False), reported (None: printed
beside the paper's value without a test), not implemented (``implemented=False``: a claim our code
does not compute) or not applicable (``applicable=False``: the claim's precondition does not hold in
our run, e.g. the identified model is not in use at the end; never counted as reproduced). The paper
rows marked ``required`` are the paper's KEY CLAIMS (docs/reproductions.md lists them per paper):
the verdict (`Reproduction.verdict`), the summary line and the exit status follow them. A recovery
or self-check row marked ``required`` is a check of our own method that must pass as well; ``ours``
rows are never required. `Reproduction.counts` tallies the rows per kind and status.
`motor_ident.papers.seeds` runs a reproduction over several seeds and keeps a claim only where it
holds on most of them.

To add a paper: write ``motor_ident/papers/<name>/reproduce.py`` with such a function, add the name
to `PAPERS` (and to `MUJOCO_PAPERS` when it runs a rigid-body plant that MuJoCo can simulate) and one
import line to `motor_ident.papers.registry`.
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
# the papers whose reproduction runs a rigid-body robot that the MuJoCo plant can simulate; the others
# keep their own plants (motor chains, a two-inertia bench, an elastic arm) and refuse --engine mujoco
MUJOCO_PAPERS = ("kolathaya", "szabo")
# the papers whose reproduction draws nothing at random (the seed changes nothing): one run stands for every seed
UNSEEDED_PAPERS = ("xin",)


def check_engine(paper: str, engine: str) -> None:
    """Refuse an engine the reproduction of ``paper`` has no plant for.

    Raises:
        ConfigError: ``engine`` is not ``pinocchio`` and ``paper`` has no plant on it.
    """
    if engine not in ENGINES:
        raise ConfigError(f"engine = {engine!r}: expected one of {list(ENGINES)}")
    if engine == "mujoco" and paper not in MUJOCO_PAPERS:
        raise ConfigError(
            f"--engine mujoco: the {paper} reproduction has no MuJoCo plant (it simulates no rigid-body robot); "
            f"papers with one: {', '.join(MUJOCO_PAPERS)}"
        )


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


KINDS = ("paper", "recovery", "ours", "self-check")
# how each kind of row reads in the tables
KIND_TITLES = {
    "paper": "Paper vs ours: the paper's claims, a number it printed beside a number our code computed from data",
    "recovery": "Recovery: our simulated plant's truth vs our estimate (not a comparison with the paper)",
    "ours": "Ours: our own ablations and extensions (not claims of the paper, never key claims)",
    "self-check": "Self-checks: consistency of our own code (not counted as agreement with the paper)",
}
# status of a row: paper rows are reproduced / not reproduced / not implemented / not applicable / reported,
# checks (recovery, ours, self-check) passed / failed / reported
PAPER_STATUSES = ("reproduced", "not reproduced", "not implemented", "not applicable", "reported")
CHECK_STATUSES = ("passed", "failed", "reported")


def row(
    name: str,
    kind: str,
    *,
    paper: Any = None,
    ours: Any = None,
    reproduced: bool | None = None,
    required: bool = False,
    criterion: str = "",
    implemented: bool = True,
    applicable: bool = True,
    **more: Any,
) -> dict[str, Any]:
    """One row of a reproduction.

    Args:
        name: what is compared.
        kind: ``paper`` (a claim of the paper: a number or statement it printed beside what our
            code computed from data), ``recovery`` (our plant's truth beside our estimate; simulator
            inputs recovered belong here even where they are the paper's numbers), ``ours`` (our own
            ablation or extension) or ``self-check`` (our own code against itself). Only paper rows
            count as agreement with the paper.
        paper, ours: a value or a dict of values (a bare value becomes ``{"value": v}``); for a
            recovery row ``paper`` holds the plant's truth.
        reproduced: the verdict (None: reported, printed without a test). For a recovery or
            self-check row, True is "passed".
        required: on a paper row, a KEY CLAIM of the paper (the verdict follows the key claims); on
            a recovery or self-check row, a check of our method that must pass; never on an ours row.
        criterion: the test applied, with the measured numbers where it fails.
        implemented: False for a paper claim our code does not compute (``reproduced`` stays None).
        applicable: False for a paper claim whose precondition does not hold in this run (the verdict
            given is dropped: the row is "not applicable", never reproduced).
        more: further JSON-friendly fields.

    Raises:
        ConfigError: unknown kind, a required row without a verdict, a required ours row, or an
            unimplemented / not applicable row that is not a paper row (or, unimplemented, has a verdict).
    """
    if kind not in KINDS:
        raise ConfigError(f"row {name!r}: kind {kind!r}, expected one of {list(KINDS)}")
    if not implemented and (kind != "paper" or reproduced is not None):
        raise ConfigError(f"row {name!r}: only a paper row without a verdict can be 'not implemented'")
    if not applicable and kind != "paper":
        raise ConfigError(f"row {name!r}: only a paper row can be 'not applicable'")
    if required and kind == "ours":
        raise ConfigError(f"row {name!r}: an ours row (our own ablation) is never required")
    if not applicable:
        reproduced = None
    if required and implemented and applicable and reproduced is None:
        raise ConfigError(f"row {name!r}: a required row needs a verdict (reproduced True or False)")
    verdict = None if reproduced is None else bool(reproduced)
    return {
        "name": name,
        "kind": kind,
        "paper": paper if paper is None or isinstance(paper, dict) else {"value": paper},
        "ours": ours if ours is None or isinstance(ours, dict) else {"value": ours},
        "reproduced": verdict,
        "required": bool(required),
        "status": _status(kind, verdict, implemented, applicable),
        "criterion": criterion,
        **more,
    }


def _status(kind: str, reproduced: bool | None, implemented: bool, applicable: bool = True) -> str:
    if kind == "paper":
        if not implemented:
            return "not implemented"
        if not applicable:
            return "not applicable"
        return "reported" if reproduced is None else ("reproduced" if reproduced else "not reproduced")
    return "reported" if reproduced is None else ("passed" if reproduced else "failed")


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
            if r.get("kind") not in KINDS or "reproduced" not in r or "status" not in r:
                raise ConfigError(f"row {r.get('name')!r}: build rows with motor_ident.papers.reproduction.row")

    @property
    def required(self) -> list[dict[str, Any]]:
        """The rows the verdict is decided on: the key paper claims and the required checks."""
        return [r for r in self.rows if r["required"]]

    @property
    def key_claims(self) -> list[dict[str, Any]]:
        """The paper rows marked required: the claims a user of this reproduction cares about."""
        return [r for r in self.rows if r["required"] and r["kind"] == "paper"]

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        """Required recovery and self-check rows that did not pass."""
        return [r for r in self.rows if r["required"] and r["kind"] != "paper" and r["status"] != "passed"]

    @property
    def passed(self) -> bool:
        """Every key paper claim is reproduced (there is at least one) and every required check passed."""
        claims = self.key_claims
        return bool(claims) and all(r["status"] == "reproduced" for r in claims) and not self.failed_checks

    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per kind and status (``paper``, ``key claims``, ``recovery``, ``self-check``)."""
        out: dict[str, dict[str, int]] = {}
        groups = (
            ("paper", PAPER_STATUSES, [r for r in self.rows if r["kind"] == "paper"]),
            ("key claims", PAPER_STATUSES[:4], self.key_claims),
            ("recovery", CHECK_STATUSES, [r for r in self.rows if r["kind"] == "recovery"]),
            ("ours", CHECK_STATUSES, [r for r in self.rows if r["kind"] == "ours"]),
            ("self-check", CHECK_STATUSES, [r for r in self.rows if r["kind"] == "self-check"]),
        )
        for group, statuses, rows in groups:
            out[group] = {status: sum(r["status"] == status for r in rows) for status in statuses}
        return out

    @property
    def verdict(self) -> str:
        """``reproduced`` (every key claim), ``partly reproduced``, ``not reproduced`` (no key claim),
        ``no key claim`` (nothing compared with the paper), or ``checks failed`` (claims reproduced
        but a required check of our own method failed)."""
        claims = self.key_claims
        ok = sum(r["status"] == "reproduced" for r in claims)
        if not claims:
            return "no key claim"
        if ok < len(claims):
            return "partly reproduced" if ok else "not reproduced"
        return "checks failed" if self.failed_checks else "reproduced"

    def summary(self) -> str:
        """Two lines: the verdict on the key paper claims (with the ones missed), then counts per kind."""
        claims = self.key_claims
        ok = sum(r["status"] == "reproduced" for r in claims)
        head = {
            "reproduced": f"PAPER REPRODUCED: {ok}/{len(claims)} key claims",
            "partly reproduced": f"PAPER PARTLY REPRODUCED: {ok}/{len(claims)} key claims",
            "not reproduced": f"PAPER NOT REPRODUCED: 0/{len(claims)} key claims",
            "no key claim": "NO KEY CLAIM OF THE PAPER CHECKED",
            "checks failed": f"OUR CHECKS FAILED (key claims {ok}/{len(claims)} reproduced)",
        }[self.verdict]
        missed = [f"{r['name']} ({r['status']})" for r in claims if r["status"] != "reproduced"]
        missed += [f"{r['name']} ({r['kind']} {r['status']})" for r in self.failed_checks]
        c = self.counts()
        p, r, o, s = c["paper"], c["recovery"], c["ours"], c["self-check"]
        tally = (
            f"paper rows: {p['reproduced']} reproduced, {p['not reproduced']} not reproduced, "
            f"{p['not implemented']} not implemented, {p['not applicable']} not applicable, {p['reported']} reported; "
            f"recovery rows: {r['passed']} passed, {r['failed']} failed, {r['reported']} reported; "
            f"ours: {o['passed']} passed, {o['failed']} failed, {o['reported']} reported; "
            f"self-checks: {s['passed']} passed, {s['failed']} failed, {s['reported']} reported"
        )
        return head + (f"; missed: {'; '.join(missed)}" if missed else "") + "\n" + tally

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
        lines += [""] + self.notes if self.notes else []
        lines += ["", self.summary()]
        return "\n".join(lines)

    def markdown(self) -> str:
        """Markdown: one section per kind of row, the verdict column, the notes and the verdict."""
        lines = [f"# {self.title}", "", f"Plant: {self.engine}"]
        for kind in KINDS:
            table = self.table(kind)
            if len(table) == 1:
                continue
            lines += ["", f"## {KIND_TITLES[kind]}", "", "| " + " | ".join(table[0]) + " |"]
            lines += ["|" + "---|" * len(table[0])] + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in table[1:]]
        lines += ["", *[f"- {n}" for n in self.notes]] if self.notes else []
        head, tally = self.summary().split("\n")
        lines += [
            "",
            f"**{head}**",
            "",
            tally,
            "",
            "Rows marked (key claim) decide the verdict; see docs/reproductions.md.",
        ]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """The table as CSV (a kind column first)."""
        buffer = io.StringIO()
        csv.writer(buffer).writerows(self.table())
        return buffer.getvalue()

    def to_json(self) -> dict[str, Any]:
        """JSON payload: ``rows`` (each with ``kind``, ``status``, ``reproduced``, ``required``), ``verdict``,
        ``counts``, ``passed`` (the exit status is 0), ``key_claims``, ``engine``."""
        return {
            "paper": self.paper,
            "title": self.title,
            "engine": self.engine,
            "verdict": self.verdict,
            "passed": self.passed,
            "counts": self.counts(),
            "key_claims": [r["name"] for r in self.key_claims],
            "columns": [list(c) for c in self.columns],
            "required": [r["name"] for r in self.required],
            "rows": self.rows,
            "notes": self.notes,
            **self.extra,
        }

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> Reproduction:
        """The reproduction a `to_json` payload (``motor-ident reproduce --json``) describes.

        Raises:
            ConfigError: the payload lacks a field of `to_json` or has malformed rows.
        """
        try:
            known = ("paper", "title", "rows", "columns", "engine", "notes")
            return cls(
                paper=str(payload["paper"]),
                title=str(payload["title"]),
                rows=list(payload["rows"]),
                columns=[(str(h), str(k)) for h, k in payload["columns"]],
                engine=str(payload["engine"]),
                notes=list(payload.get("notes", [])),
                extra={k: v for k, v in payload.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not the JSON of a reproduction run (motor-ident reproduce --json): {exc!r}") from None


def _verdict(r: dict[str, Any]) -> str:
    status = r["status"]
    text = {"reported": "-", "not reproduced": "NOT reproduced", "failed": "FAILED"}.get(status, status)
    if not r["required"]:
        return text
    return f"{text} (key claim)" if r["kind"] == "paper" else f"{text} (required)"


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
