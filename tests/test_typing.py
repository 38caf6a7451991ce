"""motor_ident type-checks under mypy with the pyproject.toml configuration (core strictly)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import REPO


def test_mypy() -> None:
    """``python -m mypy motor_ident`` finds nothing (cache in .mypy_cache: a few seconds when warm)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed: run tools/setup.sh")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", ".mypy_cache", "motor_ident"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
