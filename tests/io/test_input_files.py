"""Unknown input files with bounded memory: binary content, huge sizes and NPZs of objects refused before parsing."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from motor_ident.errors import ConfigError, DataError
from motor_ident.io import input_files
from motor_ident.io.data import JointRecord, load_record, save_record
from motor_ident.io.data_spec import read_with_spec, spec_from_dict
from motor_ident.schema import read_yaml


def _record(rng: np.random.Generator, n: int = 50) -> JointRecord:
    return JointRecord(
        t=np.arange(n) * 0.01,
        joint_names=("a", "b"),
        q=rng.normal(size=(n, 2)),
        tau=rng.normal(size=(n, 2)),
    )


def test_a_large_nul_file_is_refused_in_a_child_with_bounded_memory(tmp_path: Path) -> None:
    """A 50 MB sparse file of NUL bytes named .csv / .npz / .mcap: one line each; peak RSS grows far less than 50 MB."""
    for suffix in (".csv", ".npz", ".mcap"):
        (tmp_path / f"nul{suffix}").touch()
        with open(tmp_path / f"nul{suffix}", "r+b") as f:
            f.truncate(50 * 1024**2)
    script = (
        "import resource, sys\n"
        "from motor_ident.io.data import load_record\n"
        "from motor_ident.io.bags.read import read_bag\n"
        "from motor_ident.errors import MotorIdentError\n"
        "baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        (read_bag if name.endswith('.mcap') else load_record)(name)\n"
        "    except MotorIdentError as exc:\n"
        "        print(exc)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline) // 1024)\n"
    )
    names = [str(tmp_path / f"nul{s}") for s in (".csv", ".npz", ".mcap")]
    done = subprocess.run([sys.executable, "-c", script, *names], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    *errors, growth_mb = done.stdout.splitlines()
    assert "binary content (a NUL byte at byte 0): not a CSV text file" in errors[0]
    assert "not a valid NPZ of arrays (not a ZIP archive)" in errors[1] and "pickle" not in errors[1]
    assert "not an MCAP file" in errors[2]
    assert int(growth_mb) < 20, f"peak RSS grew by {growth_mb} MB reading three 50 MB files"


def test_binary_long_lines_and_huge_sizes_are_refused_by_name(tmp_path: Path, rng: np.random.Generator) -> None:
    """NUL after the first block, no line end, bytes that are not UTF-8, a size over the limit: one DataError each."""
    good = tmp_path / "good.csv"
    save_record(good, _record(rng))
    text = good.read_bytes()
    late_nul = tmp_path / "late_nul.csv"
    late_nul.write_bytes(text + b"0" * input_files.BLOCK_BYTES + b"\n1,\0\n")
    one_line = tmp_path / "one_line.csv"
    one_line.write_bytes(b"t" * (input_files.MAX_LINE_BYTES + 2 * input_files.BLOCK_BYTES))
    latin = tmp_path / "latin.csv"
    latin.write_bytes(text + "0.1,0.2,\xe9\n".encode("latin-1"))
    for path, expected in (
        (late_nul, "binary content (a NUL byte at byte"),
        (one_line, "a line longer than 1024 KiB at byte 0"),
        (latin, "not UTF-8 text (byte"),
    ):
        with pytest.raises(DataError, match=r"^" + str(path).replace(".", r"\.") + ".*" + expected.replace("(", r"\(")):
            load_record(path)
    with pytest.raises(
        DataError, match=r"good\.csv: 2\.\d+ KiB, larger than the 1 KiB a CSV file may be: split the recording"
    ):
        input_files.check_text_file(good, limit=1024, kind="CSV")
    big_yaml = tmp_path / "big.yaml"
    with open(big_yaml, "wb") as f:
        f.truncate(65 * 1024**2)
    with pytest.raises(ConfigError, match="65 MiB, larger than the 64 MiB a YAML file may be"):
        read_yaml(big_yaml)


def test_a_csv_read_in_blocks_equals_the_record_and_drops_a_bom(tmp_path: Path, rng: np.random.Generator) -> None:
    """A CSV longer than several blocks reads back exactly; a UTF-8 BOM before the header is dropped (both readers)."""
    record = _record(rng, n=60000)  # ~2.6 MB of text: three blocks
    path = tmp_path / "long.csv"
    save_record(path, record)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    for read in (load_record(path), load_record(bom)):
        np.testing.assert_allclose(read.q, record.q, rtol=1e-9, err_msg="q read in blocks")
        np.testing.assert_allclose(read.t, record.t, atol=1e-12)
    columns = {f"{k}.{j}": {"column": f"{k}.{j}"} for k in ("q", "tau") for j in ("a", "b")}
    spec = spec_from_dict(
        {"data_spec": 1, "format": "csv", "header": True, "time": {"column": "t"}, "columns": columns}
    )
    np.testing.assert_allclose(read_with_spec(bom, spec).q[:, 0], record.q[:, 0], rtol=1e-9)


def test_a_short_row_is_named_by_its_line(tmp_path: Path) -> None:
    """A row with a missing value or a word in it: the error names the line in the file."""
    path = tmp_path / "short.csv"
    path.write_text("t,q.a,tau.a\n0,1,2\n\n0.01,1\n")
    with pytest.raises(DataError, match=r"short\.csv, line 4: 2 values, the header names 3 columns"):
        load_record(path)
    path.write_text("t,q.a,tau.a\n0,1,2\n0.01,one,2\n")
    with pytest.raises(DataError, match=r"line 3: not a number in '0.01,one,2'"):
        load_record(path)


def _npz_with(tmp_path: Path, name: str, members: dict[str, bytes]) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=array.dtype.hasobject)
    return buffer.getvalue()


def test_an_npz_of_objects_or_a_lying_header_is_refused_without_pickle_advice(tmp_path: Path) -> None:
    """Objects (a pickle), a member that is no array, a shape larger than the member: refused, 'pickle' unsaid."""
    t = _npy(np.arange(3.0))
    header = _npy(np.zeros(0))
    lying = header.replace(b"'shape': (0,)", b"'shape': (10000000000,)")
    cases = {
        "objects.npz": ({"t.npy": t, "joint_names.npy": _npy(np.array([{"a": 1}], dtype=object))}, "Python objects"),
        "text.npz": ({"t.npy": t, "notes.txt": b"hello"}, "member 'notes.txt' is not a .npy array"),
        "lying.npz": ({"t.npy": lying}, "of shape (10000000000,) needs 80000000000 bytes"),
        "garbage.npz": ({"t.npy": b"\x93NUMPY garbage"}, "has no valid array header"),
    }
    for name, (members, expected) in cases.items():
        path = _npz_with(tmp_path, name, members)
        with pytest.raises(DataError) as caught:
            load_record(path)
        message = str(caught.value)
        assert expected in message and "not a valid NPZ of arrays" in message, message
        assert "allow_pickle" not in message and "pickle.load" not in message, message
