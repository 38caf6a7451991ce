"""Helpers shared by the ``motor-ident`` subcommands."""

from __future__ import annotations

import json
from pathlib import Path
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
