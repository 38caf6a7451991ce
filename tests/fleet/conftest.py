"""Shared fleet fixtures: a simulated fleet (3 robots x 5 days) written by the command, a local Dask cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROBOTS, DAYS = 3, 5
COMMAND_TIMEOUT_S = 240


def motor_ident(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``motor-ident ARGS`` as a process (BLAS on one thread), bounded in time."""
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    command = [str(Path(sys.executable).parent / "motor-ident"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env)


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``motor-ident fleet simulate --robots 3 --days 5``: its directory and truth.json."""
    out = tmp_path_factory.mktemp("fleet") / "recordings"
    result = motor_ident("fleet", "simulate", "--robots", str(ROBOTS), "--days", str(DAYS), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out, json.loads((out / "truth.json").read_text())


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    """A Dask client of a LocalCluster with 2 worker processes (127.0.0.1, no dashboard), shut down after."""
    from distributed import Client

    from motor_ident.fleet.cluster import local_cluster

    cluster = local_cluster(2)
    try:
        with Client(cluster, timeout=120) as dask_client:
            yield dask_client
    finally:
        cluster.close(timeout=60)
