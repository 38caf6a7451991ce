"""Finding a fleet's recordings, naming their robot, dating and fingerprinting them.

Layout: ``DIR/<robot>/<recording>`` (a recording is an ``.npz`` / ``.csv`` file, an ``.mcap`` /
``.db3`` file or a rosbag2 directory with ``metadata.yaml``); files directly in ``DIR`` belong to
the robot named like ``DIR``. A path given explicitly is one recording of the robot named like
its parent directory. Paths are made absolute when found (a recording's path is read by
workers that may run in another directory, or on another machine with the same file system).

A recording's time is its first time stamp when that is an absolute time (bags carry header
stamps; simulated fleets write absolute times), else the file's modification time. Its content
hash is SHA-256 over its bytes (every file of a bag directory, by relative path), so a renamed
copy is still recognised and an edited file is not.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from motor_ident.errors import ConfigError, DataError
from motor_ident.io.data import check_samples
from motor_ident.io.input_files import open_npz
from motor_ident.schema import read_yaml

RECORD_SUFFIXES = (".npz", ".csv")
BAG_SUFFIXES = (".mcap", ".db3")
ABSOLUTE_TIME_S = 1.0e8
"""Time stamps above this [s] are read as seconds since the Unix epoch (1973 on)."""


@dataclass(frozen=True)
class Recording:
    """One recording to identify: where it is, whose it is and which robot config applies."""

    path: Path
    robot: str
    config: str
    content_hash: str

    @property
    def is_bag(self) -> bool:
        """True for a rosbag2 directory or a .mcap / .db3 file."""
        return self.path.is_dir() or self.path.suffix.lower() in BAG_SUFFIXES


def _is_recording(path: Path) -> bool:
    if path.name.startswith("."):
        return False
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.suffix.lower() in RECORD_SUFFIXES + BAG_SUFFIXES


def content_hash(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes, or of every file of a directory with its relative path."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            digest.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def settings_hash(settings: Mapping[str, Any]) -> str:
    """SHA-256 (hex, 16 digits) of identification settings (JSON-serialisable, key order free)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def config_hash(config_path: Path, urdf: Path) -> str:
    """SHA-256 (hex, 16 digits) of a robot config: its YAML and its URDF."""
    digest = hashlib.sha256()
    for f in (config_path, urdf):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def load_robot_map(path: str | Path) -> dict[str, str]:
    """A ``robot name -> robot config (name or YAML path)`` map from a YAML file.

    Relative config paths are taken relative to the map's directory when such a file exists.

    Raises:
        ConfigError: the file is missing or is not a mapping of names to strings.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--robot-map {path}: no such file")
    try:
        raw = read_yaml(path)
    except ConfigError as exc:
        raise ConfigError(f"--robot-map {exc}") from None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ConfigError(f"--robot-map {path}: expected a mapping 'robot name: robot config', got {raw!r}")
    out = {}
    for robot, config in raw.items():
        relative = path.parent / config
        out[robot] = str(relative) if relative.is_file() else config
    return out


def find_recordings(
    sources: Iterable[str | Path], *, robot_config: str | None, robot_map: Mapping[str, str] | None
) -> list[Recording]:
    """Every recording under ``sources`` (directories in the fleet layout, or recordings), sorted.

    Raises:
        DataError: a source does not exist or holds no recording.
        ConfigError: a robot has no config (neither ``robot_config`` nor an entry in ``robot_map``).
    """
    found: list[tuple[Path, str]] = []
    for source in map(Path, sources):
        if not source.exists():
            raise DataError(f"{source}: no such file or directory")
        source = source.resolve()
        if _is_recording(source):
            found.append((source, source.parent.name))
            continue
        for child in sorted(source.iterdir()):
            if _is_recording(child):
                found.append((child, source.name))
            elif child.is_dir() and not child.name.startswith("."):
                found.extend((p, child.name) for p in sorted(child.iterdir()) if _is_recording(p))
    if not found:
        raise DataError(
            f"no recordings under {[str(s) for s in sources]}: expected DIR/<robot>/<recording>.npz|.csv|.mcap|bag/"
        )
    out = []
    for path, robot in dict.fromkeys(found):  # a recording named twice (its directory and itself) once
        config = (robot_map or {}).get(robot, robot_config)
        if config is None:
            raise ConfigError(f"robot {robot!r} ({path}) has no config: add it to --robot-map or give --robot")
        if Path(config).is_file():  # a YAML path: absolute, as the recordings'
            config = str(Path(config).resolve())
        out.append(Recording(path=path, robot=robot, config=config, content_hash=content_hash(path)))
    return sorted(out, key=lambda r: (r.robot, str(r.path)))


def recording_time(path: Path, first_stamp: float) -> float:
    """When a recording started [s since the Unix epoch]: its first stamp if absolute, else its mtime."""
    if first_stamp >= ABSOLUTE_TIME_S:
        return first_stamp
    return path.stat().st_mtime


def sample_count(recording: Recording) -> int | None:
    """Samples of an NPZ recording (reads only its ``t`` array); None for other formats (not chunked).

    Raises:
        DataError: the NPZ cannot be read (truncated, damaged) or has no 1-D ``t`` array.
    """
    if recording.is_bag or recording.path.suffix.lower() != ".npz":
        return None
    try:
        with open_npz(recording.path) as z:
            t = z["t"]
    except DataError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{recording.path}: cannot read: {type(exc).__name__}: {exc}") from None
    check_samples(t, str(recording.path))
    return int(t.shape[0])
