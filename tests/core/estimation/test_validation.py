"""Validation metrics and the per-joint verdict."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.estimation.validation import AcceptanceLimits, judge, parse_limits, prediction_metrics
from motor_ident.errors import ConfigError


def test_metrics_match_their_definitions(rng: np.random.Generator) -> None:
    tau = rng.standard_normal((500, 2)) + np.array([3.0, 0.0])
    pred = tau + np.array([0.3, 0.1]) * rng.standard_normal((500, 2))
    m = prediction_metrics(tau, pred)
    e = tau - pred
    np.testing.assert_allclose(m.rre, 100 * np.linalg.norm(e, axis=0) / np.linalg.norm(tau, axis=0))
    np.testing.assert_allclose(m.rmse, np.sqrt(np.mean(e**2, axis=0)))
    np.testing.assert_allclose(m.r2, 1 - np.sum(e**2, axis=0) / np.sum((tau - tau.mean(axis=0)) ** 2, axis=0))
    np.testing.assert_allclose(m.r2_uncentred, 1 - np.sum(e**2, axis=0) / np.sum(tau**2, axis=0))
    assert m.r2_uncentred[0] > m.r2[0]  # the offset of joint 0 inflates the uncentred R2


def test_verdict_lists_each_failed_limit() -> None:
    tau = np.column_stack([np.ones(10), np.linspace(-1, 1, 10)])
    identified = prediction_metrics(tau, tau * np.array([0.9, 0.5]))  # RRE 10 %, 50 %
    nominal = prediction_metrics(tau, tau * np.array([0.8, 0.6]))  # RRE 20 %, 40 %
    verdict = judge(("a", "b"), identified, nominal, AcceptanceLimits(max_rre={"a": 15.0, "*": 60.0}))
    assert not verdict.passed
    assert verdict.reasons == ("b: RRE 50 % > the nominal model's 40 %",)
    strict = judge(("a", "b"), identified, None, AcceptanceLimits(max_rre=parse_limits("5", "--max-rre")))
    assert [r.split(":")[0] for r in strict.reasons] == ["a", "b"]
    assert judge(("a", "b"), identified, nominal, AcceptanceLimits(not_worse_than_nominal=False)).passed is False
    with pytest.raises(ConfigError, match=r"name joints \['c'\]"):
        judge(("a", "b"), identified, nominal, AcceptanceLimits(min_r2={"c": 0.9}))


def test_limits_parse_per_joint() -> None:
    assert parse_limits("elbow=15, *=20", "--max-rre") == {"elbow": 15.0, "*": 20.0}
    assert parse_limits("20", "--max-rre") == {"*": 20.0}
    with pytest.raises(ConfigError, match="--max-rre 'elbow=x'"):
        parse_limits("elbow=x", "--max-rre")
