"""A record's joint torques from the measurement its torque source reads (currents, PWM, wrench).

The conversion itself is `motor_ident.core.actuators.torque_sources.TorqueConverter`; this module
only finds the measurement in a `JointRecord` (motors reordered to the transmission's order) or in
an aligned bag.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from motor_ident.core.actuators.torque_sources import UNITS, TorqueConverter
from motor_ident.errors import DataError
from motor_ident.io.bags.series import BagData, align
from motor_ident.io.data import JointRecord


def motor_columns(record: JointRecord, name: str, motors: tuple[str, ...]) -> np.ndarray | None:
    """The record's ``current`` or ``pwm`` with columns in the order ``motors`` (N, m), or None.

    Raises:
        DataError: a motor of ``motors`` is not in the record.
    """
    values = getattr(record, name)
    if values is None:
        return None
    missing = [m for m in motors if m not in record.motor_names]
    if missing:
        raise DataError(
            f"{name} of motors {missing} are not in the data; it holds {list(record.motor_names)} "
            f"(the robot config's motors: {list(motors)})"
        )
    return np.asarray(values[:, [record.motor_names.index(m) for m in motors]], dtype=float)


def with_joint_torque(record: JointRecord, converter: TorqueConverter) -> JointRecord:
    """The record (joints in the converter's order, with qd and qdd) with ``tau`` from its torque source.

    Raises:
        DataError: the record lacks the measurement the source needs, or a joint or motor.
    """
    motors = converter.transmission.motors
    record = record.select(converter.transmission.joints).with_derivatives()
    assert record.qd is not None and record.qdd is not None
    if converter.kind == "joint_effort" and not record.tau_measured:
        raise DataError("the data holds no joint torques (tau): choose the torque source it measures")
    tau = converter.joint_torque(
        q=record.q,
        qd=record.qd,
        qdd=record.qdd,
        tau=record.tau,
        current=motor_columns(record, "current", motors) if converter.needs == "current" else None,
        pwm=motor_columns(record, "pwm", motors) if converter.needs == "pwm" else None,
        wrench=record.wrench,
    )
    return replace(record, tau=tau)


def bag_record(bag: BagData, joints: tuple[str, ...], kind: str) -> JointRecord:
    """A bag's joint states with the raw measurement of ``kind`` aligned on their stamps.

    ``motor_current`` and ``motor_pwm`` read ``motor_states.effort`` (A or duty), ``ft_sensor`` the
    wrench; samples outside a secondary topic's span are cut.

    Raises:
        DataError: the topic the source needs is not in the bag.
    """
    aligned = align(bag)
    js = bag.joint_states
    if js.position is None:
        raise DataError(f"{bag.path}: joint_states has no position: cannot identify from it")
    extra: dict[str, object] = {}
    if kind in ("motor_current", "motor_pwm"):
        if aligned.motor_effort is None:
            raise DataError(
                f"{bag.path}: torque source {kind!r} reads motor_states.effort ({UNITS[kind]}); "
                f"the bag has no motor states (topics: {sorted(bag.topics)})"
            )
        extra = {
            "motor_names": aligned.motor_names,
            "current" if kind == "motor_current" else "pwm": aligned.motor_effort,
        }
    elif kind == "ft_sensor":
        if aligned.force is None or aligned.torque is None:
            raise DataError(
                f"{bag.path}: torque source 'ft_sensor' needs the wrench topic; topics: {sorted(bag.topics)}"
            )
        extra = {"wrench": np.hstack([aligned.force, aligned.torque])}
    tau = js.effort if js.effort is not None else np.full(js.position.shape, np.nan)
    keep = aligned.valid
    if not np.any(keep):
        raise DataError(f"{bag.path}: the secondary topics of {kind!r} do not overlap the joint states")
    cut = {k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in extra.items()}
    record = JointRecord(
        t=js.t[keep],
        joint_names=js.names,
        q=js.position[keep],
        tau=tau[keep],
        qd=None if js.velocity is None else js.velocity[keep],
        **cut,  # type: ignore[arg-type]
    )
    return record.select(joints)
