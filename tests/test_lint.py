"""The code base stays clean under ruff (lint and format), as configured in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _ruff() -> str:
    exe = Path(sys.executable).with_name("ruff")
    found = str(exe) if exe.exists() else shutil.which("ruff")
    if not found:
        pytest.skip("ruff is not installed")
    return found


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]])
def test_ruff(args: list[str]) -> None:
    """ruff reports nothing on the package, the tests, the launch files and setup.py."""
    result = subprocess.run(
        [_ruff(), *args, "motor_ident", "tests", "launch", "setup.py"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
