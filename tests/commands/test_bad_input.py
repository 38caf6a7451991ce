"""Bad input to motor-ident, found by a fuzzer: every command exits 0 with a valid output, or 2 with one line.

Property-based (hypothesis): every numeric option of every command is driven through the parser
with numbers, non-numbers, NaN, Inf and huge values; ``synth`` runs end to end on drawn numbers;
``identify`` reads recordings damaged in every way a file arrives damaged (truncated, a flipped
byte, empty, header only, a repeated or missing column, wrong types and shapes, NaN / Inf / huge
values). The outcome is always one of two: exit 0 with an output that reads back, or exit 2 with
one line on stderr, no traceback and no output file, whole or partial. `main` runs in-process;
a few known cases also run through the installed ``motor-ident`` entry point.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from motor_ident.cli import build_parser, main
from motor_ident.io.data import load_record

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow printed on stderr is not one line
ROBOT = "valkyrie_arm"
FUZZ = settings(
    max_examples=int(os.environ.get("MOTOR_IDENT_FUZZ_EXAMPLES", "25")),
    deadline=None,  # a loaded 2-core machine: no per-example time limit; the example counts bound the time
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run
)

# text a user may type for a number: numbers of every size and sign, NaN / Inf spelled every way, non-numbers
NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["0", "-0", "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "Infinity", "", "abc", "1,5", "0x10"]),
)


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``motor-ident ARGV`` in this process: (exit status, stderr). Any exception escapes (a traceback)."""
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
    if currently_in_test_context():
        event(f"{argv[0]}: exit {code}")  # counted in --hypothesis-show-statistics
    return code, err.getvalue()


def assert_refused_cleanly(code: int, err: str, argv: list[str], outputs: list[Path]) -> None:
    """Exit 2, one line on stderr naming the problem, no traceback, no output left (whole or temporary)."""
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, (argv, err)
    for out in outputs:
        assert not out.exists(), (argv, out)
        assert not list(out.parent.glob(f".{out.name}.*")), (argv, "temporary file left")


Option = tuple[str, argparse.ArgumentParser, argparse.Action]


def typed_options() -> Iterator[Option]:
    """(command, its parser, action) of every option of every command that converts its value."""

    def walk(parser: argparse.ArgumentParser) -> Iterator[Option]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)
            elif action.type is not None and action.option_strings:
                yield parser.prog, parser, action

    yield from walk(build_parser())


NUMERIC = [option for option in typed_options() if option[2].type not in (str, Path)]


def test_every_numeric_option_is_range_checked() -> None:
    """No option parses with bare float / int: each has a type that refuses NaN, Inf and out-of-range values."""
    assert len(NUMERIC) > 50
    bare = [(prog, a.option_strings[0]) for prog, _, a in NUMERIC if a.type in (float, int)]
    assert bare == []


@FUZZ
@given(option=st.sampled_from(NUMERIC), text=NUMBER_TEXT)
def test_numeric_options_take_finite_numbers_or_refuse_in_one_line(option: Option, text: str) -> None:
    """Any text for any numeric option: parsed to a finite number, or exit 2 with one line naming the option."""
    prog, parser, action = option
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            value = action.type(text)  # type: ignore[misc]
        except argparse.ArgumentTypeError as exc:
            # the parser turns this into its one-line error: check it does
            try:
                parser.error(f"argument {action.option_strings[0]}: {exc}")
            except SystemExit as stop:
                assert stop.code == 2
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and action.option_strings[0] in lines[0], lines
            return
    assert isinstance(value, int | float) and math.isfinite(value), (prog, action.option_strings, text, value)


BAD_SYNTH = {
    "--duration": ["0", "-5", "inf", "nan", "1e300", "1e-9"],
    "--rate": ["0", "-200", "nan", "1e300"],
    "--noise": ["nan", "-1", "inf"],
    "--seed": ["-1", "2.5", str(2**64)],
}


@FUZZ
@given(
    duration=st.floats(0.5, 2.0),
    rate=st.floats(10.0, 150.0),
    noise=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
    suffix=st.sampled_from([".npz", ".csv"]),
    broken=st.one_of(st.none(), st.sampled_from([(k, v) for k, values in BAD_SYNTH.items() for v in values])),
)
def test_synth_writes_a_readable_record_or_refuses(
    duration: float, rate: float, noise: float, seed: int, suffix: str, broken: tuple[str, str] | None
) -> None:
    """synth on drawn numbers: a record of round(duration x rate) samples with finite torque, or exit 2 and no file."""
    options = {"--duration": str(duration), "--rate": str(rate), "--noise": str(noise), "--seed": str(seed)}
    options |= dict([broken]) if broken else {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"record{suffix}"
        argv = ["synth", "--robot", ROBOT, "--out", str(out), *[x for kv in options.items() for x in kv]]
        code, err = run_cli(argv)
        if code != 0:
            assert_refused_cleanly(code, err, argv, [out])
            return
        record = load_record(out)
        assert broken is None and record.t.size == round(duration * rate) and record.tau_measured, argv
        assert np.all(np.isfinite(record.tau)), argv


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Base:
    """The arrays of a short synthetic record (2 s at 100 Hz) of the robot, the base of every damaged file."""
    path = tmp_path_factory.mktemp("base") / "base.npz"
    assert run_cli(["synth", "--robot", ROBOT, "--duration", "2", "--rate", "100", "--out", str(path)])[0] == 0
    with np.load(path) as z:
        return Base({k: z[k] for k in z.files})


def _csv_text(arrays: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    joints = [str(j) for j in arrays["joint_names"]]
    header = ["t"] + [f"{k}.{j}" for k in ("q", "tau") for j in joints]
    return header, np.column_stack([arrays["t"], arrays["q"], arrays["tau"]])


Write = Callable[[dict[str, np.ndarray], Path], None]


@dataclass(frozen=True)
class Damage:
    """One way a recording arrives damaged: what it is (shown when a case fails) and how to write it."""

    what: str
    write: Write

    def __repr__(self) -> str:
        return self.what


class Base(dict[str, np.ndarray]):
    """The arrays of the undamaged recording (a short repr in failure reports)."""

    def __repr__(self) -> str:
        return "<base recording>"


VALUES = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 0.0]


def npz_damage() -> st.SearchStrategy[Damage]:
    """Ways an NPZ recording arrives damaged; each writes the damaged file."""

    def save(arrays: dict[str, np.ndarray], path: Path) -> None:
        with open(path, "wb") as f:
            np.savez(f, **arrays)

    def truncated(fraction: float) -> Damage:
        def write(a: dict[str, np.ndarray], p: Path) -> None:
            save(a, p)
            p.write_bytes(p.read_bytes()[: int(fraction * p.stat().st_size)])

        return Damage(f"npz cut at {fraction:.3f} of its bytes", write)

    def flipped(fraction: float) -> Damage:
        def write(a: dict[str, np.ndarray], p: Path) -> None:
            save(a, p)
            data = bytearray(p.read_bytes())
            data[int(fraction * (len(data) - 1))] ^= 0xFF
            p.write_bytes(bytes(data))

        return Damage(f"npz with the byte at {fraction:.3f} flipped", write)

    def changed(key: str, what: str, how: Callable[[np.ndarray], object]) -> Damage:
        return Damage(f"npz {key}: {what}", lambda a, p: save({**a, key: how(a[key])}, p))

    def value_at(value: float, index: float) -> Callable[[np.ndarray], np.ndarray]:
        def put(x: np.ndarray) -> np.ndarray:
            y = x.astype(float).copy()
            y.flat[int(index * (y.size - 1))] = value
            return y

        return put

    def without(key: str) -> Damage:
        return Damage(f"npz without {key}", lambda a, p: save({n: v for n, v in a.items() if n != key}, p))

    def npy(a: dict[str, np.ndarray], p: Path) -> None:
        with open(p, "wb") as f:
            np.save(f, a["q"])

    fields = st.sampled_from(["t", "q", "tau"])
    return st.one_of(
        st.just(Damage("npz undamaged", save)),
        st.floats(0.0, 0.999).map(truncated),
        st.floats(0.0, 1.0).map(flipped),
        st.just(Damage("npz empty", lambda a, p: p.write_bytes(b""))),
        st.sampled_from(["t", "q", "tau", "joint_names"]).map(without),
        st.builds(
            lambda k, v, i: changed(k, f"{v!r} at {i:.2f}", value_at(v, i)),
            fields,
            st.sampled_from(VALUES),
            st.floats(0, 1),
        ),
        st.builds(lambda k, n: changed(k, f"first {n} samples", lambda x: x[:n]), fields, st.integers(0, 5)),
        fields.map(lambda k: changed(k, "as strings", lambda x: x.astype(str))),
        fields.map(lambda k: changed(k, "flattened", lambda x: x.reshape(-1))),
        fields.map(lambda k: changed(k, "transposed", lambda x: x.T)),
        fields.map(lambda k: changed(k, "a scalar", lambda x: np.float64(1.0))),
        st.just(changed("t", "reversed", lambda x: x[::-1].copy())),
        st.just(changed("t", "all zero", lambda x: np.zeros_like(x))),
        st.just(changed("t", "x 1e300", lambda x: x * 1e300)),
        st.just(changed("joint_names", "integers", lambda x: np.arange(x.size))),
        st.just(changed("joint_names", "one name", lambda x: x[:1])),
        st.just(changed("tau", "x 1e200", lambda x: x * 1e200)),
        st.just(Damage("a plain .npy named .npz", npy)),
    )


def csv_damage() -> st.SearchStrategy[Damage]:
    """Ways a CSV recording arrives damaged; each writes the damaged file."""

    def write_rows(header: list[str], rows: list[list[str]], p: Path) -> None:
        p.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")

    def edited(what: str, edit: Callable[[list[str], list[list[str]]], tuple[list[str], list[list[str]]]]) -> Damage:
        def write(a: dict[str, np.ndarray], p: Path) -> None:
            header, table = _csv_text(a)
            write_rows(*edit(header, [[f"{v:.10g}" for v in row] for row in table]), p)

        return Damage(f"csv {what}", write)

    def truncated(fraction: float) -> Damage:
        def write(a: dict[str, np.ndarray], p: Path) -> None:
            edited("", lambda h, r: (h, r)).write(a, p)
            p.write_text(p.read_text()[: int(fraction * len(p.read_text()))])

        return Damage(f"csv cut at {fraction:.3f} of its text", write)

    def cell(text: str, row: float, column: float) -> Damage:
        def edit(h: list[str], r: list[list[str]]) -> tuple[list[str], list[list[str]]]:
            r[int(row * (len(r) - 1))][int(column * (len(h) - 1))] = text
            return h, r

        return edited(f"cell at ({row:.2f}, {column:.2f}) = {text!r}", edit)

    def repeated(column: float) -> Damage:
        def edit(h: list[str], r: list[list[str]]) -> tuple[list[str], list[list[str]]]:
            c = int(column * (len(h) - 1))
            return h + [h[c]], [row + [row[c]] for row in r]

        return edited(f"column {column:.2f} repeated", edit)

    def dropped(column: float) -> Damage:
        def edit(h: list[str], r: list[list[str]]) -> tuple[list[str], list[list[str]]]:
            c = int(column * (len(h) - 1))
            return h[:c] + h[c + 1 :], [row[:c] + row[c + 1 :] for row in r]

        return edited(f"column {column:.2f} dropped", edit)

    texts = st.sampled_from(["nan", "inf", "-inf", "1e308", "-1e308", "abc", "", "1;2", "0x1p3", "  7  "])
    return st.one_of(
        st.just(edited("undamaged", lambda h, r: (h, r))),
        st.floats(0.0, 0.999).map(truncated),
        st.just(Damage("csv empty", lambda a, p: p.write_bytes(b""))),
        st.just(edited("header only", lambda h, r: (h, []))),
        st.just(edited("one row", lambda h, r: (h, r[:1]))),
        st.builds(cell, texts, st.floats(0, 1), st.floats(0, 1)),
        st.floats(0, 1).map(repeated),
        st.floats(0, 1).map(dropped),
        st.just(edited("a short row", lambda h, r: (h, r[:5] + [r[5][:-2]] + r[6:]))),
        st.just(edited("rows reversed", lambda h, r: (h, r[::-1]))),
        st.just(edited("every column named q.", lambda h, r: (["q." + c for c in h], r))),
        st.just(edited("no header", lambda h, r: ([], r))),
        st.just(Damage("csv not UTF-8", lambda a, p: p.write_bytes(b"t,q.\xff\xfe\n1,2\n"))),
    )


@settings(FUZZ, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    damage=st.one_of(npz_damage().map(lambda d: (".npz", d)), csv_damage().map(lambda d: (".csv", d))),
    validate=st.one_of(st.none(), st.floats(0.05, 0.5).map(str), st.sampled_from(["0", "1", "-0.2", "nan", "1e-9"])),
)
def test_identify_reads_a_damaged_recording_or_refuses_it(
    recording: Base, damage: tuple[str, Damage], validate: str | None
) -> None:
    """identify on a damaged recording: finite R^2 in the JSON and a parameter file, or exit 2 in one line."""
    suffix, how = damage
    with tempfile.TemporaryDirectory() as tmp:
        data, params, summary = Path(tmp) / f"data{suffix}", Path(tmp) / "params.yaml", Path(tmp) / "fit.json"
        how.write(recording, data)
        argv = ["identify", str(data), "--robot", ROBOT, "--no-report", "--out", str(params), "--json", str(summary)]
        argv += [] if validate is None else ["--validate", validate]
        code, err = run_cli(argv)
        if code != 0:
            assert_refused_cleanly(code, err, argv, [params, summary])
            return
        fit = json.loads(summary.read_text())
        assert params.is_file() and all(math.isfinite(v) for v in fit["r2_per_joint"]), (argv, fit)
        assert math.isfinite(fit["condition_number"]), (argv, fit)


@pytest.mark.parametrize(
    "args",
    [
        "identify empty.csv --robot valkyrie_arm --no-report",
        "identify empty.npz --robot valkyrie_arm --no-report",
        "synth --robot valkyrie_arm --duration 0 --out o.npz",
        "synth --robot valkyrie_arm --noise nan --duration 2 --out o2.npz",
        "demo --duration 0",
    ],
)
def test_the_installed_command_refuses_known_bad_input_in_one_line(args: str, tmp_path: Path) -> None:
    """The ``motor-ident`` entry point as a process: exit 2, one line, nothing written."""
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "empty.npz").write_bytes(b"")
    command = [str(Path(sys.executable).parent / "motor-ident"), *args.split()]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["empty.csv", "empty.npz"]


def test_a_truncated_zip_is_a_data_error_naming_the_file(recording: dict[str, np.ndarray], tmp_path: Path) -> None:
    """load_record: a truncated NPZ raises DataError with the file's name, not zipfile.BadZipFile."""
    from motor_ident.errors import DataError

    path = tmp_path / "cut.npz"
    with open(path, "wb") as f:
        np.savez(f, **recording)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(DataError, match="cut.npz"):
        load_record(path)
    assert not zipfile.is_zipfile(path)
