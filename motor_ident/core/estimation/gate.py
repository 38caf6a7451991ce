"""The gate: when the identified model may replace the nominal one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.consistency import ConsistencyResult
from motor_ident.core.estimation.sliding_window import WindowFit
from motor_ident.errors import ConfigError, EstimationError
from motor_ident.schema import check, setting

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class GateConfig:
    """When the identified model may be used: the conditions every gate checks (buffer, conditioning,
    physical consistency) and the settings of the R^2 gate (Kolathaya et al. 2016; the identifier's
    ``gate_criterion: r2``, and the floating-base identifier's gate).

    Attributes:
        r2_threshold: open when every joint's R^2 reaches it (Kolathaya et al. 2016: 0.95).
        r2_hysteresis: close only when some joint's R^2 falls below threshold - hysteresis.
        max_condition_number: refuse a window whose regressor is worse conditioned.
        require_full_buffer: Kolathaya et al. 2016 also required a full buffer.
        r2_definition: ``uncentred`` (Kolathaya et al. 2016, eq. 104), ``centred`` (both in-sample, on
            the window the parameters were fitted to) or ``predicted``: centred, of each sample's
            torque predicted by the latest fit made without it (held out), over the last window of
            samples; it reaches the threshold only once the fits predict new data.
        require_consistent: open only for physically consistent estimates (checked when every
            other condition holds; ~20 ms per refit on the 4-link valkyrie_arm when the SDP runs).
        consistency_confidence: accept an estimate whose projection onto valid bodies costs a
            chi-square below this quantile (r degrees of freedom), in (0, 1).
    """

    r2_threshold: float = setting(
        0.95, "R2 gate: open when every joint's R2 reaches this", low=0.0, high=1.0, open=(True, False), live=True
    )
    r2_hysteresis: float = setting(
        0.02, "R2 gate: close when some joint's R2 falls below threshold minus this", low=0.0, high=1.0, live=True
    )
    max_condition_number: float = setting(
        1e4, "refuse windows whose scaled regressor is worse conditioned", low=1.0, open=(True, False), live=True
    )
    require_full_buffer: bool = setting(True, "use the estimate only once the buffer is full", live=True)
    r2_definition: str = setting(
        "uncentred",
        "uncentred (Kolathaya et al. 2016, eq. 104) or centred, in-sample; or predicted (held out: before each "
        "sample entered the window)",
        choices=("uncentred", "centred", "predicted"),
        live=True,
    )
    require_consistent: bool = setting(
        True,
        "open only for physically consistent estimates (improvement gate: judge the nearest consistent parameters)",
        live=True,
    )
    consistency_confidence: float = setting(
        0.99,
        "R2 gate: chi-square quantile the projection onto valid bodies may cost",
        low=0.0,
        high=1.0,
        open=(True, True),
        live=True,
    )

    def __post_init__(self) -> None:
        check(self)
        if not self.r2_hysteresis < self.r2_threshold:
            raise ConfigError(f"r2_hysteresis = {self.r2_hysteresis!r}: expected 0 <= value < r2_threshold")


class ModelGate:
    """Hysteresis gate over window fits. `reason` says why it is closed; `consistency` holds the
    latest physical-validity verdict (None when it was not checked)."""

    def __init__(self, config: GateConfig) -> None:
        self.config = config
        self.open = False
        self.reason = "no estimate yet"
        self.forced_nominal = False
        self.consistency: ConsistencyResult | None = None

    def reset(self) -> None:
        """Close the gate (buffers were reset)."""
        self.open = False
        self.reason = "buffer reset"
        self.consistency = None

    def update(
        self,
        fit: WindowFit | None,
        window_full: bool,
        check: Callable[[WindowFit], ConsistencyResult] | None = None,
    ) -> bool:
        """Feed the latest window fit (None when there is none); returns whether the gate is open.

        ``check`` tells physical validity; it is called only when every other condition holds
        (it may cost an SDP solve) and an error it raises closes the gate with its message.
        """
        cfg = self.config
        self.consistency = None
        if self.forced_nominal:  # the user's override: the evidence so far still counts afterwards
            self.open, self.reason = False, "nominal model forced by the user (~/use_nominal)"
            return False
        if fit is None:
            self.open, self.reason = False, "no estimate yet"
        elif cfg.require_full_buffer and not window_full:
            self.open, self.reason = False, f"buffer filling ({fit.count} samples)"
        elif not np.all(np.isfinite(fit.theta)):
            self.open, self.reason = False, "estimate is not finite"
        elif fit.condition_number > cfg.max_condition_number:
            self.open, self.reason = (
                False,
                f"condition number {fit.condition_number:.3g} > {cfg.max_condition_number:.3g}",
            )
        else:
            self.open, self.reason = self._judge(fit, check)
            return self.open
        self._held_back()
        return self.open

    def _held_back(self) -> None:
        """A condition before the criterion failed (buffer, finite estimate, conditioning)."""

    def _judge(self, fit: WindowFit, check: Callable[[WindowFit], ConsistencyResult] | None) -> tuple[bool, str]:
        """The criterion (Kolathaya et al. 2016): every joint's R^2 over the threshold, then physical validity."""
        cfg = self.config
        r2 = fit.r2_of(cfg.r2_definition)
        worst = float(np.min(r2))  # NaN (no held-out prediction yet) keeps the gate closed
        threshold = cfg.r2_threshold - (cfg.r2_hysteresis if self.open else 0.0)
        if not worst >= threshold:
            joint = int(np.nanargmin(r2)) if np.any(np.isfinite(r2)) else 0
            return False, f"R2 {worst:.3f} < {threshold:.3f} (joint {joint})"
        return self._physical(fit, check)

    def _physical(self, fit: WindowFit, check: Callable[[WindowFit], ConsistencyResult] | None) -> tuple[bool, str]:
        if check is None:
            return True, "identified model active"
        try:
            self.consistency = check(fit)
        except EstimationError as exc:
            return False, f"consistency check failed: {exc}"
        if not self.consistency.consistent:
            return False, f"physically inconsistent: {self.consistency.reason}"
        return True, f"identified model active ({self.consistency.reason})"
