"""The command line of ``identify`` and ``validate`` as frozen, typed options objects.

The parsed flags become one `IdentifyOptions` / `ValidateOptions` at the command's boundary
(``cmd_identify`` / ``cmd_validate``); the stages below take it, never an ``argparse.Namespace``.
`RecordingOptions` holds how a recording is read, cropped, differentiated and turned into joint
torque (`motor_ident.commands.data_options`, `motor_ident.commands.torque_options`), shared by
DATA, ``--payload-data`` and ``--validate-on``'s DATA2.

A new flag of those commands is a new field here: ``tests/commands/test_pipeline.py`` checks that
every flag the parser defines lands in a field, so none is silently dropped on the way.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def _from_namespace(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """``cls`` with every field the parsed flags hold (others keep their defaults), then ``given``."""
    values = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}  # type: ignore[arg-type]
    values.update(given)
    for name, value in values.items():
        if isinstance(value, list):
            values[name] = tuple(value)
    return cls(**values)


@dataclass(frozen=True)
class RecordingOptions:
    """How a recording is read and prepared: the options of `add_data_arguments` and `add_torque_arguments`.

    Attributes:
        keep_origin: where the kept range comes from, said with the validation notes ('' for DATA).
        params: the parameter file whose drive gains ``validate`` uses (named in its messages).
    """

    spec: str | None = None
    keep_time: str | None = None
    keep_samples: str | None = None
    resample_hz: float | None = None
    resample: str | None = None
    derivative: str | None = None
    savgol_window: float | None = None
    cutoff_hz: float | None = None
    filter_torque: bool | None = None
    torque_source: str | None = None
    gains: str | None = None
    payload_data: str | None = None
    payload_mass: float | None = None
    payload_frame: str = ""
    joint_states_topic: str = "/joint_states"
    motor_states_topic: str = "/motor_states"
    wrench_topic: str = "/ft_sensor/wrench"
    keep_origin: str = ""
    params: str | None = None

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> RecordingOptions:
        """The recording options of parsed flags."""
        return _from_namespace(cls, args)


@dataclass(frozen=True)
class IdentifyOptions:
    """``motor-ident identify``: what to read, how to fit, what to write.

    Output paths are as given (None: not written); `report_directory` resolves the report's default.
    """

    data: str
    robot: str
    recording: RecordingOptions
    method: str = "wls"
    alpha: float = 0.9
    validate: float | None = None
    out: str | None = None
    json: str | None = None
    report: str | None = None
    no_report: bool = False
    online: str | None = None
    validate_on: str | None = None
    validate_spec: str | None = None
    validate_keep_time: str | None = None
    validate_keep_samples: str | None = None
    max_rre: str | None = None
    min_r2: str | None = None
    urdf_out: str | None = None
    floating_base: bool = False
    rows: str = "base"
    imu_tilt: str = "estimate"
    orientation_noise: str = "correct"
    imu_topic: str = "/imu/data"
    foot_wrench_topic: tuple[str, ...] = field(default=())

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> IdentifyOptions:
        """The options of ``identify``'s parsed flags."""
        return _from_namespace(cls, args, recording=RecordingOptions.from_namespace(args))

    def report_directory(self) -> Path | None:
        """Where the HTML report goes: ``--report``, else beside ``--out`` / ``--json``, else nowhere."""
        if self.no_report:
            return None
        if self.report:
            return Path(self.report)
        for given in (self.out, self.json):
            if given:
                path = Path(given)
                return path.with_name(f"{path.stem}_report")
        return None

    def validation_recording(self) -> RecordingOptions:
        """How ``--validate-on``'s DATA2 is read: its own spec and range, DATA's other preparation."""
        spec = self.validate_spec or self.recording.spec
        keep_time, keep_samples = self.validate_keep_time, self.validate_keep_samples
        if keep_time or keep_samples:
            flag = "time" if keep_time else "samples"
            origin = f"--validate-keep-{flag} {keep_time or keep_samples}"
        elif self.validate_spec:
            origin = f"--validate-spec {self.validate_spec} (its keep:, or the whole recording)"
        elif self.recording.spec:
            origin = (
                f"the data spec {self.recording.spec} (its keep:, or the whole recording; --validate-keep-time, "
                "--validate-keep-samples or --validate-spec give DATA2 another)"
            )
        else:
            origin = "the whole recording (--keep-time / --keep-samples apply to DATA only)"
        return replace(self.recording, spec=spec, keep_time=keep_time, keep_samples=keep_samples, keep_origin=origin)


@dataclass(frozen=True)
class ValidateOptions:
    """``motor-ident validate``: the parameter file, the recording it predicts, the verdict's limits, outputs."""

    params: str
    data: str
    robot: str
    recording: RecordingOptions
    max_rre: str | None = None
    min_r2: str | None = None
    json: str | None = None
    report: str | None = None
    urdf_out: str | None = None

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> ValidateOptions:
        """The options of ``validate``'s parsed flags."""
        return _from_namespace(cls, args, recording=RecordingOptions.from_namespace(args))
