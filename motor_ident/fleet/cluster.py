"""Identifying a fleet's recordings on Dask distributed, into the parameter store.

One task per recording (`motor_ident.fleet.worker.identify_recording`), or per chunk of a long
NPZ recording with a final task merging the chunks' sufficient statistics, submitted to a
`distributed.LocalCluster` on this machine (worker processes with one thread each, bound to
127.0.0.1, no dashboard) or to an existing scheduler (``tcp://host:8786``): the same code on a
laptop or on a cluster started by Dask's deployment tools (dask-jobqueue for SLURM, dask-kubernetes,
...). Workers must see the recordings' paths (a shared file system); rows come back to this
process, which alone writes the store. A task that raises is retried (``retries``), a task whose
worker dies is rescheduled by Dask on another worker (``distributed.scheduler.allowed-failures``).

Recordings whose key (content hash + settings and config hash) is already in the store are not
submitted, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from distributed import Client, LocalCluster, as_completed

from motor_ident.fleet.recordings import Recording, sample_count
from motor_ident.fleet.store import ParameterStore
from motor_ident.fleet.worker import IdentifySettings, chunk_statistics, identify_recording, merge_chunks, row_key

Task = Callable[[Recording, IdentifySettings], dict[str, Any]]
Progress = Callable[[int, int], None]


@dataclass
class RunSummary:
    """What a fleet identification did.

    Attributes:
        identified: recordings identified and stored by this run.
        skipped: recordings already in the store.
        failed: (recording path, error) of recordings that failed after their retries.
        workers: Dask workers the run used.
        seconds: wall time of the identification (from the first submission to the last row).
    """

    identified: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    workers: int = 0
    seconds: float = 0.0


def local_cluster(workers: int) -> LocalCluster:
    """A cluster on this machine: ``workers`` processes with one thread each, on 127.0.0.1 only."""
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.CRITICAL,  # workers' shutdown races are logged as errors; task errors reach the client
        env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    )


def pending(recordings: Sequence[Recording], settings: IdentifySettings, store: ParameterStore) -> list[Recording]:
    """The recordings whose row (content, settings and config hash) is not in ``store`` yet."""
    stored = store.keys()
    return [r for r in recordings if row_key(r, settings) not in stored]


def identify_fleet(
    recordings: Sequence[Recording],
    settings: IdentifySettings,
    store: ParameterStore,
    client: Client,
    *,
    retries: int = 2,
    progress: Progress | None = None,
    task: Task = identify_recording,
    chunk_samples: int = 0,
    timeout: float | None = None,
) -> RunSummary:
    """Identify every recording not yet in ``store`` on ``client``'s cluster and store the rows.

    Args:
        recordings: what to identify.
        settings: identification settings (part of each row's key).
        store: where the rows go (written here, one atomic file per recording).
        client: a connected Dask client.
        retries: extra attempts of a task that raised.
        progress: called with (done, total) after each recording.
        task: the function run per recording (the default identifies it).
        chunk_samples: split NPZ recordings longer than this into chunks of this many samples,
            identified in parallel and merged exactly (0: one task per recording).
        timeout: seconds to wait for all results (None: no limit).

    Returns:
        The run's summary; failed recordings are listed, not raised.
    """
    todo = pending(recordings, settings, store)
    summary = RunSummary(skipped=len(recordings) - len(todo), workers=len(client.scheduler_info()["workers"]))
    if progress is not None:
        progress(summary.skipped, len(recordings))
    if not todo:
        return summary
    start = time.perf_counter()
    futures = {}
    for r in todo:
        key = row_key(r, settings)
        samples = sample_count(r) if chunk_samples else None
        if samples is None or samples <= chunk_samples:
            futures[client.submit(task, r, settings, retries=retries, pure=False, key=f"identify-{key}")] = r
            continue
        chunks = [
            client.submit(
                chunk_statistics, r, settings, first, min(first + chunk_samples, samples),
                retries=retries, pure=False, key=f"chunk-{first}-{key}",
            )
            for first in range(0, samples, chunk_samples)
        ]  # fmt: skip
        futures[client.submit(merge_chunks, r, settings, *chunks, retries=retries, pure=False, key=f"merge-{key}")] = r
    try:
        for future in as_completed(futures, timeout=timeout):
            recording = futures[future]
            try:
                row = future.result()
            except Exception as exc:  # a task's own error, after its retries
                summary.failed.append((str(recording.path), f"{type(exc).__name__}: {exc}"))
            else:
                store.write(row)
                summary.identified += 1
            if progress is not None:
                progress(summary.skipped + summary.identified + len(summary.failed), len(recordings))
    finally:  # an interrupted run leaves no work behind on a shared cluster
        client.cancel([f for f in futures if not f.done()])
    summary.seconds = time.perf_counter() - start
    return summary
