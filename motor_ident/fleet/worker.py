"""What one Dask task does: identify one recording and return its store row.

The task runs in a worker process: it loads the robot config once per process (cached with its
regressor and base parameters), reads the recording (`motor_ident.io.data.load_record`, or
`motor_ident.io.bags.read.read_bag` for bags), derives velocities and accelerations when missing,
and calls `motor_ident.core.estimation.identification.identify`. BLAS runs on one thread (Dask's
nanny sets ``OMP_NUM_THREADS=1`` etc. before a worker starts; threadpoolctl caps it again for
workers started without a nanny), so K workers use K cores.

A long recording may be split into chunks: `chunk_statistics` tasks reduce samples ``[start, stop)``
to the sufficient statistics every estimator uses (`RegressionStatistics`), and `merge_chunks`
adds them (`RegressionStatistics.merge`) and fits (`fit_statistics`): the same estimate as one
task on the whole recording, to rounding. Each chunk task reads the whole recording (NPZ arrays
are read whole) and derives velocities over all of it, so only the regressor, the expensive part
(about 10 us per sample and joint set on one core), is split. The standard deviations (the
sandwich covariance of `motor_ident.core.estimation.covariance`, residual correlation included)
need the residuals of the merged estimate: `merge_chunks` makes that second pass over the
recording itself.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

import motor_ident
from motor_ident.core.estimation.covariance import with_residual_covariance
from motor_ident.core.estimation.identification import (
    base_regressor_chunks,
    fit_statistics,
    identify,
    structural_base_parameters,
)
from motor_ident.core.estimation.least_squares import Fit, RegressionStatistics
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.model import check_positions_in_reach
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.core.threads import limit_blas_threads
from motor_ident.errors import DataError
from motor_ident.fleet.parameters import ParameterLabel, parameter_labels
from motor_ident.fleet.recordings import Recording, config_hash, recording_time, settings_hash
from motor_ident.io.bags.read import read_bag
from motor_ident.io.bags.series import BagTopics
from motor_ident.io.data import JointRecord, load_record
from motor_ident.io.robot_config import RobotConfig, find_config, load_robot_config

BLOCK_SAMPLES = 5000
"""Samples per regressor block inside a chunk (bounds the memory of a task)."""


@dataclass(frozen=True)
class IdentifySettings:
    """Settings of a fleet identification; their hash (with the config's) keys the store rows.

    Attributes:
        method: estimator of `identify` (``wls``, ``ols``, ``gls``, ``nominal``, ``sdp``, ``log_cholesky``).
        alpha: data weight of ``nominal``.
        joint_states_topic: bags: topic of the joint states (effort = joint torque).
    """

    method: str = "wls"
    alpha: float = 0.9
    joint_states_topic: str = "/joint_states"

    def as_dict(self) -> dict[str, Any]:
        """The settings as a JSON-serialisable dict."""
        return {"method": self.method, "alpha": self.alpha, "joint_states_topic": self.joint_states_topic}


@dataclass(frozen=True)
class RobotSetup:
    """A robot config with what every recording of it needs (built once per worker process)."""

    config: RobotConfig
    regressor: Regressor
    base: BaseParameters
    labels: tuple[ParameterLabel, ...]
    theta_nominal: np.ndarray


@lru_cache(maxsize=16)
def robot_setup(config_name: str) -> RobotSetup:
    """Load a robot config (name or YAML path) with its regressor and structural base parameters."""
    config = load_robot_config(config_name)
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    return RobotSetup(
        config=config,
        regressor=regressor,
        base=base,
        labels=tuple(parameter_labels(base, regressor.robot)),
        theta_nominal=config.nominal_parameters(regressor),
    )


@lru_cache(maxsize=16)
def robot_config_hash(config_name: str) -> str:
    """Hash of a robot config's YAML and URDF (`motor_ident.fleet.recordings.config_hash`)."""
    config = load_robot_config(config_name)
    return config_hash(config.source or find_config(config_name), config.urdf)


def row_key(recording: Recording, settings: IdentifySettings) -> str:
    """Store key of a recording identified with ``settings``: content hash + settings and config hash."""
    settings_and_config = settings.as_dict() | {"config": robot_config_hash(recording.config)}
    return f"{recording.content_hash[:24]}-{settings_hash(settings_and_config)}"


def _read(recording: Recording, setup: RobotSetup, settings: IdentifySettings) -> tuple[JointRecord, str]:
    joints = setup.config.joints
    if recording.is_bag:
        topics = BagTopics(joint_states=settings.joint_states_topic, motor_states="", wrench="", commands="")
        bag = read_bag(recording.path, joints=joints, topics=topics)
        return bag.joint_record(joints), f"bag {settings.joint_states_topic} effort"
    return load_record(recording.path).select(joints), "record tau"


def _load(recording: Recording, settings: IdentifySettings) -> tuple[RobotSetup, JointRecord, str]:
    """The robot's setup, the record with velocities and accelerations, and the torque source."""
    limit_blas_threads()  # a worker process: one BLAS thread, as every motor_ident process
    setup = robot_setup(recording.config)
    record, torque_source = _read(recording, setup, settings)
    check_positions_in_reach(setup.regressor.robot, record.q)  # degrees or encoder counts fail the recording
    return setup, record.with_derivatives(), torque_source


def identify_recording(recording: Recording, settings: IdentifySettings) -> dict[str, Any]:
    """Identify one recording; return its store row (flat: names -> numbers or strings).

    Raises:
        DataError, ConfigError, EstimationError: as `identify`, `load_record` and `read_bag`.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    setup, record, torque_source = _load(recording, settings)
    assert record.qd is not None and record.qdd is not None
    result = identify(
        setup.regressor,
        record.q,
        record.qd,
        record.qdd,
        record.tau,
        method=settings.method,
        theta_nominal=setup.theta_nominal,
        alpha=settings.alpha,
        base=setup.base,
    )
    timing = (time.perf_counter() - wall, time.process_time() - cpu)
    return _row(recording, settings, setup, record, torque_source, result.fit, timing)


@dataclass(frozen=True, eq=False)
class ChunkStatistics:
    """Sufficient statistics of samples ``[start, stop)`` of a recording, and the task's wall and CPU time [s]."""

    statistics: RegressionStatistics
    start: int
    stop: int
    seconds: float
    cpu_seconds: float


def chunk_statistics(recording: Recording, settings: IdentifySettings, start: int, stop: int) -> ChunkStatistics:
    """Regression statistics of samples ``[start, stop)`` of a recording (a task of a chunked recording).

    Velocities and accelerations are derived over the whole recording first, so the merged chunks
    equal the whole recording exactly (up to rounding) whatever the chunk boundaries.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    setup, record, _ = _load(recording, settings)
    assert record.qd is not None and record.qdd is not None
    statistics = RegressionStatistics(setup.regressor.robot.n, setup.base.n_base, cross=settings.method == "gls")
    for first in range(start, stop, BLOCK_SAMPLES):
        last = min(first + BLOCK_SAMPLES, stop)
        rows = setup.regressor.rows(record.q[first:last], record.qd[first:last], record.qdd[first:last])
        statistics.add(setup.base.base_regressor(rows), record.tau[first:last])
    return ChunkStatistics(statistics, start, stop, time.perf_counter() - wall, time.process_time() - cpu)


def merge_chunks(recording: Recording, settings: IdentifySettings, *chunks: ChunkStatistics) -> dict[str, Any]:
    """The store row of a recording from the statistics of its chunks (merged exactly, then fitted).

    Raises:
        DataError: the chunks do not cover the recording once, in order.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    setup, record, torque_source = _load(recording, settings)
    bounds = [(c.start, c.stop) for c in sorted(chunks, key=lambda c: c.start)]
    edges = [0] + [b for _, b in bounds]
    if [a for a, _ in bounds] != edges[:-1] or edges[-1] != record.t.size:
        raise DataError(f"{recording.path}: chunks {bounds} do not cover its {record.t.size} samples")
    merged = RegressionStatistics(setup.regressor.robot.n, setup.base.n_base)
    for chunk in chunks:
        merged.merge(chunk.statistics)
    result = fit_statistics(
        setup.regressor,
        setup.base,
        merged,
        method=settings.method,
        theta_nominal=setup.theta_nominal,
        alpha=settings.alpha,
    )
    assert record.qd is not None and record.qdd is not None
    samples = base_regressor_chunks(
        setup.regressor, setup.base, record.q, record.qd, record.qdd, record.tau, BLOCK_SAMPLES
    )
    fit = with_residual_covariance(result.fit, merged, samples, samples=record.t.size, alpha=settings.alpha)
    timing = (
        time.perf_counter() - wall + sum(c.seconds for c in chunks),
        time.process_time() - cpu + sum(c.cpu_seconds for c in chunks),
    )
    return _row(recording, settings, setup, record, torque_source, fit, timing)


def _row(
    recording: Recording,
    settings: IdentifySettings,
    setup: RobotSetup,
    record: JointRecord,
    torque_source: str,
    fit: Fit,
    timing: tuple[float, float],
) -> dict[str, Any]:
    """The store row of a fit (columns in `motor_ident.fleet.store`)."""
    start = recording_time(recording.path, float(record.t[0]))
    row: dict[str, Any] = {
        "key": row_key(recording, settings),
        "robot": recording.robot,
        "recording": str(recording.path),
        "time": start,
        "date": dt.datetime.fromtimestamp(start, dt.UTC).date().isoformat(),
        "duration_s": float(record.t[-1] - record.t[0]),
        "n_samples": int(record.t.size),
        "config": setup.config.name,
        "config_hash": robot_config_hash(recording.config),
        "content_hash": recording.content_hash,
        "settings_hash": settings_hash(settings.as_dict()),
        "method": fit.method,
        "torque_source": torque_source,
        "motor_ident_version": motor_ident.__version__,
        "identified_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "condition_number": float(fit.condition_number),
        "task_seconds": timing[0],
        "task_cpu_seconds": timing[1],
        "parameter_labels": json.dumps([label.__dict__ for label in setup.labels]),
    }
    for j, joint in enumerate(setup.config.joints):
        row[f"r2.{joint}"] = float(fit.r2[j])
        row[f"nrmse.{joint}"] = float(fit.nrmse[j])
    for label, value, std in zip(setup.labels, fit.theta, fit.std):
        row[f"p.{label.name}"] = float(value)
        row[f"std.{label.name}"] = float(std)
    return row
