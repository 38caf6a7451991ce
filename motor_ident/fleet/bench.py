"""Scaling of fleet identification: the same recordings on 1 and 2 local workers and on a TCP cluster.

Three runs identify the same simulated recordings into fresh stores: a `LocalCluster` of one
worker process, one of two, and a cluster of separate processes (``dask scheduler`` and two
``dask worker`` processes of one thread each, talking TCP on 127.0.0.1, no dashboards). Each
worker loads the robot config before the clock starts (``client.run``), so the figures are
throughput of identification, not of process start-up. Parallel efficiency is
``throughput_K / (K throughput_1)``. Each row's ``task_seconds`` and ``task_cpu_seconds`` (wall and
CPU time of the task in its worker) tell scheduling overhead (busy fraction = task time / (workers x
wall time)) from contention for the cores (task CPU time well below its wall time).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from distributed import Client

from motor_ident.errors import MotorIdentError
from motor_ident.fleet.cluster import identify_fleet, local_cluster
from motor_ident.fleet.recordings import Recording
from motor_ident.fleet.store import ParameterStore
from motor_ident.fleet.worker import IdentifySettings, robot_setup

START_TIMEOUT_S = 120.0
"""Longest wait for the TCP cluster's scheduler file and workers [s]."""


@contextmanager
def tcp_cluster(workers: int, directory: Path) -> Iterator[Client]:
    """A scheduler and ``workers`` worker processes (``python -m dask ...``) on 127.0.0.1; a client of it.

    Raises:
        MotorIdentError: the scheduler or the workers did not come up within START_TIMEOUT_S.
    """
    scheduler_file = directory / "scheduler.json"
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                *common,
                "--port",
                "0",
                "--scheduler-file",
                str(scheduler_file),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not scheduler_file.is_file():  # the scheduler writes it once it listens
            if time.monotonic() > deadline or processes[0].poll() is not None:
                raise MotorIdentError("the dask scheduler did not start (is port binding on 127.0.0.1 allowed?)")
            time.sleep(0.1)
        for k in range(workers):
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "dask",
                        "worker",
                        *common,
                        "--nthreads",
                        "1",
                        "--name",
                        f"bench-{k}",
                        "--scheduler-file",
                        str(scheduler_file),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        with Client(scheduler_file=str(scheduler_file), timeout=START_TIMEOUT_S) as client:
            client.wait_for_workers(workers, timeout=START_TIMEOUT_S)
            yield client
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def _timed_run(
    client: Client, recordings: Sequence[Recording], settings: IdentifySettings, store: Path
) -> dict[str, Any]:
    for config in {r.config for r in recordings}:
        client.run(robot_setup, config)  # every worker builds its regressor before the clock starts
    summary = identify_fleet(recordings, settings, ParameterStore(store), client, timeout=3600)
    if summary.failed or summary.identified != len(recordings):
        raise MotorIdentError(f"benchmark run failed: {summary.failed[:3]}")
    rows = ParameterStore(store).frame()
    return {
        "workers": summary.workers,
        "recordings": summary.identified,
        "seconds": summary.seconds,
        "recordings_per_s": summary.identified / summary.seconds,
        "task_seconds": float(rows["task_seconds"].sum()),
        "task_cpu_seconds": float(rows["task_cpu_seconds"].sum()),
        "worker_busy_fraction": float(rows["task_seconds"].sum()) / (summary.workers * summary.seconds),
    }


def scaling_benchmark(
    recordings: Sequence[Recording], settings: IdentifySettings, *, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Identify ``recordings`` with 1 and 2 local workers and on a 2-worker TCP cluster; the figures."""
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="motor_ident_fleet_bench_") as tmp:
        root = Path(tmp)
        for workers in (1, 2):
            with local_cluster(workers) as cluster, Client(cluster) as client:
                runs[f"local_{workers}"] = _timed_run(client, recordings, settings, root / f"store_local_{workers}")
            log(f"LocalCluster, {workers} worker(s): {runs[f'local_{workers}']['recordings_per_s']:.2f} recordings/s")
        with tcp_cluster(2, root) as client:
            runs["tcp_2"] = _timed_run(client, recordings, settings, root / "store_tcp_2")
        log(f"scheduler + 2 workers over TCP: {runs['tcp_2']['recordings_per_s']:.2f} recordings/s")
    one = runs["local_1"]["recordings_per_s"]
    for run in runs.values():
        run["parallel_efficiency"] = run["recordings_per_s"] / (run["workers"] * one)
    return {"cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()), "runs": runs}
