"""Transmissions: gear ratios and coupling matrices between motors and joints (Guedelha et al. 2021, sec. 2.4).

Three places along one actuation chain (Guedelha et al. 2021, Fig. 4 and 9):

- the rotor ``R`` (motor encoder): rotor velocity ``qd_rotor`` [rad/s], rotor torque;
- the gearbox output ``G`` ("motor side" in this module): ``qd_motor = qd_rotor / rho``,
  ``tau_motor = rho tau_rotor`` (eq. 7-8, friction left to the friction model);
- the joints: for a group of ``n`` joints driven by ``n`` motors through a differential,
  ``qd_joint = T qd_motor`` (eq. 11, 33).

Torques follow from power conservation, ``tau_joint' qd_joint = tau_motor' qd_motor`` for every
motion (Axiom 0.1). Derived again here because the extracted equations lost their transposes:
``tau_joint' T qd_motor = tau_motor' qd_motor`` for all ``qd_motor`` gives
``tau_motor = T' tau_joint`` and ``tau_joint = T^-T tau_motor`` (eq. 12, 34). One motor ``c``
alone then sees ``tau_motor_c = T[:, c]' tau_joint`` (sec. 3.4.2).

Inertia (eq. 10): a rotor plus wave generator of inertia ``I`` behind a ratio ``rho`` is seen at G as
``rho^2 I``. Through the coupling, the kinetic energy ``1/2 qd_motor' D qd_motor`` with
``D = diag(rho^2 I)`` reads ``1/2 qd_joint' T^-T D T^-1 qd_joint`` at the joints: a full matrix,
not a per-joint armature.

Friction and rotor inertia of a coupled motor act on THAT motor's motion: its chain adds
``tau_motor_c = Ia_c qdd_motor_c + f_c(qd_motor_c)`` at its gearbox output (``Ia_c = rho_c^2 I_c``,
``qd_motor_c`` row c of ``T^-1 qd_joint``), felt at the joints as ``T^-T tau_motor``: the same row c of
``T^-1``, now as a column. On a Staubli TX40's wrist, motor 6 turns at 32 (q5 + q6): its friction
follows ``qd5 + qd6`` and loads joints 5 and 6 alike. `CoupledMotorDrives` is that model, used by
the regressor, the estimators and the feedforward; a per-joint friction on ``qd6`` cannot
represent it (it has the wrong velocity, and nothing on joint 5).

Positions are mapped like velocities with zero offsets (``q_joint = T q_motor``), which is what a
cable differential does around its calibration pose. Every conversion accepts one sample (n,) or
samples (N, n); rows are samples. All arrays are in the order of ``joints`` / ``motors``.

Design note: T is validated once, when the group is built (square, finite, dimensions matching the
names, condition number below ``max_condition``); an ill-conditioned coupling would make
``T^-1`` amplify encoder noise and torque-sensor noise into the motor-side signals by up to cond(T),
so such a config is refused rather than silently identified badly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionShape, friction_regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


def _names(values: Sequence[str], key: str) -> tuple[str, ...]:
    if isinstance(values, str) or not all(isinstance(v, str) and v for v in values):
        raise ConfigError(f"{key} = {values!r}: expected a list of non-empty names")
    out = tuple(values)
    duplicated = sorted({v for v in out if out.count(v) > 1})
    if duplicated:
        raise ConfigError(f"{key} = {list(out)}: names {duplicated} appear more than once")
    return out


def _per_motor(values: Sequence[float], n: int, key: str, default: float) -> tuple[float, ...]:
    if len(values) == 0:
        return (default,) * n
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} = {values!r}: expected {n} numbers") from None
    if len(out) != n or not all(np.isfinite(out)):
        raise ConfigError(f"{key} = {list(out)}: expected {n} finite numbers (one per motor)")
    return out


class _JointMotorMaps:
    """Conversions between joint space and motor space through ``T``, shared by a group and a whole robot.

    Needs ``T``, ``T_inv`` (n, n), ``gear_ratio`` (n,) and ``n``; inputs are (n,) or (N, n) in the
    order of ``joints`` (joint side) or ``motors`` (motor side) and keep their shape.
    """

    T: FloatArray
    T_inv: FloatArray
    gear_ratio: ArrayLike
    joints: tuple[str, ...]
    _label = ""

    @property
    def n(self) -> int:
        """Number of joints (= motors)."""
        return len(self.joints)

    def _check(self, x: ArrayLike, what: str) -> FloatArray:
        x = np.asarray(x, dtype=float)
        if x.ndim not in (1, 2) or x.shape[-1] != self.n:
            raise ConfigError(f"{self._label}{what} has shape {x.shape}: expected ({self.n},) or (N, {self.n})")
        return x

    def motor_velocity(self, qd_joint: ArrayLike) -> FloatArray:
        """Joint velocities -> gearbox-output velocities ``T^-1 qd_joint`` [rad/s] (also accelerations)."""
        return self._check(qd_joint, "qd_joint") @ self.T_inv.T

    def joint_velocity(self, qd_motor: ArrayLike) -> FloatArray:
        """Gearbox-output velocities -> joint velocities ``T qd_motor`` [rad/s] (also accelerations)."""
        return self._check(qd_motor, "qd_motor") @ self.T.T

    def motor_position(self, q_joint: ArrayLike) -> FloatArray:
        """Joint positions -> gearbox-output positions ``T^-1 q_joint`` [rad]."""
        return self._check(q_joint, "q_joint") @ self.T_inv.T

    def joint_position(self, q_motor: ArrayLike) -> FloatArray:
        """Gearbox-output positions -> joint positions ``T q_motor`` [rad]."""
        return self._check(q_motor, "q_motor") @ self.T.T

    def motor_torque(self, tau_joint: ArrayLike) -> FloatArray:
        """Joint torques (or torque commands) -> gearbox-output torques ``T' tau_joint`` [N m]."""
        return self._check(tau_joint, "tau_joint") @ self.T

    def joint_torque(self, tau_motor: ArrayLike) -> FloatArray:
        """Gearbox-output torques -> joint torques ``T^-T tau_motor`` [N m]."""
        return self._check(tau_motor, "tau_motor") @ self.T_inv

    def rotor_velocity(self, qd_motor: ArrayLike) -> FloatArray:
        """Gearbox-output velocities -> rotor velocities ``rho qd_motor`` [rad/s] (motor encoders; also positions)."""
        qd_rotor: FloatArray = self._check(qd_motor, "qd_motor") * np.asarray(self.gear_ratio, dtype=float)
        return qd_rotor

    def motor_velocity_from_rotor(self, qd_rotor: ArrayLike) -> FloatArray:
        """Rotor velocities (motor encoders) -> gearbox-output velocities ``qd_rotor / rho`` [rad/s]."""
        qd_motor: FloatArray = self._check(qd_rotor, "qd_rotor") / np.asarray(self.gear_ratio, dtype=float)
        return qd_motor

    def rotor_torque(self, tau_motor: ArrayLike) -> FloatArray:
        """Gearbox-output torques -> torques at the rotor ``tau_motor / rho`` [N m] (frictionless gearbox)."""
        tau_rotor: FloatArray = self._check(tau_motor, "tau_motor") / np.asarray(self.gear_ratio, dtype=float)
        return tau_rotor


@dataclass(frozen=True)
class TransmissionGroup(_JointMotorMaps):
    """Joints driven together by as many motors through a coupling matrix (the YAML ``couplings`` entry).

    Attributes:
        name: group name, used in error messages.
        joints: the group's joint names, order of the rows of T.
        motors: the group's motor names, order of the columns of T.
        coupling: T, rows of floats, ``qd_joint = T qd_motor`` at the gearbox outputs, shape (n, n) [-].
        gear_ratio: rho per motor, ``qd_rotor = rho qd_motor`` [-]; all 1 when empty.
        rotor_inertia: rotor plus gearbox input inertia per motor, rotor side [kg m^2]; 0 when empty.
        max_condition: largest accepted 2-norm condition number of T.
    """

    name: str
    joints: tuple[str, ...]
    motors: tuple[str, ...]
    coupling: tuple[tuple[float, ...], ...]
    gear_ratio: tuple[float, ...] = ()
    rotor_inertia: tuple[float, ...] = ()
    max_condition: float = 100.0
    T: FloatArray = field(init=False, repr=False, compare=False)
    T_inv: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"coupling group {self.name!r}"
        joints = _names(self.joints, f"{where}: joints")
        motors = _names(self.motors, f"{where}: motors")
        n = len(joints)
        if n == 0:
            raise ConfigError(f"{where}: joints = []: expected at least one joint")
        if len(motors) != n:
            raise ConfigError(
                f"{where}: {n} joints {list(joints)} but {len(motors)} motors {list(motors)}: "
                "expected one motor per joint (T square)"
            )
        try:
            T = np.array(self.coupling, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: coupling = {self.coupling!r}: expected {n} rows of {n} numbers") from None
        if T.shape != (n, n):
            raise ConfigError(f"{where}: coupling has shape {T.shape}: expected ({n}, {n}) for joints {list(joints)}")
        if not np.all(np.isfinite(T)):
            raise ConfigError(f"{where}: coupling = {T.tolist()}: expected finite numbers")
        if not np.isfinite(self.max_condition) or self.max_condition < 1.0:
            raise ConfigError(f"{where}: max_condition = {self.max_condition!r}: expected a finite number >= 1")
        condition = float(np.linalg.cond(T))
        if not np.isfinite(condition) or condition > self.max_condition:
            raise ConfigError(
                f"{where}: coupling matrix is singular or ill-conditioned, condition number {condition:.4g} "
                f"> max_condition {self.max_condition:g}: T = {T.tolist()}"
            )
        ratio = _per_motor(self.gear_ratio, n, f"{where}: gear_ratio", 1.0)
        if not all(r > 0.0 for r in ratio):
            raise ConfigError(f"{where}: gear_ratio = {list(ratio)}: expected values > 0")
        inertia = _per_motor(self.rotor_inertia, n, f"{where}: rotor_inertia", 0.0)
        if not all(i >= 0.0 for i in inertia):
            raise ConfigError(f"{where}: rotor_inertia = {list(inertia)}: expected values >= 0")
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "motors", motors)
        object.__setattr__(self, "coupling", tuple(tuple(float(x) for x in row) for row in T))
        object.__setattr__(self, "gear_ratio", ratio)
        object.__setattr__(self, "rotor_inertia", inertia)
        T.setflags(write=False)
        T_inv = np.linalg.inv(T)
        T_inv.setflags(write=False)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "T_inv", T_inv)

    @property
    def _label(self) -> str:  # type: ignore[override]
        return f"coupling group {self.name!r}: "

    @property
    def condition_number(self) -> float:
        """2-norm condition number of T."""
        return float(np.linalg.cond(self.T))

    @property
    def reflected_inertia(self) -> FloatArray:
        """rho^2 I per motor, seen at the gearbox output, shape (n,) [kg m^2] (Guedelha et al. 2021, eq. 10)."""
        reflected: FloatArray = np.asarray(self.gear_ratio, dtype=float) ** 2 * np.asarray(
            self.rotor_inertia, dtype=float
        )
        return reflected

    def joint_inertia(self) -> FloatArray:
        """Motor-side inertia seen at the joints, ``T^-T diag(rho^2 I) T^-1``, shape (n, n) [kg m^2]."""
        return self.T_inv.T @ np.diag(self.reflected_inertia) @ self.T_inv


def uncoupled_group(
    joint: str, *, motor: str | None = None, gear_ratio: float = 1.0, rotor_inertia: float = 0.0
) -> TransmissionGroup:
    """A one-joint group (T = [[1]]) for a joint driven by its own motor (named after the joint by default)."""
    return TransmissionGroup(
        name=joint,
        joints=(joint,),
        motors=(motor or joint,),
        coupling=((1.0,),),
        gear_ratio=(gear_ratio,),
        rotor_inertia=(rotor_inertia,),
    )


@dataclass(frozen=True)
class Transmission(_JointMotorMaps):
    """Every joint of a robot with its motors: coupled groups plus one-joint groups for the rest.

    Build it with `build_transmission`. Motor order: the joints are walked in ``joints`` order, and
    a group's motors are placed, in the group's order, where its first joint is met.

    Attributes:
        joints: all joints, the order of joint-side arrays (n,).
        groups: the groups, each joint in exactly one.
        motors: all motors, the order of motor-side arrays (n,).
        T: the full coupling matrix, ``qd_joint = T qd_motor``, shape (n, n).
    """

    joints: tuple[str, ...]
    groups: tuple[TransmissionGroup, ...]
    motors: tuple[str, ...] = field(init=False)
    T: FloatArray = field(init=False, repr=False, compare=False)
    T_inv: FloatArray = field(init=False, repr=False, compare=False)
    gear_ratio: FloatArray = field(init=False, repr=False, compare=False)
    rotor_inertia: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        joints = _names(self.joints, "transmission joints")
        owner: dict[str, TransmissionGroup] = {}
        for group in self.groups:
            for joint in group.joints:
                if joint not in joints:
                    raise ConfigError(
                        f"coupling group {group.name!r}: joint {joint!r} is not in the joints {list(joints)}"
                    )
                if joint in owner:
                    raise ConfigError(
                        f"joint {joint!r} is in coupling groups {owner[joint].name!r} and {group.name!r}: "
                        "expected one group per joint"
                    )
                owner[joint] = group
        missing = [j for j in joints if j not in owner]
        if missing:
            raise ConfigError(f"joints {missing} are in no transmission group (use uncoupled_group)")
        motors: list[str] = []
        ordered: list[TransmissionGroup] = []
        for joint in joints:
            group = owner[joint]
            if any(g is group for g in ordered):
                continue
            ordered.append(group)
            motors += group.motors
        motor_names = _names(motors, "transmission motors")
        n = len(joints)
        T = np.zeros((n, n))
        ratio, inertia = np.ones(n), np.zeros(n)
        for group in ordered:
            rows = [joints.index(j) for j in group.joints]
            cols = [motor_names.index(m) for m in group.motors]
            T[np.ix_(rows, cols)] = group.T
            ratio[cols] = group.gear_ratio
            inertia[cols] = group.rotor_inertia
        for name, value in (("T", T), ("T_inv", np.linalg.inv(T)), ("gear_ratio", ratio), ("rotor_inertia", inertia)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "groups", tuple(ordered))
        object.__setattr__(self, "motors", motor_names)

    @property
    def reflected_inertia(self) -> FloatArray:
        """rho^2 I per motor at the gearbox outputs, shape (n,) [kg m^2]."""
        return self.gear_ratio**2 * self.rotor_inertia

    def group_of(self, name: str) -> TransmissionGroup:
        """The group holding joint or motor ``name``.

        Raises:
            ConfigError: no group holds that name.
        """
        for group in self.groups:
            if name in group.joints or name in group.motors:
                return group
        raise ConfigError(f"{name!r} is neither a joint {list(self.joints)} nor a motor {list(self.motors)}")


def build_transmission(
    joints: Sequence[str],
    groups: Sequence[TransmissionGroup] = (),
    *,
    gear_ratio: ArrayLike | None = None,
    rotor_inertia: ArrayLike | None = None,
) -> Transmission:
    """The `Transmission` of ``joints``: the coupled ``groups`` plus a one-motor group per other joint.

    Args:
        joints: all joint names, length n.
        groups: coupled groups; their joints must be among ``joints``, each in one group only.
        gear_ratio: rho per joint, shape (n,), used for the uncoupled joints (1 when None).
        rotor_inertia: rotor-side inertia per joint, shape (n,) [kg m^2], for the uncoupled joints.

    Raises:
        ConfigError: a group names an unknown joint, a joint is in two groups, names repeat.
    """
    joints = tuple(joints)
    n = len(joints)
    ratio = np.ones(n) if gear_ratio is None else np.broadcast_to(np.asarray(gear_ratio, dtype=float), (n,))
    inertia = np.zeros(n) if rotor_inertia is None else np.broadcast_to(np.asarray(rotor_inertia, dtype=float), (n,))
    coupled = {j for g in groups for j in g.joints}
    singles = [
        uncoupled_group(j, gear_ratio=float(ratio[k]), rotor_inertia=float(inertia[k]))
        for k, j in enumerate(joints)
        if j not in coupled
    ]
    return Transmission(joints=joints, groups=tuple(groups) + tuple(singles))


@dataclass(frozen=True, eq=False)
class CoupledMotorDrives:
    """Rotor inertia and friction of the motors of coupled groups, each on its own motor's motion.

    Column block of the joint-torque regressor (module docstring): for motor c with the row
    ``r_c`` of ``T^-1`` (``qd_motor_c = r_c . qd_joint``), the joints feel ``r_c' Ia_c qdd_motor_c``
    and ``r_c' f_c(qd_motor_c)``. Parameters are laid out as ``[Ia of every motor | friction of
    motor 1 | ...]`` (Ia only with ``inertia``); values at the gearbox output [kg m^2, N m, N m s/rad].

    Build it with `coupled_motor_drives`. Motors of one-motor groups and of diagonal couplings are
    left out: their motion is their joint's, which the per-joint columns already model.

    Attributes:
        motors: the modelled motors, length m.
        motor_from_joint: their rows of ``T^-1``, shape (m, n): ``qd_motor = qd_joint @ motor_from_joint.T``.
        friction: friction model per motor, length m.
        inertia: include one reflected rotor inertia ``rho^2 I`` per motor.
    """

    motors: tuple[str, ...]
    motor_from_joint: FloatArray
    friction: tuple[FrictionShape, ...]
    inertia: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names: ``<motor>.Ia`` then ``<motor>.<friction parameter>`` per motor."""
        inertias = [f"{m}.Ia" for m in self.motors] if self.inertia else []
        return tuple(inertias + [f"{m}.{p}" for m, shape in zip(self.motors, self.friction) for p in shape.names])

    @property
    def n_parameters(self) -> int:
        """Number of columns of the block."""
        return len(self.names)

    @property
    def n_inertia(self) -> int:
        """Number of rotor-inertia parameters (m, or 0 without ``inertia``)."""
        return len(self.motors) if self.inertia else 0

    def motor_motion(self, qd_joint: ArrayLike) -> FloatArray:
        """Joint velocities (or accelerations) (N, n) -> the modelled motors' gearbox-output ones (N, m)."""
        motion: FloatArray = np.atleast_2d(np.asarray(qd_joint, dtype=float)) @ self.motor_from_joint.T
        return motion

    def columns(self, qd_joint: ArrayLike, qdd_joint: ArrayLike) -> FloatArray:
        """The block of regressor columns, shape (N, n, `n_parameters`), from joint motion (N, n) [rad/s, rad/s^2]."""
        qd_motor, qdd_motor = self.motor_motion(qd_joint), self.motor_motion(qdd_joint)
        N, n = qd_motor.shape[0], self.motor_from_joint.shape[1]
        out = np.zeros((N, n, self.n_parameters))
        start = self.n_inertia
        for c, shape in enumerate(self.friction):
            row = self.motor_from_joint[c]
            if self.inertia:
                out[:, :, c] = qdd_motor[:, c, None] * row
            F = friction_regressor(qd_motor[:, c], shape)
            out[:, :, start : start + shape.n_parameters] = row[None, :, None] * F[:, None, :]
            start += shape.n_parameters
        return out

    def torque(self, qd_joint: ArrayLike, qdd_joint: ArrayLike, values: ArrayLike) -> FloatArray:
        """Joint torques of the motors' inertia and friction (N, n) [N m] for the block's ``values``."""
        tau: FloatArray = self.columns(qd_joint, qdd_joint) @ np.asarray(values, dtype=float)
        return tau


def coupled_motor_drives(
    transmission: Transmission, friction: Sequence[FrictionShape], *, inertia: bool = True
) -> CoupledMotorDrives:
    """The `CoupledMotorDrives` of the motors of ``transmission``'s coupled (non-diagonal) groups.

    Args:
        transmission: the robot's transmission.
        friction: friction model per motor, in ``transmission.motors`` order.
        inertia: model each motor's reflected rotor inertia too.

    Raises:
        ConfigError: ``friction`` does not hold one model per motor.
    """
    if len(friction) != len(transmission.motors):
        raise ConfigError(f"{len(friction)} friction models for the motors {list(transmission.motors)}")
    coupled = [
        m
        for group in transmission.groups
        if np.count_nonzero(group.T - np.diag(np.diag(group.T))) > 0
        for m in group.motors
    ]
    index = [transmission.motors.index(m) for m in coupled]
    rows = np.array(transmission.T_inv[index], dtype=float).reshape(len(index), transmission.n)
    rows.setflags(write=False)
    return CoupledMotorDrives(
        motors=tuple(coupled), motor_from_joint=rows, friction=tuple(friction[k] for k in index), inertia=inertia
    )
