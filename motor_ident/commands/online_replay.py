"""The online identifier replayed over a recording (``identify --online``), and what its switch bought:
torque prediction after the gate opened."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def after_switch_errors(
    core: Any,
    segments: Sequence[tuple[int, FloatArray]],
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau: FloatArray,
    t: FloatArray,
) -> dict[str, Any]:
    """RMS torque error per joint, from the first switch to the end, of the models the identifier
    used (identified while its gate was open, nominal while shut) and of the nominal model.

    Args:
        core: the `OnlineIdentifier` that replayed the record (its regressor, base map and nominal).
        segments: (first sample, base parameters in use from it on), from the first switch, in order.
        q, qd, qdd, tau: the record (N, n) [rad, rad/s, rad/s^2, N m]; t: its stamps (N,) [s].

    Returns:
        ``from_s`` (the switch's stamp), ``seconds``, ``samples``, ``rmse_active`` and
        ``rmse_nominal`` per joint [N m]; empty when there is no segment.
    """
    if not segments:
        return {}
    regressor, base = core.regressor, core.base
    start = segments[0][0]
    sse_active = np.zeros(tau.shape[1])
    sse_nominal = np.zeros(tau.shape[1])
    ends = [k for k, _ in segments[1:]] + [t.size]
    for (first, theta), end in zip(segments, ends):
        for a in range(first, end, 2000):  # chunks bound the regressor's memory
            b = min(a + 2000, end)
            Y = base.base_regressor(regressor.rows(q[a:b], qd[a:b], qdd[a:b]))
            sse_active += np.sum((tau[a:b] - Y @ theta) ** 2, axis=0)
            sse_nominal += np.sum((tau[a:b] - Y @ core.theta_nominal) ** 2, axis=0)
    samples = t.size - start
    return {
        "from_s": float(t[start]),
        "seconds": float(t[-1] - t[start]),
        "samples": int(samples),
        "rmse_active": np.sqrt(sse_active / max(samples, 1)),
        "rmse_nominal": np.sqrt(sse_nominal / max(samples, 1)),
    }


def online_replay(
    scenario: str,
    joints: tuple[str, ...],
    t: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    tau: np.ndarray,
    *,
    config: Any = None,
    qdd: np.ndarray | None = None,
) -> dict[str, Any]:
    """Run the identifier node's estimator and gate (settings of ``scenario``) over a record.

    The same `OnlineIdentifier` the node wraps, built from the scenario's identifier settings
    (the identifier's defaults when ``scenario`` is empty) by `build_identifier`, for the robot
    ``config`` (a `RobotConfig`; else the robot the settings name), fed sample by sample: what
    the node would have done on this recording. No simulated plant is built.

    The sample counts come from the settings' times and the record's own rate, measured from its
    stamps as the node measures its stream's.

    Returns:
        ``gate`` [(t, open)] at every change, ``r2_t`` (M,) and ``r2`` (M, n) at every refit (the
        gate's R^2 definition), ``gate_opened_at_s``, the final ``reason``, ``fit``, ``counts``
        (`WindowCounts`, None for a record too short to measure its rate), ``too_short`` (a
        plain sentence when the record cannot fill the window, else '') and, given ``qdd``,
        ``after_switch``: the torque errors of the models in use and of the nominal one from the
        first opening on (`after_switch_errors`; empty when the gate never opened).

    Raises:
        ConfigError: the scenario is invalid, or its identifier's robot has other joints than the record.
    """
    from motor_ident.errors import ConfigError
    from motor_ident.scenario.build import build_identifier
    from motor_ident.scenario.loader import load_scenario
    from motor_ident.scenario.nodes import IdentifierSettings

    settings = load_scenario(scenario).nodes["identifier"] if scenario else IdentifierSettings()
    core = build_identifier(settings, config)
    if tuple(core.regressor.robot.joint_names) != tuple(joints):
        raise ConfigError(
            f"--online {scenario}: its robot has joints {list(core.regressor.robot.joint_names)}, "
            f"the data {list(joints)}"
        )
    definition = core.config.gate.r2_definition
    gate: list[tuple[float, bool]] = [(float(t[0]), False)]
    r2_t: list[float] = []
    r2: list[np.ndarray] = []
    last = None
    segments: list[tuple[int, np.ndarray]] = []  # models in use from the first opening on
    for k in range(t.size):
        core.add_sample(t[k], q[k], qd[k], tau[k])
        if core.fit is not None and core.fit is not last:
            last = core.fit
            r2_t.append(float(t[k]))
            r2.append(core.fit.r2_of(definition))
        if core.gate_open != gate[-1][1]:
            gate.append((float(t[k]), core.gate_open))
        if (segments or core.gate_open) and (not segments or core.active_theta is not segments[-1][1]):
            segments.append((k, core.active_theta))
    counts, span = core.counts, float(t[-1] - t[0]) if t.size else 0.0
    too_short = ""
    if counts is None:
        too_short = f"the record has {t.size} samples: the online identifier needs more to measure its rate"
    elif not core.window.full:
        need = counts.window * counts.decimation / counts.input_rate_hz
        too_short = (
            f"the record is too short for the online identifier's window: it spans {span:.3g} s, the window needs "
            f"{need:.3g} s of it ({counts.describe()}); lower window_duration (identifier: {{ros__parameters: "
            f"{{window_duration: ...}}}} in the --online scenario) or record longer"
        )
    return {
        "gate": gate,
        "r2_t": np.array(r2_t),
        "r2": np.array(r2).reshape(len(r2_t), len(joints)),
        "gate_opened_at_s": next((tg for tg, is_open in gate if is_open), None),
        "reason": core.gate.reason,
        "fit": core.fit,
        "counts": counts,
        "too_short": too_short,
        "gate_criterion": core.config.improvement.gate_criterion,
        "after_switch": {} if qdd is None else after_switch_errors(core, segments, q, qd, qdd, tau, t),
    }
