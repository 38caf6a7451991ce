"""The fleet's parameter store: one Parquet file per identified recording, queried with DuckDB.

Layout: ``STORE/rows/<robot>/<key>.parquet``, one row each, where ``key`` is the recording's
content hash plus the hash of the identification settings and robot config
(`motor_ident.fleet.worker.row_key`). Columns: ``robot``, ``recording``, ``time`` [s since the
Unix epoch], ``date``, ``config``, ``config_hash``, ``content_hash``, ``settings_hash``,
``method``, ``torque_source``, ``motor_ident_version``, ``condition_number``, ``task_seconds`` and
``task_cpu_seconds`` (wall and CPU time of the identification in its worker), ``r2.<joint>``,
``nrmse.<joint>``, and for every base parameter ``p.<name>`` (value, SI units) and
``std.<name>`` (its standard deviation); ``parameter_labels`` (JSON) gives each base parameter's
joint and full expression.

Every file is written to a temporary name beside it and renamed (`motor_ident.io.data.
atomic_write`): a crashed run leaves whole rows or none, and the temporary names (``.*.tmp``) are
not read. A resumed run skips the keys already present, and writing a key twice replaces the file
with the same row, so there are no duplicates. Read it from Python without motor_ident::

    import duckdb
    rows = "read_parquet('STORE/rows/*/*.parquet', union_by_name=true)"
    duckdb.sql(f'SELECT robot, date, "p.elbow.fv", "std.elbow.fv" FROM {rows} ORDER BY robot, time').df()
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from motor_ident.errors import ClusterError, DataError
from motor_ident.io.data import atomic_write


class ParameterStore:
    """A directory of Parquet rows (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def rows_dir(self) -> Path:
        """Directory of the row files."""
        return self.root / "rows"

    def path(self, robot: str, key: str) -> Path:
        """File of one row."""
        return self.rows_dir / robot / f"{key}.parquet"

    def keys(self) -> set[str]:
        """Keys of every stored row."""
        return {key for _, key in self.rows()}

    def rows(self) -> set[tuple[str, str]]:
        """(robot, key) of every stored row: the same recording may be stored under two robots."""
        if not self.rows_dir.is_dir():
            return set()
        return {(p.parent.name, p.stem) for p in self.rows_dir.glob("*/*.parquet")}

    def check_writable(self) -> None:
        """Write and remove a probe file in the rows directory (created), before any work is done.

        Raises:
            ClusterError: the store cannot be created or written (read-only, not a directory, full).
        """
        try:
            atomic_write(self.rows_dir / ".probe", lambda tmp: tmp.write_bytes(b"motor_ident"))
            (self.rows_dir / ".probe").unlink()
        except OSError as exc:
            raise ClusterError(f"parameter store {self.root} cannot be written: {exc}") from None

    def write(self, row: Mapping[str, Any]) -> Path:
        """Store one row (a ``key`` and a ``robot`` among its columns) atomically; return its file."""
        path = self.path(str(row["robot"]), str(row["key"]))
        table = pa.Table.from_pylist([dict(row)])
        atomic_write(path, lambda tmp: pq.write_table(table, tmp))
        return path

    def __len__(self) -> int:
        return len(self.rows())

    def _glob(self) -> str:
        return str(self.rows_dir / "*" / "*.parquet")

    def query(self, sql: str) -> pd.DataFrame:
        """Run DuckDB SQL over the view ``rows`` (every row, columns united by name).

        Raises:
            DataError: the store holds no rows.
        """
        if not self.keys():
            raise DataError(f"parameter store {self.root} holds no rows: run motor-ident fleet identify first")
        connection = duckdb.connect()
        try:
            connection.read_parquet(self._glob(), union_by_name=True).create_view("rows")
            return connection.execute(sql).df()
        finally:
            connection.close()

    def frame(self) -> pd.DataFrame:
        """Every row, one per (robot, recording, settings), sorted by robot and time."""
        return self.query("SELECT * FROM rows ORDER BY robot, time")
