"""``motor-ident bench``: the online identifier, its cost per 1 kHz sample and its physical-consistency check."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from motor_ident.commands.bench import _per_sample_us


def _valkyrie_record(seconds: float) -> tuple[Any, Any, np.ndarray, Any, np.ndarray]:
    """valkyrie_arm's regressor, structural base, nominal theta, and a 1 kHz excitation record
    of ``seconds`` (0.1 N m noise) with its exact velocities."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    record, _ = excitation_record(regressor, theta, duration=seconds, rate_hz=1000.0, noise_std=0.1, seed=2)
    assert record.qd is not None  # excitation_record gives exact velocities
    return regressor, base, theta, record, record.qd


def _feed(make: Callable[[], Any], record: Any, qd: np.ndarray) -> Any:
    """Every sample of ``record`` into a new online identifier ``make()``; returns it."""
    ident = make()
    for k in range(record.t.size):
        ident.add_sample(record.t[k], record.q[k], qd[k], record.tau[k])
    return ident


def bench_consistency(repeats: int = 30) -> dict[str, Any]:
    """Cost of the gate's physical-consistency check on valkyrie_arm (4 links, 34 base parameters).

    ``sdp_ms``: an estimate from 5 s of noisy data checked against a 30 % heavier nominal model,
    so the O(b) test fails and the SDP decides (what the demo's identifier does at every refit);
    ``fast_us``: the true parameters, which pass the O(b) eigenvalue test.
    """
    from motor_ident.core.estimation.consistency import ConsistencyChecker
    from motor_ident.core.estimation.constraints import physical_constraints
    from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier

    regressor, base, theta, record, qd = _valkyrie_record(5.0)
    ident = _feed(
        partial(OnlineIdentifier, regressor, base, 1.3 * theta, IdentifierConfig(refit_period=1.0)), record, qd
    )
    fit = ident.fit
    if fit is None:
        raise RuntimeError("bench: the identifier produced no estimate")
    ident.check_consistency(fit)  # compiles the SDP
    sdp = [ident.check_consistency(fit).seconds for _ in range(repeats)]
    checker = ConsistencyChecker(physical_constraints(regressor), base, theta)
    fast = [checker.check(base.to_base(theta)).seconds for _ in range(repeats * 10)]
    return {
        "sdp_ms": 1e3 * float(np.median(sdp)),
        "sdp_p95_ms": 1e3 * float(np.percentile(sdp, 95)),
        "fast_us": 1e6 * float(np.median(fast)),
    }


def bench_online(seconds: float = 5.0) -> list[dict[str, Any]]:
    """The online identifier's cost per 1 kHz sample, valkyrie_arm, default settings but the
    consistency check (its SDP is `bench_consistency`), for each ``decimation``."""
    from motor_ident.core.estimation.gate import GateConfig
    from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier

    regressor, base, theta, record, qd = _valkyrie_record(seconds)
    rows = []
    for decimation in ("average", "first"):
        config = IdentifierConfig(decimation=decimation, gate=GateConfig(require_consistent=False))
        make = partial(OnlineIdentifier, regressor, base, 1.3 * theta, config)
        rows.append({"decimation": decimation, "us_per_sample": _per_sample_us(record.t.size, _feed, make, record, qd)})
    return rows
