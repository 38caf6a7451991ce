"""Helpers shared by the ``motor-ident`` subcommands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

# for cli.py, which imports only commands: every motor-ident command runs with one BLAS thread
from motor_ident.core.threads import limit_blas_threads as limit_blas_threads


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to ``path`` atomically (nothing when ``path`` is empty)."""
    if not path:
        return
    from motor_ident.io.data import atomic_write

    text = json.dumps(payload, indent=2, allow_nan=True)
    atomic_write(Path(path), lambda tmp: tmp.write_text(text + "\n"))


def floats(x: Any) -> list[float]:
    """Any array-like as a flat list of Python floats (for JSON and YAML)."""
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


class Stages:
    """Progress of a long command: a rich bar per stage on a terminal, one line per stage otherwise.

    Use as a context manager; `stage` starts a stage and returns the callback that reports its
    fraction done (0 to 1). Off a terminal (a pipe, a log file, tests) each stage prints one line
    ``<command>: <stage>`` on stdout when it starts, and fractions are ignored: stdout, beside the
    command's results, so that a refusal stays the single line on stderr.
    """

    def __init__(self, command: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.command = command
        console = Console(stderr=True)
        self.terminal = console.is_terminal
        self._bar = Progress(
            TextColumn(f"[bold]{command}[/] {{task.description}}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f} %"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not self.terminal,
        )

    def __enter__(self) -> Stages:
        self._bar.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bar.__exit__(kind, error, trace)

    def stage(self, description: str, *, measured: bool = True) -> Callable[[float], None]:
        """Start a stage; the returned callback takes its fraction done (``measured`` False: no fraction known)."""
        if not self.terminal:
            print(f"{self.command}: {description}", flush=True)
            return lambda fraction: None
        task = self._bar.add_task(description, total=1.0 if measured else None)
        previous = [t for t in self._bar.tasks if t.id != task and not t.finished]
        for t in previous:
            self._bar.update(t.id, completed=t.total or 1.0, total=t.total or 1.0)
        return lambda fraction: self._bar.update(task, completed=fraction)
