"""Writing rosbag2 bags (MCAP or sqlite3) with the rosbags library."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from rosbags.interfaces import Qos
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from motor_ident.io.bags.qos import SENSOR_QOS, standard_qos
from motor_ident.io.bags.series import BagError
from motor_ident.io.bags.storage import BOOL, FLOAT64_ARRAY, IMU, JOINT_STATE, WRENCH_STAMPED

FloatArray = NDArray[np.float64]


# -- writing -------------------------------------------------------------------------------------


class BagWriter:
    """Write the standard topics into a rosbag2 (version 9) directory, atomically.

    Use as a context manager; messages go into ``<path>.tmp-*`` beside ``path``, which is renamed
    to ``path`` when the block ends without error (and deleted otherwise).

    Args:
        path: the bag directory to create; must not exist.
        storage: ``mcap`` (default, what ``ros2 bag record`` writes since Iron) or ``sqlite3``.

    Raises:
        BagError: ``path`` exists or the storage is unknown.
    """

    def __init__(self, path: str | Path, *, storage: str = "mcap") -> None:
        self.path = Path(path)
        plugins = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
        if storage not in plugins:
            raise BagError(f"storage = {storage!r}: expected 'mcap' or 'sqlite3'")
        if self.path.exists():
            raise BagError(f"{self.path} exists already: choose another --out or remove it")
        self.storage = storage
        self._plugin = plugins[storage]
        self.typestore = get_typestore(Stores.LATEST)
        self._types = self.typestore.types
        self._writer: Any = None
        self._tmp: Path | None = None
        self._connections: dict[str, Any] = {}

    def __enter__(self) -> BagWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.tmp-", dir=self.path.parent))
        self._tmp.rmdir()  # rosbags creates the directory itself
        self._writer = Writer(self._tmp, version=9, storage_plugin=self._plugin)
        self._writer.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._writer is not None and self._tmp is not None
        if exc_type is None:
            self._writer.close()
            # rosbags names the storage file after the directory: give it the bag's name.
            for file in self._tmp.iterdir():
                if file.stem == self._tmp.name:
                    file.rename(self._tmp / f"{self.path.name}{file.suffix}")
            meta = self._tmp / "metadata.yaml"
            meta.write_text(meta.read_text().replace(self._tmp.name, self.path.name))
            if self.path.exists():
                shutil.rmtree(self._tmp, ignore_errors=True)
                raise BagError(f"{self.path} appeared while recording: the recording was discarded")
            self._tmp.rename(self.path)
        else:
            try:
                self._writer.close()
            finally:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def add_topic(self, topic: str, msgtype: str, offered_qos: Sequence[Qos]) -> None:
        """Declare ``topic`` of type ``msgtype`` (``pkg/msg/Name``) with its publishers' QoS profiles.

        Raises:
            BagError: rosbags does not know ``msgtype`` (its definition goes into the bag).
        """
        if msgtype not in self._types:
            raise BagError(f"{topic}: message type {msgtype} is not one rosbags knows, so its definition is missing")
        self._connections[topic] = self._writer.add_connection(
            topic, msgtype, typestore=self.typestore, offered_qos_profiles=list(offered_qos)
        )

    def raw(self, topic: str, t_ns: int, data: bytes) -> None:
        """A message of a declared topic (`add_topic`) as CDR bytes, received at ``t_ns`` [ns since the epoch]."""
        self._writer.write(self._connections[topic], int(t_ns), data)

    def _write(self, topic: str, msgtype: str, t_ns: int, msg: Any, qos: Qos | None = None) -> None:
        """Serialize ``msg`` onto ``topic``, declared on first use with ``qos`` (None: its standard profile)."""
        if topic not in self._connections:
            self.add_topic(topic, msgtype, [standard_qos(topic) if qos is None else qos])
        self._writer.write(self._connections[topic], int(t_ns), self.typestore.serialize_cdr(msg, msgtype))

    def _header(self, t: float, frame_id: str = "") -> Any:
        sec = int(np.floor(t))
        nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)
        Time = self._types["builtin_interfaces/msg/Time"]
        return self._types["std_msgs/msg/Header"](stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id)

    def joint_state(
        self,
        topic: str,
        t: float,
        names: Sequence[str],
        position: ArrayLike | None = None,
        velocity: ArrayLike | None = None,
        effort: ArrayLike | None = None,
        *,
        stamp: float | None = None,
    ) -> None:
        """A JointState received at ``t`` [s], stamped ``stamp`` (``t`` when None); arrays (n,), empty where None."""

        def arr(x: ArrayLike | None) -> FloatArray:
            return np.zeros(0) if x is None else np.asarray(x, dtype=np.float64).ravel()

        msg = self._types[JOINT_STATE](
            header=self._header(t if stamp is None else stamp),
            name=list(names),
            position=arr(position),
            velocity=arr(velocity),
            effort=arr(effort),
        )
        self._write(topic, JOINT_STATE, round(t * 1e9), msg, SENSOR_QOS)

    def wrench(
        self,
        topic: str,
        t: float,
        force: ArrayLike,
        torque: ArrayLike,
        frame_id: str = "",
        *,
        stamp: float | None = None,
    ) -> None:
        """A WrenchStamped received at ``t`` [s], stamped ``stamp`` (``t`` when None): force (3,) [N],
        torque (3,) [N m] in ``frame_id``."""
        Vector3 = self._types["geometry_msgs/msg/Vector3"]
        f, m = (np.asarray(x, dtype=float) for x in (force, torque))
        msg = self._types[WRENCH_STAMPED](
            header=self._header(t if stamp is None else stamp, frame_id),
            wrench=self._types["geometry_msgs/msg/Wrench"](
                force=Vector3(x=f[0], y=f[1], z=f[2]), torque=Vector3(x=m[0], y=m[1], z=m[2])
            ),
        )
        self._write(topic, WRENCH_STAMPED, round(t * 1e9), msg, SENSOR_QOS)

    def imu(
        self, topic: str, t: float, quaternion: ArrayLike, gyro: ArrayLike, accelerometer: ArrayLike, frame_id: str = ""
    ) -> None:
        """An Imu at ``t`` [s]: orientation [qx, qy, qz, qw], angular velocity [rad/s], acceleration [m/s^2]."""
        Vector3 = self._types["geometry_msgs/msg/Vector3"]
        q, w, a = (np.asarray(x, dtype=float) for x in (quaternion, gyro, accelerometer))
        msg = self._types[IMU](
            header=self._header(t, frame_id),
            orientation=self._types["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2], w=q[3]),
            orientation_covariance=np.zeros(9),
            angular_velocity=Vector3(x=w[0], y=w[1], z=w[2]),
            angular_velocity_covariance=np.zeros(9),
            linear_acceleration=Vector3(x=a[0], y=a[1], z=a[2]),
            linear_acceleration_covariance=np.zeros(9),
        )
        self._write(topic, IMU, round(t * 1e9), msg, SENSOR_QOS)

    def array(self, topic: str, t: float, values: ArrayLike) -> None:
        """A Float64MultiArray received at ``t`` [s] (the ros2_controllers command format)."""
        layout = self._types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
        msg = self._types[FLOAT64_ARRAY](layout=layout, data=np.asarray(values, dtype=np.float64).ravel())
        self._write(topic, FLOAT64_ARRAY, round(t * 1e9), msg)

    def boolean(self, topic: str, t: float, value: bool) -> None:
        """A std_msgs/Bool received at ``t`` [s]."""
        self._write(topic, BOOL, round(t * 1e9), self._types[BOOL](data=bool(value)))
