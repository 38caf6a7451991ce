"""Opening an unknown input file with bounded memory: text in chunks, NPZ archives checked first.

A recording may be anything a user points the command at: a 2 GB file of NUL bytes named
``.csv``, an image renamed ``.npz``, a ZIP whose members unpack to far more than its size. Every
reader of CSV and NPZ files goes through this module (YAML files are bounded by their size in
`motor_ident.schema.read_yaml`), so each such file is refused in one
line before it is parsed, and memory stays within the size of what the file really holds:

- **text** (CSV): a file larger than its kind's limit is refused by its size; the first
  block must be UTF-8 text without NUL bytes (a binary file stops there); the rest is read in
  blocks of whole lines (`text_lines`), so no line longer than `MAX_LINE_BYTES` is ever held.
  A UTF-8 byte-order mark at the start (spreadsheet programs write one) is dropped.
- **NPZ** (`open_npz`): the file must start as a ZIP archive; every member must be a ``.npy``
  array of numbers or strings (never Python objects: a pickle runs code when loaded, so
  motor_ident does not load one and does not suggest it), whose header's shape fits the bytes the
  member unpacks to, and the members together must stay under `MAX_NPZ_BYTES` unpacked.

Rejected: reading the whole file and checking afterwards (the 2 GB NUL file grew to 13.4 GB
before it was stopped), and ``np.load`` alone on an NPZ (any non-ZIP file is taken for a pickle,
and its error advises turning pickles on).
"""

from __future__ import annotations

import codecs
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from motor_ident.errors import DataError

MAX_CSV_BYTES = 8 * 1024**3
"""Largest CSV recording read [bytes]: 8 GiB, about 100 hours of a 7-joint arm at 1 kHz as text."""
MAX_NPZ_BYTES = 16 * 1024**3
"""Largest total unpacked size of an NPZ's arrays [bytes]."""
MAX_LINE_BYTES = 1024**2
"""Longest line of a text file [bytes]: a CSV row of 1 MiB would be some 50,000 columns."""
BLOCK_BYTES = 1024**2
"""Bytes read at a time; also the first block checked for binary content."""
_NUMPY_KINDS = "biufcUS"  # booleans, integers, floats, complex, strings: no objects, no raw records


def check_text_file(path: Path, *, limit: int, kind: str) -> None:
    """Refuse ``path`` unless it is at most ``limit`` bytes and its first block is UTF-8 text.

    Args:
        path: the file.
        limit: largest size accepted [bytes].
        kind: what the file should be, for the message (``CSV``, ``YAML``).

    Raises:
        DataError: too large, NUL bytes or bytes that are not UTF-8 in the first block.
        OSError: the file cannot be read.
    """
    size = path.stat().st_size
    if size > limit:
        raise DataError(
            f"{path}: {amount(size)}, larger than the {amount(limit)} a {kind} file may be: split the recording"
        )
    with open(path, "rb") as stream:
        block = stream.read(BLOCK_BYTES)
    _check_text_block(path, block, 0, kind, final=len(block) < BLOCK_BYTES)


def amount(size: int) -> str:
    """A size in bytes as people read it: ``2 GiB``, ``2.7 KiB``, ``512 bytes``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def _check_text_block(path: Path, block: bytes, offset: int, kind: str, *, final: bool) -> None:
    """Refuse a block holding NUL bytes or bytes that are not UTF-8 (a sequence cut at the block's end is fine)."""
    nul = block.find(b"\0")
    if nul >= 0:
        raise DataError(f"{path}: binary content (a NUL byte at byte {offset + nul}): not a {kind} text file")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(block, final=final)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {offset + exc.start}): not a {kind} text file") from None


def text_lines(path: Path, *, limit: int, kind: str) -> Iterator[list[str]]:
    """The lines of a text file in blocks of about `BLOCK_BYTES` (line ends removed, a leading BOM dropped).

    Raises:
        DataError: the file fails `check_text_file`, a later block holds NUL bytes or is not UTF-8,
            or a line is longer than `MAX_LINE_BYTES`.
        OSError: the file cannot be read.
    """
    check_text_file(path, limit=limit, kind=kind)
    offset, rest, first = 0, b"", True
    with open(path, "rb") as stream:
        while True:
            block = stream.read(BLOCK_BYTES)
            if not block:
                break
            data = rest + block
            cut = data.rfind(b"\n") + 1  # a newline byte is never inside a UTF-8 sequence
            whole, rest = data[:cut], data[cut:]
            if len(rest) > MAX_LINE_BYTES:
                raise DataError(
                    f"{path}: a line longer than {MAX_LINE_BYTES // 1024} KiB at byte {offset}: not a {kind} text file"
                )
            if whole:
                yield _decode(path, whole, offset, kind, first)
                offset, first = offset + len(whole), False
    if rest:
        yield _decode(path, rest, offset, kind, first)


def _decode(path: Path, data: bytes, offset: int, kind: str, first: bool) -> list[str]:
    _check_text_block(path, data, offset, kind, final=True)
    return data.decode("utf-8-sig" if first else "utf-8").splitlines()


def read_text(path: Path, *, limit: int, kind: str) -> str:
    """A whole text file no larger than ``limit`` (a leading BOM dropped), checked as `text_lines` does."""
    return "\n".join(line for block in text_lines(path, limit=limit, kind=kind) for line in block)


def open_npz(path: Path) -> Any:
    """``np.load`` of an NPZ archive once it is known to hold plain arrays that fit memory.

    Returns:
        The open `numpy.lib.npyio.NpzFile` (use it in a ``with`` block).

    Raises:
        DataError: not a ZIP archive, a member that is not a ``.npy`` array, an array of Python
            objects, a header whose shape needs more bytes than the member holds, or more than
            `MAX_NPZ_BYTES` unpacked.
        OSError: the file cannot be read.
    """
    not_npz = f"{path}: not a valid NPZ of arrays"
    with open(path, "rb") as stream:
        magic = stream.read(4)
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # a local file header, or the end record of an empty archive
        raise DataError(f"{not_npz} (not a ZIP archive)")
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        total = sum(m.file_size for m in members)
        if total > MAX_NPZ_BYTES:
            raise DataError(f"{not_npz}: its arrays unpack to {amount(total)}, more than {amount(MAX_NPZ_BYTES)}")
        for member in members:
            _check_npy_member(archive, member, not_npz)
    return np.load(path, allow_pickle=False)


def _check_npy_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, not_npz: str) -> None:
    """Refuse a member that is not a ``.npy`` array of numbers or strings fitting its own unpacked size."""
    name = member.filename
    if not name.endswith(".npy"):
        raise DataError(f"{not_npz}: member {name!r} is not a .npy array")
    with archive.open(member) as stream:
        try:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        except (ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise DataError(f"{not_npz}: member {name!r} has no valid array header ({exc})") from None
        header = stream.tell()
    if dtype.hasobject or dtype.kind not in _NUMPY_KINDS:
        raise DataError(
            f"{not_npz}: array {name[:-4]!r} holds {'Python objects' if dtype.hasobject else dtype}, "
            "not numbers or strings (motor_ident does not unpickle files)"
        )
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed > member.file_size - header:
        raise DataError(
            f"{not_npz}: array {name[:-4]!r} of shape {shape} needs {needed} bytes, the archive holds "
            f"{member.file_size - header}"
        )
