"""Data specs: a vendor's headerless CSV in degrees and milliseconds into a record; errors name the column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from motor_ident.errors import ConfigError, DataError
from motor_ident.io.data_spec import load_spec, read_with_spec, spec_from_dict
from motor_ident.io.preprocess import KeepRange, Preparation, prepare_record

SPEC = {
    "data_spec": 1,
    "header": False,
    "time": {"column": 0, "unit": "ms"},
    "columns": {
        "q.a": {"column": 2, "unit": "deg"},
        "tau.a": {"column": 1, "unit": "N mm", "scale": -1.0},
        "q.b": 3,
        "tau.b": {"column": 4, "unit": "N m", "offset": 0.5},
    },
    "keep": {"time": [0.5, -0.5]},
}


def _vendor_csv(path: Path, stamps_ms: np.ndarray) -> np.ndarray:
    """Columns: time [ms], tau_a [N mm] with reversed sign, q_a [deg], q_b [rad], tau_b - 0.5 [N m]."""
    t = stamps_ms * 1e-3
    q = np.column_stack([np.sin(2 * t), 0.3 * np.cos(t)])
    tau = np.column_stack([np.cos(2 * t), 0.2 * t])
    table = np.column_stack([stamps_ms, -1e3 * tau[:, 0], np.rad2deg(q[:, 0]), q[:, 1], tau[:, 1] - 0.5])
    np.savetxt(path, table, delimiter=",", fmt="%.10g")
    return np.column_stack([t, q, tau])


def test_headerless_vendor_csv_is_read_in_si_units(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    truth = _vendor_csv(path, 1000.0 + 10.0 * np.arange(400))
    record = read_with_spec(path, spec_from_dict(SPEC))
    assert record.joint_names == ("a", "b")
    np.testing.assert_allclose(record.t, truth[:, 0], atol=1e-12)
    np.testing.assert_allclose(record.q, truth[:, 1:3], atol=1e-9)
    np.testing.assert_allclose(record.tau, truth[:, 3:5], atol=1e-9)


def test_jittered_stamps_are_resampled_and_the_rests_cut(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    stamps = 1000.0 + np.concatenate([[0.0], np.cumsum(rng.choice([8, 9, 10, 10, 11, 12, 13], 599))])
    path = tmp_path / "log.csv"
    _vendor_csv(path, stamps)
    spec = spec_from_dict(SPEC)
    record, notes = prepare_record(read_with_spec(path, spec), spec.preparation)
    assert np.allclose(np.diff(record.t), 0.010)  # the median step
    span = (stamps[-1] - stamps[0]) * 1e-3
    assert record.t[0] == pytest.approx(1.5, abs=0.013) and record.t[-1] == pytest.approx(1.0 + span - 0.5, abs=0.011)
    assert any("onto a uniform 10 ms grid" in n and "positions by cubic spline" in n for n in notes)
    assert any("0.5 s after the start to 0.5 s before the end" in n for n in notes)
    # derivatives of q_a = sin(2 t) on the resampled grid
    inner = slice(10, -10)
    np.testing.assert_allclose(record.qd[inner, 0], 2 * np.cos(2 * record.t[inner]), atol=1e-3)
    np.testing.assert_allclose(record.qdd[inner, 0], -4 * np.sin(2 * record.t[inner]), atol=0.02)


def test_butterworth_and_torque_filter_are_selectable(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    _vendor_csv(path, 10.0 * np.arange(600))
    spec = spec_from_dict({**SPEC, "differentiation": {"method": "butterworth", "cutoff_hz": 8, "filter_torque": True}})
    record, notes = prepare_record(read_with_spec(path, spec), spec.preparation)
    assert any("Butterworth low-pass at 8 Hz" in n and "torque filtered" in n for n in notes)
    inner = slice(30, -30)
    np.testing.assert_allclose(record.qd[inner, 0], 2 * np.cos(2 * record.t[inner]), atol=5e-3)


def test_sample_range_and_fixed_rate(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    _vendor_csv(path, 10.0 * np.arange(300))
    raw = {k: v for k, v in SPEC.items() if k not in ("time", "keep")}
    spec = spec_from_dict({**raw, "rate_hz": 50.0})
    record, _ = prepare_record(read_with_spec(path, spec), Preparation(keep=KeepRange(100, 200, "samples")))
    assert (
        record.t.size == 100 and record.t[0] == pytest.approx(2.0) and record.t[1] - record.t[0] == pytest.approx(0.02)
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"columns": {"q.a": 9, "tau.a": 1}},
            "data spec: columns.q.a): column 9 does not exist: the file has 5 columns",
        ),
        ({"columns": {"q.a": "pos_a", "tau.a": 1}}, "columns.q.a names the column 'pos_a' but the file has no header"),
    ],
)
def test_errors_name_the_column(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "log.csv"
    _vendor_csv(path, 10.0 * np.arange(50))
    with pytest.raises((DataError, ConfigError), match=message.replace("(", r"\(").replace(")", r"\)")):
        read_with_spec(path, spec_from_dict({**SPEC, **change}))


def test_spec_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"columns.q.a.unit = 'N m' is a torque: q.a needs a position unit"):
        spec_from_dict({**SPEC, "columns": {"q.a": {"column": 1, "unit": "N m"}}})
    with pytest.raises(ConfigError, match="either 'time"):
        spec_from_dict({**SPEC, "rate_hz": 100})
    bad = tmp_path / "spec.yaml"
    bad.write_text("data_spec: 1\ncolumns: {q.a: 1, tau.a: 2}\ntime: 0\nkeep: {minutes: [1, 2]}\n")
    with pytest.raises(ConfigError, match=r"spec.yaml: keep = .*expected \{time"):
        load_spec(bad)


def test_a_header_row_without_header_true_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("time,torque,pos\n0,1,2\n10,1,2\n")
    with pytest.raises(DataError, match="set 'header: true'"):
        read_with_spec(path, spec_from_dict(SPEC))
    named = {
        "data_spec": 1,
        "header": True,
        "time": {"column": "time", "unit": "ms"},
        "columns": {"q.a": "pos", "tau.a": "torque"},
    }
    record = read_with_spec(path, spec_from_dict(named))
    assert record.t.tolist() == [0.0, 0.01]
    with pytest.raises(
        DataError, match=r"columns.q.a\): no column 'angle'; the header has \['time', 'torque', 'pos'\]"
    ):
        read_with_spec(path, spec_from_dict({**named, "columns": {"q.a": "angle", "tau.a": "torque"}}))
