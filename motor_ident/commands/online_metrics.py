"""What the online identifier's switch bought on a recording: torque prediction after the gate opened."""

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
