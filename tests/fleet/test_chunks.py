"""A recording split into chunks on the cluster gives the row of the whole recording (merged statistics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.errors import EstimationError
from motor_ident.fleet.cluster import identify_fleet
from motor_ident.fleet.recordings import find_recordings
from motor_ident.fleet.store import ParameterStore
from motor_ident.fleet.worker import IdentifySettings, identify_recording

RESULT_TIMEOUT_S = 300


def test_chunks_merge_to_the_whole_recording(fleet: tuple[Path, dict[str, Any]], client: Any, tmp_path: Path) -> None:
    """3 chunks of 600 samples (1600 in all): every parameter, std, R^2 and the condition number as one task's."""
    recording = find_recordings([fleet[0] / "robot_01"], robot_config="valkyrie_arm", robot_map=None)[2]
    store = ParameterStore(tmp_path / "store")
    summary = identify_fleet(
        [recording], IdentifySettings(), store, client, chunk_samples=600, timeout=RESULT_TIMEOUT_S
    )
    assert (summary.identified, summary.failed) == (1, [])
    chunked = store.frame().iloc[0]
    whole = identify_recording(recording, IdentifySettings())
    assert whole["n_samples"] == 1600 and chunked["key"] == whole["key"]
    numeric = [k for k in whole if k.startswith(("p.", "std.", "r2.", "nrmse.")) or k == "condition_number"]
    assert len(numeric) == 2 * 34 + 2 * 4 + 1
    np.testing.assert_allclose(
        [chunked[k] for k in numeric], [whole[k] for k in numeric], rtol=1e-8, atol=1e-12, err_msg=str(numeric)
    )


def test_merged_statistics_equal_the_whole(rng: np.random.Generator) -> None:
    """Statistics of two halves, merged, equal those of the whole data (every field); a wrong shape is refused."""
    Y, tau = rng.standard_normal((50, 3, 4)), rng.standard_normal((50, 3))
    whole = RegressionStatistics.from_arrays(Y, tau)
    merged = RegressionStatistics.from_arrays(Y[:20], tau[:20])
    merged.merge(RegressionStatistics.from_arrays(Y[20:], tau[20:]))
    for field in ("A", "b", "yy", "ysum", "count", "ymin", "ymax"):
        np.testing.assert_allclose(getattr(merged, field), getattr(whole, field), rtol=1e-12, err_msg=field)
    np.testing.assert_allclose(merged.wls().theta, whole.wls().theta, rtol=1e-10)
    with pytest.raises(EstimationError, match="joints x parameters"):
        merged.merge(RegressionStatistics(3, 5))
