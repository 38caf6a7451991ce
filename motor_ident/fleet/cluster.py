"""Identifying a fleet's recordings on Dask distributed, into the parameter store.

One task per recording (`motor_ident.fleet.worker.identify_recording`), or per chunk of a long
NPZ recording with a final task merging the chunks' sufficient statistics, submitted to a
`distributed.LocalCluster` on this machine (worker processes with one thread each, bound to
127.0.0.1, no dashboard) or to an existing scheduler (``tcp://host:8786``): the same code on a
laptop or on a cluster started by Dask's deployment tools (dask-jobqueue for SLURM, dask-kubernetes,
...). Workers must see the recordings' paths (a shared file system); rows come back to this
process, which alone writes the store. A task that raises is retried (``retries``), a task whose
worker dies is rescheduled by Dask on another worker (``distributed.scheduler.allowed-failures``).

Recordings whose key (content hash + settings and config hash) is already in the store under
their robot are not submitted, so an interrupted run resumes where it stopped. A recording that
cannot even be planned (a truncated NPZ whose length cannot be read) is that recording's failure;
the others are identified. A lost scheduler or a store that can no longer be written stops the
run once, saying how many recordings were not done: the same command resumes.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from distributed import Client, Future, LocalCluster, as_completed
from distributed.comm.core import CommClosedError

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
        copies: recordings of this run whose row another one of them makes (the same content under
            the same robot, with the same settings): not identified again, not counted as identified.
        failed: (recording path, error) of recordings that failed after their retries.
        workers: Dask workers the run used.
        seconds: wall time of the identification (from the first submission to the last row).
        stopped: why the run stopped before every recording was done (the scheduler was lost, the
            store could not be written); empty when it ran to the end.
        not_done: recordings neither identified nor failed when the run stopped.
    """

    identified: int = 0
    skipped: int = 0
    copies: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    workers: int = 0
    seconds: float = 0.0
    stopped: str = ""
    not_done: int = 0


def local_cluster(workers: int) -> LocalCluster:
    """A cluster on this machine: ``workers`` processes with one thread each, on 127.0.0.1 only."""
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        # no dashboard; the scheduler's HTTP endpoints on a free port (not 8787, so no warning when it is taken)
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.CRITICAL,  # workers' shutdown races are logged as errors; task errors reach the client
        env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    )


def quiet_dask_logs() -> None:
    """Silence Dask's own logs in this process below CRITICAL (its config gives some loggers their own level)."""
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name.startswith("distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def pending(recordings: Sequence[Recording], settings: IdentifySettings, store: ParameterStore) -> list[Recording]:
    """The recordings whose row (content, settings and config hash, under their robot) is not in ``store`` yet."""
    stored = store.rows()
    return [r for r in recordings if (r.robot, row_key(r, settings)) not in stored]


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
    waiting = pending(recordings, settings, store)
    first: dict[tuple[str, str], Recording] = {}  # one recording per row: the first of its copies
    for r in waiting:
        first.setdefault((r.robot, row_key(r, settings)), r)
    todo = list(first.values())
    summary = RunSummary(
        skipped=len(recordings) - len(waiting),
        copies=len(waiting) - len(todo),
        workers=len(client.scheduler_info()["workers"]),
    )
    if progress is not None:
        progress(summary.skipped + summary.copies, len(recordings))
    if not todo:
        return summary
    start = time.perf_counter()
    futures: dict[Future, Recording] = {}
    run = uuid.uuid4().hex[:8]  # in every key: a rerun never reuses an interrupted run's cancelled keys
    for r in todo:
        try:
            samples = sample_count(r) if chunk_samples else None
        except Exception as exc:  # a recording that cannot be planned is its own failure, not the run's
            summary.failed.append(_failure(r, exc))
            continue
        futures[_submit(client, task, r, settings, samples, chunk_samples, retries, run)] = r
    done = 0
    try:
        for future in as_completed(futures, timeout=timeout):
            recording = futures[future]
            try:
                row = future.result()
            except (CancelledError, CommClosedError):  # the client lost its scheduler: futures cancelled or cut
                summary.stopped = f"lost the Dask scheduler {client.scheduler.address}"
                break
            except Exception as exc:  # a task's own error, after its retries
                summary.failed.append(_failure(recording, exc))
            else:
                try:
                    store.write(row)
                except OSError as exc:
                    summary.stopped = f"cannot write to the parameter store {store.root}: {exc}"
                    break
                summary.identified += 1
            done += 1
            if progress is not None:
                progress(summary.skipped + summary.copies + summary.identified + len(summary.failed), len(recordings))
    finally:  # an interrupted run leaves no work behind on a shared cluster
        client.cancel([f for f in futures if not f.done()])
    summary.not_done = len(futures) - done
    summary.seconds = time.perf_counter() - start
    return summary


def _failure(recording: Recording, exc: Exception) -> tuple[str, str]:
    """(path, error) of a failed recording; the error without the path its message may start with."""
    return str(recording.path), f"{type(exc).__name__}: {str(exc).removeprefix(f'{recording.path}: ')}"


def _submit(
    client: Client,
    task: Task,
    recording: Recording,
    settings: IdentifySettings,
    samples: int | None,
    chunk_samples: int,
    retries: int,
    run: str,
) -> Future:
    """The future of a recording's row: one task, or chunk tasks and the task merging them.

    Task keys name the robot too (the same file under two robots is two rows) and the ``run``: Dask
    cancels asynchronously, so a rerun in the same client (after Ctrl-C) that reused an interrupted
    run's keys could see its new tasks cancelled with the old ones.
    """
    key = f"{recording.robot}-{row_key(recording, settings)}-{run}"
    if samples is None or samples <= chunk_samples:
        return client.submit(task, recording, settings, retries=retries, pure=False, key=f"identify-{key}")
    chunks = [
        client.submit(
            chunk_statistics, recording, settings, first, min(first + chunk_samples, samples),
            retries=retries, pure=False, key=f"chunk-{first}-{key}",
        )
        for first in range(0, samples, chunk_samples)
    ]  # fmt: skip
    return client.submit(merge_chunks, recording, settings, *chunks, retries=retries, pure=False, key=f"merge-{key}")
