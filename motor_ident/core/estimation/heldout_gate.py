"""The improvement gate: use the identified model once it predicts unseen torques clearly better.

The published gate (`motor_ident.core.estimation.gate.ModelGate`, Kolathaya et al. 2016) asks
whether the model is exact: every joint's R^2 over 0.95 on the window, and a chi-square test of
physical consistency whose error term is white sensor noise. On a real arm the model is never
exact (friction of another law, drive gains a few percent off, cable forces), the residuals are
correlated, and that gate stays shut although the identified model predicts far better than the
model the robot runs. `ImprovementGate` asks the question a controller needs answered instead:

- **Evidence that holds under model error.** Every kept sample's torque is predicted by the
  latest candidate model *before* the sample enters the window (held out, as in prequential
  evaluation), and by the nominal model on the same sample (`HeldOutEvidence`). The candidate is
  the one the gate would switch to: the window fit, or with ``require_consistent`` its nearest
  physically consistent parameters (projected in the metric of the window's information), so
  physical validity is judged by what the valid parameters *predict*, not by a chi-square test.
  Their cost is judged as well, in torque: on the window, the consistent parameters' RMS error may
  exceed the free fit's by at most ``max_consistency_cost`` of each joint's torque scale. Model
  error costs little there (the free fit's unphysical directions explain little torque); a flipped
  torque sign or swapped joints cost a large part of the torque.
- **Switch when clearly better, with a floor.** Over the last ``evidence_duration`` of samples,
  the RMS over joints of each model's held-out error (each joint's error relative to its torque
  scale) must fall to ``improvement_ratio`` of the nominal model's, and every joint's relative
  error must be at most ``max_relative_error``: a model better than a bad nominal one is not
  enough. Both must hold at every refit for ``stable_duration``; once open, the limits loosen by
  ``error_hysteresis`` so the gate does not chatter.
- **A model that has settled.** After a change (a payload, a tool) the fits move for a window's
  length; a half-adapted model may already beat the nominal one. The candidate's predictions on
  the window may differ from those of the candidate one evidence span earlier by at most
  ``max_drift`` of each joint's torque scale.
- **Joints whose torque barely varies are judged by their error.** A joint's torque scale is its
  RMS torque over the evidence (errors relative to it are the relative residual errors of
  ``motor-ident validate``), but at least ``torque_floor_fraction`` of the largest joint's: a
  wrist logging an effort of about zero is judged by an error small against the arm's torques,
  and a joint holding a steady gravity torque by its error against that torque, where an R^2
  (error against the torque's variation) would be any number.

Rejected: an R^2 bar on held-out data (still asks for an exact model: a real arm's joint at 30 %
relative error never reaches 0.95); a chi-square consistency test with the residuals' RMS as its
noise (residuals of model error are correlated over many samples, so the test's information is
overstated by that correlation length and valid estimates are refused).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.consistency import ConsistencyResult
from motor_ident.core.estimation.gate import GateConfig, ModelGate
from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.estimation.sliding_window import WindowFit
from motor_ident.schema import check, setting

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ImprovementGateConfig:
    """Which gate decides, and the settings of the improvement gate (`ImprovementGate`).

    Attributes:
        gate_criterion: ``improvement`` (held-out prediction against the nominal model's) or
            ``r2`` (Kolathaya et al. 2016: every joint's R^2 over ``r2_threshold``, the chi-square
            consistency test of `GateConfig`).
        improvement_ratio: open when the identified model's held-out error is at most this
            fraction of the nominal model's (RMS over joints of errors relative to their torque scales).
        max_relative_error: and every joint's held-out RMS error at most this fraction of its torque scale.
        torque_floor_fraction: a joint's torque scale is its RMS torque over the evidence, at
            least this fraction of the largest joint's.
        evidence_duration: the held-out predictions judged: those of the last this many seconds [s].
        stable_duration: the gate opens once every refit passed for this long [s] (at least one refit).
        error_hysteresis: once open, both limits are this fraction looser (the ratio at most 1).
        rest_velocity: a joint slower than this [rad/s] is at rest: its held-out errors are not
            judged (dry friction at rest is anywhere within its static limits, for every model).
        max_drift: every joint's RMS change, over the window, of the candidate's predictions since the
            candidate one evidence span earlier, at most this fraction of its torque scale.
        max_consistency_cost: with ``require_consistent``, the nearest consistent parameters' RMS
            error on the window may exceed the free fit's by at most this fraction of each joint's
            torque scale.
    """

    gate_criterion: str = setting(
        "improvement",
        "improvement (held-out prediction better than the nominal model's) or r2 (Kolathaya et al. 2016: R2 "
        "threshold and chi-square consistency)",
        choices=("improvement", "r2"),
    )
    improvement_ratio: float = setting(
        0.8,
        "improvement gate: open when the held-out error is at most this fraction of the nominal model's",
        low=0.0,
        high=1.0,
        open=(True, False),
        live=True,
    )
    max_relative_error: float = setting(
        0.5,
        "improvement gate: and every joint's held-out RMS error at most this fraction of its torque scale",
        low=0.0,
        open=(True, False),
        live=True,
    )
    torque_floor_fraction: float = setting(
        0.05,
        "improvement gate: a joint's torque scale is its RMS torque, at least this fraction of the largest joint's",
        low=0.0,
        high=1.0,
        live=True,
    )
    evidence_duration: float = setting(
        1.0,
        "improvement gate: judge the held-out predictions of this last span",
        unit="s",
        low=0.0,
        open=(True, False),
        live=True,
    )
    stable_duration: float = setting(
        0.4,
        "improvement gate: it opens once every refit passed for this long (at least one refit)",
        unit="s",
        low=0.0,
        high=3600.0,
        live=True,
    )
    error_hysteresis: float = setting(
        0.2, "improvement gate: once open, both limits are this fraction looser", low=0.0, high=10.0, live=True
    )
    rest_velocity: float = setting(
        0.02,
        "improvement gate: a joint slower than this is at rest and its held-out errors are not judged",
        unit="rad/s",
        low=0.0,
        live=True,
    )
    max_drift: float = setting(
        0.1,
        "improvement gate: the model's predictions may have moved by this fraction of a joint's torque scale over "
        "the evidence span",
        low=0.0,
        open=(True, False),
        live=True,
    )
    max_consistency_cost: float = setting(
        0.1,
        "improvement gate: the nearest consistent parameters may fit the window worse than the free fit by this "
        "fraction of a joint's torque scale",
        low=0.0,
        open=(True, False),
        live=True,
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class EvidenceSummary:
    """Held-out errors over the newest samples of `HeldOutEvidence` (per joint arrays, shape (n,)).

    Attributes:
        samples: samples summarised.
        count: samples per joint (a joint's equation left out near rest is not counted).
        torque_rms: RMS of the measured torque [N m].
        rmse_identified: RMS error of the candidate model's predictions [N m].
        rmse_nominal: RMS error of the nominal model's predictions on the same samples [N m].
    """

    samples: int
    count: FloatArray
    torque_rms: FloatArray
    rmse_identified: FloatArray
    rmse_nominal: FloatArray

    def torque_scale(self, floor_fraction: float) -> FloatArray:
        """`torque_scale` of these samples [N m]."""
        return torque_scale(self.torque_rms, floor_fraction)


def window_scale(stats: RegressionStatistics, floor_fraction: float) -> FloatArray:
    """`torque_scale` of the samples in ``stats`` (n,) [N m]."""
    return torque_scale(np.sqrt(np.maximum(stats.yy, 0.0) / np.maximum(stats.counts, 1e-300)), floor_fraction)


def prediction_change(stats: RegressionStatistics, delta: FloatArray) -> FloatArray:
    """Per joint, the RMS over the samples in ``stats`` of ``Y_j delta`` (n,) [N m]: how much a
    parameter change ``delta`` (p,) moves the predictions."""
    squares: FloatArray = np.einsum("i,jik,k->j", delta, stats.A, delta)
    change: FloatArray = np.sqrt(np.maximum(squares, 0.0) / np.maximum(stats.counts, 1e-300))
    return change


def torque_scale(torque_rms: FloatArray, floor_fraction: float) -> FloatArray:
    """Per joint: the RMS torque (n,), at least ``floor_fraction`` of the largest [N m] (1e-12 when
    every torque is zero; NaN entries count as zero)."""
    rms = torque_rms[np.isfinite(torque_rms)]
    floor = floor_fraction * float(rms.max()) if rms.size else 0.0
    return np.maximum(np.nan_to_num(torque_rms), max(floor, 1e-12))


class HeldOutEvidence:
    """Ring of the last ``capacity`` kept samples' torques with two predictions made before the
    sample entered the window: the candidate identified model's and the nominal model's."""

    def __init__(self, n: int, capacity: int) -> None:
        self._tau: FloatArray = np.full((capacity, n), np.nan)
        self._error_identified: FloatArray = np.full((capacity, n), np.nan)
        self._error_nominal: FloatArray = np.full((capacity, n), np.nan)
        self._k = 0
        self.filled = 0

    def reset(self) -> None:
        """Forget the predictions."""
        for array in (self._tau, self._error_identified, self._error_nominal):
            array[:] = np.nan
        self._k = self.filled = 0

    def add(
        self,
        tau: FloatArray,
        predicted_identified: FloatArray,
        predicted_nominal: FloatArray,
        mask: NDArray[np.bool_] | None = None,
    ) -> None:
        """One sample's torques and both predictions (n,) [N m]; joints outside ``mask`` are not counted."""
        keep = np.ones(tau.shape, dtype=bool) if mask is None else mask
        self._tau[self._k] = np.where(keep, tau, np.nan)
        self._error_identified[self._k] = np.where(keep, tau - predicted_identified, np.nan)
        self._error_nominal[self._k] = np.where(keep, tau - predicted_nominal, np.nan)
        self._k = (self._k + 1) % self._tau.shape[0]
        self.filled = min(self.filled + 1, self._tau.shape[0])

    def summary(self, samples: int) -> EvidenceSummary:
        """The newest ``samples`` (at most those held) summarised; NaN for a joint without any."""
        m = max(0, min(int(samples), self.filled))
        rows = (self._k - 1 - np.arange(m)) % self._tau.shape[0]
        tau, error_id, error_nom = self._tau[rows], self._error_identified[rows], self._error_nominal[rows]
        valid = np.isfinite(tau)
        count = valid.sum(axis=0).astype(float)

        def rms(x: FloatArray) -> FloatArray:
            with np.errstate(invalid="ignore", divide="ignore"):
                out: FloatArray = np.sqrt(np.sum(np.where(valid, x, 0.0) ** 2, axis=0) / count)
            return out

        return EvidenceSummary(
            samples=m,
            count=count,
            torque_rms=rms(tau),
            rmse_identified=rms(error_id),
            rmse_nominal=rms(error_nom),
        )


def judge_improvement(
    evidence: EvidenceSummary,
    config: ImprovementGateConfig,
    joint_names: Sequence[str],
    *,
    is_open: bool,
    what: str = "identified",
) -> tuple[bool, str]:
    """Whether the candidate model's held-out predictions pass the improvement gate, and why in one line.

    Args:
        evidence: the held-out errors.
        config: the limits.
        joint_names: names of the n joints, for the reason.
        is_open: the gate is open now (the limits are looser by ``error_hysteresis``).
        what: what the candidate is, for the reason (e.g. its nearest consistent parameters).
    """
    loosen = 1.0 + config.error_hysteresis if is_open else 1.0
    scale = evidence.torque_scale(config.torque_floor_fraction)
    ratio_id, ratio_nom = evidence.rmse_identified / scale, evidence.rmse_nominal / scale
    # a joint at rest for most of the span is not judged: a few moving samples are no evidence
    judged = evidence.count >= max(2.0, 0.25 * evidence.samples)
    if not np.any(judged):
        return (
            is_open,
            f"every joint at rest over the last {evidence.samples} samples: nothing to judge, the gate holds",
        )
    ratio_id, ratio_nom = np.where(judged, ratio_id, 0.0), np.where(judged, ratio_nom, 0.0)
    limit = config.max_relative_error * loosen
    j = int(np.argmax(ratio_id))
    if not ratio_id[j] <= limit:
        return False, (
            f"joint {joint_names[j]}: {what} model's held-out error {evidence.rmse_identified[j]:.3g} N m is "
            f"{ratio_id[j]:.2f} of its torque scale {scale[j]:.3g} N m > {limit:.2f} (nominal {ratio_nom[j]:.2f})"
        )
    overall_id = float(np.sqrt(np.sum(ratio_id**2) / np.sum(judged)))
    overall_nom = float(np.sqrt(np.sum(ratio_nom**2) / np.sum(judged)))
    ratio = overall_id / overall_nom if overall_nom > 0.0 else float("inf")
    ratio_limit = min(config.improvement_ratio * loosen, 1.0)
    summary = f"held-out error {overall_id:.3f} vs nominal {overall_nom:.3f} of the torque scales (ratio {ratio:.2f}"
    if not ratio <= ratio_limit:
        return False, f"{what} model not clearly better than nominal: {summary} > {ratio_limit:.2f})"
    return True, f"{summary}); worst joint {joint_names[j]} at {ratio_id[j]:.2f}"


class ImprovementGate(ModelGate):
    """`ModelGate`'s conditions (forced nominal, full buffer, finite estimate, conditioning), then
    `judge_improvement` on the held-out evidence instead of the R^2 bar and the chi-square test.

    Before each `update` the identifier sets `evidence` (the summary over the evidence span),
    `evidence_needed` (samples the span holds), `passes_needed` (refits in ``stable_duration``),
    `projection` (the candidate's nearest consistent parameters, None when not required;
    `ModelGate.consistency` after the update),
    `consistency_cost` (per joint, how much worse the projection fits the window than the
    free fit, in torque scales; None without a projection) and `drift` (per joint, how far the
    candidate's predictions moved over the evidence span, in torque scales; None before there
    is an earlier candidate). `remember` and `candidate_before` keep the candidates of that span.
    """

    def __init__(self, config: GateConfig, improvement: ImprovementGateConfig, joint_names: Sequence[str]) -> None:
        super().__init__(config)
        self.improvement = improvement
        self.joint_names = tuple(joint_names)
        self.evidence: EvidenceSummary | None = None
        self.evidence_needed = 1
        self.passes_needed = 1
        self.projection: ConsistencyResult | None = None
        self.projection_failure = ""
        self.consistency_cost: FloatArray | None = None
        self.drift: FloatArray | None = None
        self.streak = 0
        self._candidates: deque[tuple[int, FloatArray]] = deque()

    def remember(self, sample: int, candidate: FloatArray) -> None:
        """Keep the candidate made at kept sample ``sample`` (for `candidate_before`)."""
        self._candidates.append((sample, candidate))

    def candidate_before(self, sample: int) -> FloatArray | None:
        """The newest candidate made at or before kept sample ``sample``; older ones are forgotten."""
        while len(self._candidates) > 1 and self._candidates[1][0] <= sample:
            self._candidates.popleft()
        if self._candidates and self._candidates[0][0] <= sample:
            return self._candidates[0][1]
        return None

    def reset(self) -> None:
        """Close the gate and forget the streak of passing refits."""
        super().reset()
        self.streak = 0
        self._candidates.clear()

    def _held_back(self) -> None:
        self.streak = 0

    def _judge(self, fit: WindowFit, check: Callable[[WindowFit], ConsistencyResult] | None) -> tuple[bool, str]:
        self.consistency = self.projection
        projected = self.projection is not None and not np.array_equal(self.projection.theta_base, fit.theta)
        passed, reason = self._verdict(projected)
        if not passed:
            self.streak = 0
            return False, reason
        if not self.open:
            self.streak += 1
            if self.streak < self.passes_needed:
                return False, f"better at {self.streak} of {self.passes_needed} refits: {reason}"
        if self.projection is None:
            return True, f"identified model active: {reason}"
        which = "its nearest physically consistent parameters" if projected else "physically consistent"
        return True, f"identified model active ({which}): {reason}"

    def _violation(self, joint: str) -> str:
        """``; the free fit has <violated constraint>`` (one of ``joint``'s first), or '' when the
        projection names none."""
        if self.projection is None or self.projection.consistent:
            return ""
        parts = [part.strip() for part in self.projection.reason.split(";")[:-1]]
        own = [part for part in parts if part.startswith(f"{joint}.")]
        return f"; the free fit has {(own or parts)[0]}" if parts else ""

    def _verdict(self, projected: bool) -> tuple[bool, str]:
        if self.projection_failure:
            return False, f"no consistent parameters: {self.projection_failure}"
        cost, limit = self.consistency_cost, self.improvement.max_consistency_cost
        if projected and cost is not None and not float(np.max(cost)) <= limit:
            j = int(np.nanargmax(cost)) if np.any(np.isfinite(cost)) else 0
            joint = self.joint_names[j]
            return False, (
                f"joint {joint}: the nearest physically consistent parameters fit the window worse than the "
                f"free fit by {cost[j]:.2f} of its torque scale > {limit:.2f}{self._violation(joint)} (a sign, unit "
                "or joint order error, or a model that cannot explain the data)"
            )
        evidence, drift, limit = self.evidence, self.drift, self.improvement.max_drift
        if evidence is None or evidence.samples < self.evidence_needed or drift is None:
            have = 0 if evidence is None else evidence.samples
            return False, f"collecting held-out predictions ({have} of {self.evidence_needed} samples)"
        if self.open:
            limit *= 1.0 + self.improvement.error_hysteresis
        if not float(np.max(drift)) <= limit:
            j = int(np.nanargmax(drift)) if np.any(np.isfinite(drift)) else 0
            return False, (
                f"joint {self.joint_names[j]}: the identified model still moves: its predictions changed by "
                f"{drift[j]:.2f} of the torque scale over the last {self.evidence_needed} samples > {limit:.2f}"
            )
        what = "identified (nearest consistent)" if projected else "identified"
        return judge_improvement(evidence, self.improvement, self.joint_names, is_open=self.open, what=what)


def describe_gate(gate: GateConfig, improvement: ImprovementGateConfig) -> str:
    """One line on the gate these settings make, for logs."""
    consistent = ", physically consistent" if gate.require_consistent else ""
    if improvement.gate_criterion == "r2":
        return f"every joint's {gate.r2_definition} R2 >= {gate.r2_threshold:g}{consistent} (Kolathaya et al. 2016)"
    return (
        f"held-out error <= {improvement.improvement_ratio:g} x the nominal model's and <= "
        f"{improvement.max_relative_error:g} of each joint's torque scale over {improvement.evidence_duration:g} s, "
        f"for {improvement.stable_duration:g} s{consistent}"
    )
