"""Recordings of a robot on its feet: joint encoders, an IMU on the base, a 6-axis wrench per foot.

Stored as NPZ with these arrays (N samples, n joints, c contacts)::

    t                  (N,)       time [s]
    joint_names        (n,)       str
    q                  (N, n)     joint positions [rad]
    tau                (N, n)     joint torques [N m] (optional: where measured)
    contact_names      (c,)       str, the robot config's floating_base.contacts
    wrench             (N, c, 6)  [fx, fy, fz, tx, ty, tz] the ground applies, in each sensor frame [N, N m]
    imu_quaternion     (N, 4)     world <- IMU orientation [qx, qy, qz, qw]
    imu_gyro           (N, 3)     angular velocity in the IMU frame [rad/s]
    imu_accelerometer  (N, 3)     proper acceleration (a - g) in the IMU frame [m/s^2]
    base_position      (N, 3)     base origin in the world [m] (optional: estimated from the feet when absent)
    contact            (N, c)     1 where the foot is on the ground, 0 where it is lifted (optional: from
                                  the wrenches' magnitude when absent)
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from motor_ident.errors import DataError
from motor_ident.io.data import atomic_write
from motor_ident.io.input_files import open_npz

FloatArray = NDArray[np.float64]

_OPTIONAL = ("tau", "base_position", "contact")


@dataclass(frozen=True, eq=False)
class FloatingBaseRecord:
    """A floating-base recording (module docstring for the arrays)."""

    t: FloatArray
    joint_names: tuple[str, ...]
    q: FloatArray
    contact_names: tuple[str, ...]
    wrench: FloatArray
    imu_quaternion: FloatArray
    imu_gyro: FloatArray
    imu_accelerometer: FloatArray
    tau: FloatArray | None = None
    base_position: FloatArray | None = None
    contact: FloatArray | None = None

    def __post_init__(self) -> None:
        N, n, c = self.t.shape[0], len(self.joint_names), len(self.contact_names)
        shapes = {
            "q": (N, n),
            "wrench": (N, c, 6),
            "imu_quaternion": (N, 4),
            "imu_gyro": (N, 3),
            "imu_accelerometer": (N, 3),
            "tau": (N, n),
            "base_position": (N, 3),
            "contact": (N, c),
        }
        for name, shape in shapes.items():
            arr = getattr(self, name)
            if arr is None:
                continue
            if arr.shape != shape:
                raise DataError(f"{name} has shape {arr.shape}: expected {shape}")
            if not np.all(np.isfinite(arr)):
                raise DataError(f"{name} holds NaN or Inf: clean or cut the record first")

    def slice(self, start: int, stop: int) -> FloatingBaseRecord:
        """Samples start .. stop - 1."""

        def cut(x: FloatArray | None) -> FloatArray | None:
            return None if x is None else x[start:stop]

        return FloatingBaseRecord(
            t=self.t[start:stop],
            joint_names=self.joint_names,
            q=self.q[start:stop],
            contact_names=self.contact_names,
            wrench=self.wrench[start:stop],
            imu_quaternion=self.imu_quaternion[start:stop],
            imu_gyro=self.imu_gyro[start:stop],
            imu_accelerometer=self.imu_accelerometer[start:stop],
            tau=cut(self.tau),
            base_position=cut(self.base_position),
            contact=cut(self.contact),
        )


def save_floating_record(path: str | Path, record: FloatingBaseRecord) -> None:
    """Write a record as NPZ (atomically)."""
    arrays = {
        "t": record.t,
        "joint_names": np.array(record.joint_names),
        "q": record.q,
        "contact_names": np.array(record.contact_names),
        "wrench": record.wrench,
        "imu_quaternion": record.imu_quaternion,
        "imu_gyro": record.imu_gyro,
        "imu_accelerometer": record.imu_accelerometer,
    }
    arrays.update({name: getattr(record, name) for name in _OPTIONAL if getattr(record, name) is not None})

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]  # numpy's stub types the first keyword

    atomic_write(path, write)


def load_floating_record(path: str | Path) -> FloatingBaseRecord:
    """Read a record written by `save_floating_record` (or any NPZ with its arrays).

    Raises:
        DataError: the file is missing, not an NPZ, or lacks an array.
    """
    path = Path(path)
    try:
        with open_npz(path) as data:
            arrays = {name: data[name] for name in data.files}
    except DataError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot read the floating-base record {path}: {exc}") from None
    required = ("t", "joint_names", "q", "contact_names", "wrench", "imu_quaternion", "imu_gyro", "imu_accelerometer")
    missing = [name for name in required if name not in arrays]
    if missing:
        raise DataError(f"{path}: arrays {missing} are missing (a floating-base record holds {list(required)})")
    floats = {
        name: np.asarray(arrays[name], dtype=float)
        for name in ("t", "q", "wrench", "imu_quaternion", "imu_gyro", "imu_accelerometer", *_OPTIONAL)
        if name in arrays
    }
    return FloatingBaseRecord(
        joint_names=tuple(str(x) for x in arrays["joint_names"]),
        contact_names=tuple(str(x) for x in arrays["contact_names"]),
        **floats,
    )
