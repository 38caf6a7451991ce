"""Bad YAML files given to motor-ident, found by a fuzzer: exit 0 with a valid output, or exit 2 with one line.

Every command option that reads a YAML file is driven with damaged copies of a good file: empty,
not YAML, not UTF-8, a list or a scalar instead of a mapping, a key removed, an unknown key added,
a key written twice, and any value replaced by a wrong type, NaN, Inf, a huge, negative or zero
number. The files: robot configs (``synth --robot``), data specs (``identify --spec``), parameter
files (``validate PARAMS``, ``identify --drive-gains``), scenario parameter files (``run FILE``),
fleet robot maps (``fleet identify --robot-map``) and excitation trajectories (``reproduce
--trajectory``). A refusal is one line on stderr naming the file and, for a damaged key, the key.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from motor_ident.io.data import load_record
from tests.commands.test_bad_input import FUZZ, assert_refused_cleanly, run_cli

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow printed on stderr is not one line
REPO = Path(__file__).resolve().parents[2]
FIXTURE = settings(FUZZ, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

Path_ = tuple[str | int, ...]  # keys and list indices from the document's root to a value


@dataclass(frozen=True)
class Edit:
    """One way a YAML file arrives damaged: what it is (shown when a case fails), the file's bytes,
    and the keys a refusal should name (empty: any message naming the file will do)."""

    kind: str
    what: str
    data: bytes
    keys: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return self.what


def _paths(doc: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every key path of a parsed YAML document (mappings and lists), depth first."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


def _replaced(doc: Any, path: Path_, value: Any, *, delete: bool = False) -> Any:
    """A copy of ``doc`` with the value at ``path`` replaced by ``value`` (or deleted)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out: Any = {k: (_replaced(v, rest, value, delete=delete) if k == head else v) for k, v in doc.items()}
        if delete and not rest:
            del out[head]
        return out
    items = [(_replaced(v, rest, value, delete=delete) if i == head else v) for i, v in enumerate(doc)]
    return [v for i, v in enumerate(items) if not (delete and not rest and i == head)]


def _dump(doc: Any) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000).encode()


def _named(path: Path_) -> tuple[str, ...]:
    """The keys of a path a message may name (list indices are named by the key that holds the list)."""
    return tuple(str(k) for k in path if isinstance(k, str))


BAD_VALUES: list[Any] = [
    "abc",
    "",
    [],
    {},
    [1.0, "x"],
    {"a": 1},
    True,
    None,
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -1e308,
    1e-320,
    -1.0,
    -1,
    0,
    0.0,
    10**30,
]
NOT_YAML = [b"key: [unclosed", b"a: b: c", b"\t- x", b"{", b"x:\n  - 1\n y: 2", b"- a\nb: c", b"%YAML 9.9\n---\na: 1"]


def edits(base: Any) -> st.SearchStrategy[Edit]:
    """Damaged versions of the YAML document ``base`` (a parsed mapping)."""
    paths = list(_paths(base))
    lines = [
        i
        for i, line in enumerate(_dump(base).decode().splitlines())
        if ":" in line and not line.lstrip().startswith("-")
    ]

    def value(path: Path_, bad: Any) -> Edit:
        kind = "wrong type" if not isinstance(bad, int | float) or isinstance(bad, bool) else "NaN / Inf / huge / tiny"
        kind = "negative / zero" if kind != "wrong type" and -1 <= bad <= 0 else kind
        what = f"{'.'.join(map(str, path))} = {bad!r}"
        return Edit(kind, what, _dump(_replaced(base, path, bad)), _named(path))

    def removed(path: Path_) -> Edit:
        what = f"{'.'.join(map(str, path))} removed"
        return Edit("key missing", what, _dump(_replaced(base, path, None, delete=True)), _named(path))

    def unknown(path: Path_) -> Edit:
        changed = _replaced(base, path, {**_at(base, path), "not_a_setting": 1.0})
        what = f"{'.'.join(map(str, path)) or 'top level'}: unknown key"
        return Edit("unknown key", what, _dump(changed), ("not_a_setting",))

    def twice(index: int) -> Edit:
        text = _dump(base).decode().splitlines()
        line = text[index]
        key = line.split(":", 1)[0].strip()
        return Edit(
            "duplicate key",
            f"key {key!r} written twice (line {index + 1})",
            "\n".join(text[: index + 1] + text[index:]).encode() + b"\n",
            (key,),
        )

    mappings = [()] + [p for p in paths if isinstance(_at(base, p), dict)]
    return st.one_of(
        st.just(Edit("undamaged", "undamaged", _dump(base))),
        st.just(Edit("empty", "empty", b"")),
        st.sampled_from(NOT_YAML).map(lambda b: Edit("not YAML", f"not YAML: {b!r}", b)),
        st.just(Edit("not UTF-8", "not UTF-8", b"robot:\n  name: \xff\xfe\n")),
        st.sampled_from([[1, 2], ["robot"], 42, "just text", 3.5, True]).map(
            lambda v: Edit("a list or a scalar", f"top level {v!r}", _dump(v))
        ),
        st.builds(value, st.sampled_from(paths), st.sampled_from(BAD_VALUES)),
        st.sampled_from(paths).map(removed),
        st.sampled_from(mappings).map(unknown),
        st.sampled_from(lines).map(twice),
    )


def _at(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


class Accepted(Exception):  # noqa: N818 - not an error: the command got past reading its files
    """Raised in place of the work a command does after it has read and checked its files."""


@contextmanager
def stopped_after_reading(target: str) -> Iterator[None]:
    """``target`` (a dotted name the command calls once its files are read) raises `Accepted`."""
    with mock.patch(target, side_effect=Accepted):
        yield


def check_outcome(
    edit: Edit, argv: list[str], file: Path, outputs: list[Path], valid: Callable[[], None], *, done: int = 0
) -> None:
    """Exit ``done`` (0; validate's failed verdict: 1) and ``valid()`` passes, or exit 2 with one line
    naming ``file`` (and a damaged key) and no output."""
    event(f"{argv[0]} {file.name}: {edit.kind}")
    try:
        code, err = run_cli(argv)
    except Accepted:
        event(f"{argv[0]}: files accepted")
        valid()
        return
    if code in (0, done):
        event(f"{argv[0]}: exit {code}")
        valid()
        return
    assert_refused_cleanly(code, err, argv, outputs)
    line = err.strip()
    assert file.name in line, (edit, line)
    if edit.keys:
        assert any(key in line or key.split(".")[-1] in line for key in edit.keys), (edit, line)  # q.elbow: elbow


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


ROBOTS = ["szabo_3dof", "valkyrie_arm", "icub_torso", "ur5_currents"]


def _robot_doc(name: str) -> Any:
    """A shipped robot config with its URDF path made absolute (the damaged copy lives elsewhere)."""
    doc = _yaml(REPO / "config" / f"{name}.yaml")
    doc["robot"]["urdf"] = str(REPO / "config" / doc["robot"]["urdf"])
    return doc


@FUZZ
@given(data=st.data(), robot=st.sampled_from(ROBOTS))
def test_synth_reads_a_damaged_robot_config_or_refuses_it(data: st.DataObject, robot: str) -> None:
    """``synth --robot FILE``: a record with finite q and torque, or exit 2 naming the file and the key."""
    edit = data.draw(edits(_robot_doc(robot)), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        config, out = Path(tmp) / "robot.yaml", Path(tmp) / "record.npz"
        config.write_bytes(edit.data)
        argv = ["synth", "--robot", str(config), "--duration", "0.5", "--rate", "50", "--out", str(out)]

        def valid() -> None:
            record = load_record(out)
            measured = (
                [record.tau] if record.tau_measured else [x for x in (record.current, record.pwm) if x is not None]
            )
            assert record.t.size == 25 and np.all(np.isfinite(record.q)) and measured, edit
            assert all(np.all(np.isfinite(x)) for x in measured), edit

        check_outcome(edit, argv, config, [out], valid)


@pytest.fixture(scope="module")
def arm_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 600 rows (6 s) of the example arm's identification log, read with examples/arm_log/spec.yaml."""
    path = tmp_path_factory.mktemp("arm_log") / "identification.csv"
    rows = (REPO / "examples" / "arm_log" / "identification.csv").read_text().splitlines()[:600]
    path.write_text("\n".join(rows) + "\n")
    return path


@FIXTURE
@given(data=st.data())
def test_identify_reads_a_damaged_data_spec_or_refuses_it(arm_log: Path, data: st.DataObject) -> None:
    """``identify LOG --spec FILE``: finite R^2 and a parameter file, or exit 2 naming the file and the key."""
    edit = data.draw(edits(_yaml(REPO / "examples" / "arm_log" / "spec.yaml")), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        spec, params, summary = Path(tmp) / "spec.yaml", Path(tmp) / "params.yaml", Path(tmp) / "fit.json"
        spec.write_bytes(edit.data)
        argv = ["identify", str(arm_log), "--spec", str(spec), "--robot", "valkyrie_arm", "--no-report"]
        argv += ["--out", str(params), "--json", str(summary)]

        def valid() -> None:
            fit = json.loads(summary.read_text())
            assert params.is_file() and all(math.isfinite(v) for v in fit["r2_per_joint"]), (edit, fit)

        check_outcome(edit, argv, spec, [params, summary], valid)


@pytest.fixture(scope="module")
def identified(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(recording, parameter file identify wrote from it) of the 3-DoF arm, 2 s at 100 Hz."""
    tmp = tmp_path_factory.mktemp("identified")
    data, params = tmp / "data.npz", tmp / "params.yaml"
    assert run_cli(["synth", "--robot", "szabo_3dof", "--duration", "2", "--rate", "100", "--out", str(data)])[0] == 0
    argv = ["identify", str(data), "--robot", "szabo_3dof", "--no-report", "--out", str(params)]
    assert run_cli(argv)[0] == 0
    return data, params


@FIXTURE
@given(data=st.data())
def test_validate_reads_a_damaged_parameter_file_or_refuses_it(
    identified: tuple[Path, Path], data: st.DataObject
) -> None:
    """``validate PARAMS DATA``: finite metrics in the JSON, or exit 2 naming the file and the key."""
    recording, good = identified
    read = ("motor_ident_parameters", "robot", "method", "parameters")  # the blocks validate reads
    edit = data.draw(edits({k: v for k, v in _yaml(good).items() if k in read}), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        params, summary = Path(tmp) / "params.yaml", Path(tmp) / "validation.json"
        params.write_bytes(edit.data)
        argv = ["validate", str(params), str(recording), "--robot", "szabo_3dof", "--json", str(summary)]

        def valid() -> None:
            metrics = json.loads(summary.read_text())
            assert all(math.isfinite(v) for v in metrics["rmse_per_joint"] + metrics["r2_per_joint"]), (edit, metrics)

        check_outcome(edit, argv, params, [summary], valid, done=1)


@FUZZ
@given(data=st.data())
def test_run_reads_a_damaged_scenario_file_or_refuses_it(data: st.DataObject) -> None:
    """``run FILE``: every node's settings built (the run is not started here), or exit 2 naming file and key."""
    edit = data.draw(edits(_yaml(REPO / "config" / "scenarios" / "valkyrie_arm.yaml")), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.yaml"
        scenario.write_bytes(edit.data)
        argv = ["run", str(scenario), "--duration", "1", "--out-dir", str(Path(tmp) / "out")]
        with stopped_after_reading("motor_ident.ros.runtime.runner.run_scenario"):
            check_outcome(edit, argv, scenario, [Path(tmp) / "out" / "summary.json"], lambda: None)


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fleet directory with one recording per robot: DIR/robot_00/day_000.npz, DIR/robot_01/day_000.npz."""
    root = tmp_path_factory.mktemp("fleet")
    for robot in ("robot_00", "robot_01"):
        out = root / robot / "day_000.npz"
        assert run_cli(["synth", "--robot", "szabo_3dof", "--duration", "1", "--rate", "50", "--out", str(out)])[0] == 0
    return root


@FIXTURE
@given(data=st.data())
def test_fleet_identify_reads_a_damaged_robot_map_or_refuses_it(fleet_dir: Path, data: st.DataObject) -> None:
    """``fleet identify DIR --robot-map FILE``: every recording finds its robot's config, or exit 2 naming the file."""
    base = {"robot_00": "szabo_3dof", "robot_01": str(REPO / "config" / "szabo_3dof.yaml")}
    edit = data.draw(edits(base), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        robot_map, store = Path(tmp) / "robots.yaml", Path(tmp) / "store"
        robot_map.write_bytes(edit.data)
        argv = ["fleet", "identify", str(fleet_dir), "--robot-map", str(robot_map), "--store", str(store)]
        with stopped_after_reading("motor_ident.fleet.store.ParameterStore"):
            check_outcome(edit, argv, robot_map, [store], lambda: None)


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An excitation trajectory of the 3-DoF arm (2 harmonics) that ``motor-ident excite`` wrote."""
    out = tmp_path_factory.mktemp("trajectory") / "excitation.yaml"
    argv = ["excite", "--robot", "szabo_3dof", "--criterion", "cond", "--starts", "1", "--max-iterations", "3"]
    assert run_cli([*argv, "--harmonics", "2", "--out", str(out)])[0] == 0
    return out


@FIXTURE
@given(data=st.data())
def test_reproduce_reads_a_damaged_trajectory_or_refuses_it(trajectory: Path, data: st.DataObject) -> None:
    """``reproduce szabo --trajectory FILE``: the trajectory read (no Monte Carlo run here), or exit 2."""
    edit = data.draw(edits(_yaml(trajectory)), label="edit")
    with tempfile.TemporaryDirectory() as tmp:
        path, summary = Path(tmp) / "excitation.yaml", Path(tmp) / "reproduction.json"
        path.write_bytes(edit.data)
        argv = ["reproduce", "szabo", "--trajectory", str(path), "--runs", "2", "--json", str(summary)]
        with stopped_after_reading("motor_ident.papers.szabo.reproduce.monte_carlo"):
            check_outcome(edit, argv, path, [summary], lambda: None)
