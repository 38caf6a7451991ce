"""Robot configs: a URDF plus a YAML file describing the identified joints and their drives.

Schema (see ``config/valkyrie_arm.yaml`` for a commented example)::

    robot:
      name: valkyrie_arm
      urdf: urdf/valkyrie_arm.urdf        # path relative to the YAML file (or example-robot-data:<robots/...>)
      joints: [j1, j2, ...]               # identified joints, in the order of every array
      gravity: [0.0, 0.0, -9.81]          # m/s^2, base frame
      friction: {kind: coulomb_viscous}   # default friction model of every joint
      reflected_inertia: true             # identify rho^2 I_m per joint (false: no rotors)
      joint_parameters:                   # optional, per joint
        j1:
          gear_ratio: 100.0               # rho [-]
          rotor_inertia: 1.0e-5           # I_m, motor side [kg m^2]
          friction: {kind: stribeck}      # overrides the default model
          friction_values: [1.0, 0.3]     # nominal values in the model's parameter order
          motor: {k_pwm: 40.0, tau_0: 0.0, back_emf: 0.0, duty_limit: 1.0}
      couplings:                          # optional: joints driven together through a differential
        waist:                            # group name
          joints: [j1, j2]                # rows of T
          motors: [m1, m2]                # columns of T; one motor per joint
          coupling: [[0.5, 0.5], [0.5, -0.5]]   # T: qd_joint = T qd_motor (gearbox outputs) [-]
          max_condition: 100.0            # refuse a T with a larger 2-norm condition number
          motor_parameters:               # per motor, the keys of joint_parameters
            m1: {gear_ratio: 100.0, rotor_inertia: 1.0e-5, friction_values: [1.0, 0.3],
                 motor: {k_pwm: 40.0}}
      torque_source:                      # optional; default kind: joint_effort
        kind: motor_current               # joint_effort | motor_current | motor_pwm | ft_sensor
        drive_gains: {m1: 10.0, m2: 8.0}  # per motor [N m/A]; omitted = unknown (identify them)
        gain_side: joint                  # joint: gearbox output; motor: rotor (times rho)
        ft_frame: ''                      # ft_sensor: URDF frame of the sensor (or ft_joint: a joint)
      floating_base: {...}                # optional: a robot on its feet (`motor_ident.io.floating_base_config`)

A coupled joint's reflected rotor inertia is the full matrix T^-T diag(rho^2 I) T^-1 (see
`motor_ident.core.actuators.transmission`), so ``rotor_inertia`` belongs to the group's motors and a
coupled joint may not set its own (pinocchio's armature is per joint). Friction and motor values
under ``motor_parameters`` are those of each motor's chain, expressed at its gearbox output.

`load_robot_config` accepts a path to such a file or the name of a config shipped with
motor_ident (``valkyrie_arm``, ``szabo_3dof``, ...).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.actuators.friction import FrictionShape
from motor_ident.core.actuators.motor import MotorParameters
from motor_ident.core.actuators.torque_sources import TorqueConverter, TorqueSource, torque_converter
from motor_ident.core.actuators.transmission import (
    CoupledMotorDrives,
    Transmission,
    TransmissionGroup,
    build_transmission,
    coupled_motor_drives,
)
from motor_ident.core.estimation.identification import LARGEST_VALUE
from motor_ident.core.floating_base.model import FloatingBaseModel, load_floating_base_model
from motor_ident.core.rigid_body.model import RobotModel, load_robot_model
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError
from motor_ident.io.floating_base_config import FloatingBaseConfig, floating_base_from_dict
from motor_ident.io.params import DriveGains
from motor_ident.io.urdf_paths import EXAMPLE_ROBOT_PREFIX, example_robot_urdf
from motor_ident.io.urdf_robot import urdf_robot_mapping
from motor_ident.schema import config_number, read_yaml, require_mapping

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class JointConfig:
    """Drive data of one joint."""

    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0
    friction: FrictionShape = FrictionShape()
    friction_values: tuple[float, ...] | None = None
    motor: MotorParameters | None = None


@dataclass(frozen=True)
class CouplingConfig:
    """One ``couplings:`` entry: the transmission group and the drive data of each of its motors."""

    group: TransmissionGroup
    motor_parameters: tuple[JointConfig, ...]


@dataclass(frozen=True)
class RobotConfig:
    """A robot motor_ident can identify: URDF, joint order, gravity and per-joint drive data."""

    name: str
    urdf: Path
    joints: tuple[str, ...]
    gravity: tuple[float, float, float]
    joint_parameters: tuple[JointConfig, ...]
    reflected_inertia: bool = True
    source: Path | None = None
    couplings: tuple[CouplingConfig, ...] = ()
    torque_source: TorqueSource = TorqueSource()
    floating_base: FloatingBaseConfig | None = None

    def build_transmission(self) -> Transmission:
        """Every joint with its motor(s): the coupled groups plus one motor per other joint."""
        return build_transmission(
            self.joints,
            [c.group for c in self.couplings],
            gear_ratio=[j.gear_ratio for j in self.joint_parameters],
            rotor_inertia=[j.rotor_inertia for j in self.joint_parameters],
        )

    def motor_drives(self) -> tuple[JointConfig, ...]:
        """Drive data per motor, in the order of ``build_transmission().motors``.

        An uncoupled joint's motor carries the joint's own ``joint_parameters`` entry.
        """
        by_motor: dict[str, JointConfig] = {}
        for coupling in self.couplings:
            by_motor.update(zip(coupling.group.motors, coupling.motor_parameters))
        coupled_joints = {j for c in self.couplings for j in c.group.joints}
        for joint, drive in zip(self.joints, self.joint_parameters):
            if joint not in coupled_joints:
                by_motor[joint] = drive  # an uncoupled joint's motor is named after the joint
        return tuple(by_motor[m] for m in self.build_transmission().motors)

    def with_drive_gains(self, gains: DriveGains) -> RobotConfig:
        """This config with other drive gains (identified ones, from a parameter file) on their side.

        Raises:
            ConfigError: the gains do not name exactly this robot's motors.
        """
        motors = self.build_transmission().motors
        if set(gains.values) != set(motors):
            raise ConfigError(
                f"{gains.origin or 'drive gains'}: gains for motors {sorted(gains.values)}; "
                f"the robot {self.name} has motors {list(motors)}"
            )
        source = replace(self.torque_source, drive_gains=tuple(gains.values[m] for m in motors), gain_side=gains.side)
        return replace(self, torque_source=source)

    def torque_converter(self, kind: str | None = None, robot: RobotModel | None = None) -> TorqueConverter:
        """The conversion of this robot's measurements to joint torques (`torque_source`, or ``kind``).

        Raises:
            ConfigError: a constant the source needs is not in the config.
        """
        source = self.torque_source
        if kind is not None and kind != source.kind:
            # without a configured sensor frame: a sensor at the last identified joint's link
            ft_joint = source.ft_joint or ("" if source.ft_frame or kind != "ft_sensor" else self.joints[-1])
            source = replace(source, kind=kind, ft_joint=ft_joint)
        return torque_converter(
            source,
            self.build_transmission(),
            motors=[d.motor for d in self.motor_drives()],
            robot=(robot or self.build_model()) if source.kind == "ft_sensor" else None,
        )

    def build_model(self) -> RobotModel:
        """The `RobotModel` of the URDF reduced to ``joints``, with gear ratios and rotor inertias."""
        return load_robot_model(
            self.urdf,
            joint_names=self.joints,
            gravity=self.gravity,
            gear_ratio=[j.gear_ratio for j in self.joint_parameters],
            rotor_inertia=[j.rotor_inertia for j in self.joint_parameters],
        )

    def build_floating_base(self) -> FloatingBaseModel:
        """The free-flyer model of a robot with a ``floating_base`` section, wrenches at its sensor frames.

        Raises:
            ConfigError: no ``floating_base`` section, or its base link is not the URDF's root link.
        """
        if self.floating_base is None:
            raise ConfigError(f"robot {self.name!r} has no floating_base section: a fixed-base robot")
        floating = load_floating_base_model(
            self.urdf, joint_names=self.joints, contact_frames=self.floating_base.sensor_frames, gravity=self.gravity
        )
        if floating.base_link != self.floating_base.base_link:
            raise ConfigError(
                f"robot.floating_base.base_link = {self.floating_base.base_link!r}: the URDF's root link is "
                f"{floating.base_link!r}"
            )
        missing = [
            f
            for f in (self.floating_base.imu_frame, *self.floating_base.sole_frames)
            if not floating.model.existFrame(f)
        ]
        if missing:
            raise ConfigError(f"robot.floating_base: frames {missing} are not in the URDF")
        return floating

    def coupled_motor_drives(self) -> CoupledMotorDrives:
        """The rotor inertia and friction models of the coupled groups' motors (each on its own motion)."""
        return coupled_motor_drives(
            self.build_transmission(), [d.friction for d in self.motor_drives()], inertia=self.reflected_inertia
        )

    def build_regressor(self, robot: RobotModel | None = None) -> Regressor:
        """The full regressor (rigid body + reflected inertia + configured friction + coupled motors' terms)."""
        return Regressor(
            self.build_model() if robot is None else robot,
            [j.friction for j in self.joint_parameters],
            reflected_inertia=self.reflected_inertia,
            motor_drives=self.coupled_motor_drives() if self.couplings else None,
        )

    def nominal_friction(self) -> list[FloatArray]:
        """Nominal friction values per joint (zeros where none are configured)."""
        return [
            np.zeros(j.friction.n_parameters)
            if j.friction_values is None
            else np.asarray(j.friction_values, dtype=float)
            for j in self.joint_parameters
        ]

    def nominal_parameters(self, regressor: Regressor) -> FloatArray:
        """Full theta of the URDF's inertias, the rotor inertias and the nominal friction.

        Coupled motors' rotor inertia and friction are zero here: a group's ``motor_parameters``
        describe its motor chains for the nodes that model the chains themselves (the simulator,
        ``pwm_feedforward``), so a joint-torque model holding them too would count them twice.
        """
        return regressor.parameters(friction=self.nominal_friction())


def config_directories() -> list[Path]:
    """Where named configs are looked up, in order.

    ``$MOTOR_IDENT_CONFIG_PATH`` (colon separated), the ROS share directory when ament_index is
    available, the source tree's ``config/`` and ``<prefix>/share/motor_ident/config``.
    """
    dirs = [Path(p) for p in os.environ.get("MOTOR_IDENT_CONFIG_PATH", "").split(os.pathsep) if p]
    try:
        from ament_index_python.packages import get_package_share_directory

        dirs.append(Path(get_package_share_directory("motor_ident")) / "config")
    except Exception:  # not in a ROS workspace, or the package is not installed there
        pass
    dirs.append(Path(__file__).resolve().parents[2] / "config")
    dirs.append(Path(sys.prefix) / "share" / "motor_ident" / "config")
    return dirs


def find_config(name_or_path: str | Path) -> Path:
    """Path of a robot config given as a file path or a shipped config's name.

    Raises:
        ConfigError: nothing matches; the message lists the configs that exist.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    available: set[str] = set()
    for directory in config_directories():
        candidate = directory / f"{name_or_path}.yaml"
        if candidate.is_file():
            return candidate
        if directory.is_dir():
            available.update(p.stem for p in directory.glob("*.yaml"))
    raise ConfigError(f"robot config {str(name_or_path)!r} not found: give a YAML path or one of {sorted(available)}")


def _friction_shape(raw: Any, key: str, default: FrictionShape | None = None) -> FrictionShape:
    if raw is None:
        return default or FrictionShape()
    return _block(FrictionShape, raw, key)


def _block(cls: type[Any], raw: Any, key: str) -> Any:
    """A frozen dataclass (``friction:``, ``motor:``) from its YAML mapping, every value type-checked first.

    Raises:
        ConfigError: ``key.name = value: expected ...`` (a boolean is not a number, nor a number a boolean).
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key} = {raw!r}: expected a mapping")
    kinds = {f.name: getattr(f.type, "__name__", str(f.type)) for f in fields(cls) if f.init}
    require_mapping(raw, key, allowed=set(kinds))
    values = dict(raw)
    for name, value in raw.items():
        if kinds[name] == "float":
            values[name] = _number(value, f"{key}.{name}")
        elif kinds[name] == "bool" and not isinstance(value, bool):
            raise ConfigError(f"{key}.{name} = {value!r}: expected true or false")
    try:
        return cls(**values)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{key}: {exc}") from None


def _number(value: Any, key: str) -> float:
    return config_number(value, key, largest=LARGEST_VALUE)


def _float_list(raw: Any, key: str, length: int | None = None) -> tuple[float, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ConfigError(f"{key} = {raw!r}: expected a list of numbers")
    values = tuple(_number(x, f"{key}[{i}]") for i, x in enumerate(raw))
    if length is not None and len(values) != length:
        raise ConfigError(f"{key} = {list(values)}: expected {length} numbers")
    return values


def _optional_mapping(raw: Mapping[str, Any], key: str) -> Any:
    """``raw[key]``, or {} when the key is absent or null (a wrong type is left for the caller to refuse)."""
    value = raw.get(key)
    return {} if value is None else value


def _joint_config(raw: Any, key: str, default_friction: FrictionShape) -> JointConfig:
    if raw is None:
        return JointConfig(friction=default_friction)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key} = {raw!r}: expected a mapping")
    require_mapping(raw, key, allowed={"gear_ratio", "rotor_inertia", "friction", "friction_values", "motor"})
    friction = _friction_shape(raw.get("friction"), f"{key}.friction", default_friction)
    values = raw.get("friction_values")
    friction_values = None if values is None else _float_list(values, f"{key}.friction_values", friction.n_parameters)
    motor = None if raw.get("motor") is None else _block(MotorParameters, raw["motor"], f"{key}.motor")
    defaults = {"gear_ratio": JointConfig.gear_ratio, "rotor_inertia": JointConfig.rotor_inertia}
    out = {name: _number(raw.get(name, default), f"{key}.{name}") for name, default in defaults.items()}
    if not out["gear_ratio"] > 0.0:
        raise ConfigError(f"{key}.gear_ratio = {out['gear_ratio']!r}: expected a number > 0")
    if not out["rotor_inertia"] >= 0.0:
        raise ConfigError(f"{key}.rotor_inertia = {out['rotor_inertia']!r}: expected a number >= 0")
    return JointConfig(friction=friction, friction_values=friction_values, motor=motor, **out)


def robot_config_from_dict(
    raw: Mapping[str, Any], base_dir: Path | None = None, source: Path | None = None
) -> RobotConfig:
    """Validate a parsed ``robot:`` mapping into a `RobotConfig` (paths relative to ``base_dir``)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"robot = {raw!r}: expected a mapping")
    allowed = {
        "name",
        "urdf",
        "joints",
        "gravity",
        "friction",
        "joint_parameters",
        "reflected_inertia",
        "couplings",
        "torque_source",
        "floating_base",
    }
    require_mapping(raw, "robot", allowed=allowed)
    for key in ("name", "urdf", "joints"):
        if key not in raw:
            raise ConfigError(f"robot.{key} is missing")
    for key in ("name", "urdf"):
        if not isinstance(raw[key], str) or not raw[key]:
            raise ConfigError(f"robot.{key} = {raw[key]!r}: expected a non-empty string")
    urdf = Path(raw["urdf"])
    if raw["urdf"].startswith(EXAMPLE_ROBOT_PREFIX):
        urdf = example_robot_urdf(raw["urdf"][len(EXAMPLE_ROBOT_PREFIX) :])
    elif not urdf.is_absolute() and base_dir is not None:
        urdf = base_dir / urdf
    if not urdf.is_file():
        raise ConfigError(f"robot.urdf = {raw['urdf']!r}: no such file {urdf}")
    if not isinstance(raw.get("reflected_inertia", True), bool):
        raise ConfigError(f"robot.reflected_inertia = {raw['reflected_inertia']!r}: expected true or false")
    joints = raw["joints"]
    if (
        not isinstance(joints, Sequence)
        or isinstance(joints, str)
        or not joints
        or not all(isinstance(j, str) for j in joints)
    ):
        raise ConfigError(f"robot.joints = {joints!r}: expected a non-empty list of joint names")
    gravity = _float_list(raw.get("gravity", [0.0, 0.0, -9.81]), "robot.gravity", 3)
    default_friction = _friction_shape(raw.get("friction"), "robot.friction")
    per_joint = _optional_mapping(raw, "joint_parameters")
    if not isinstance(per_joint, Mapping):
        raise ConfigError(f"robot.joint_parameters = {per_joint!r}: expected a mapping by joint name")
    stray = set(per_joint) - set(joints)
    if stray:
        raise ConfigError(f"robot.joint_parameters: {sorted(stray)} are not in robot.joints {list(joints)}")
    joint_parameters = tuple(
        _joint_config(per_joint.get(j), f"robot.joint_parameters.{j}", default_friction) for j in joints
    )
    couplings = _couplings(raw.get("couplings"), tuple(joints), joint_parameters, default_friction)
    config = RobotConfig(
        name=raw["name"],
        urdf=urdf,
        joints=tuple(joints),
        gravity=(gravity[0], gravity[1], gravity[2]),
        joint_parameters=joint_parameters,
        reflected_inertia=bool(raw.get("reflected_inertia", True)),
        source=source,
        couplings=couplings,
    )
    if couplings:
        config.build_transmission()  # joints in two groups, clashing motor names
    if raw.get("torque_source") is not None:
        config = replace(config, torque_source=_torque_source(raw["torque_source"], config.build_transmission().motors))
    if raw.get("floating_base") is not None:
        config = replace(config, floating_base=floating_base_from_dict(raw["floating_base"], config.joints))
    return config


def _torque_source(raw: Any, motors: tuple[str, ...]) -> TorqueSource:
    """Validate ``robot.torque_source`` (see `motor_ident.core.actuators.torque_sources`).

    ``drive_gains`` is a mapping motor name -> gain [N m/A] naming every motor of the transmission.
    """
    key = "robot.torque_source"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key} = {raw!r}: expected a mapping such as {{kind: motor_current, drive_gains: ...}}")
    require_mapping(raw, key, allowed={"kind", "drive_gains", "gain_side", "ft_frame", "ft_joint"})
    gains_raw = _optional_mapping(raw, "drive_gains")
    if not isinstance(gains_raw, Mapping):
        raise ConfigError(f"{key}.drive_gains = {gains_raw!r}: expected a mapping motor name -> gain [N m/A]")
    if gains_raw and set(gains_raw) != set(motors):
        raise ConfigError(f"{key}.drive_gains names {sorted(gains_raw)}: expected every motor {list(motors)}")
    gains = _float_list([gains_raw[m] for m in motors], f"{key}.drive_gains") if gains_raw else ()
    try:
        return TorqueSource(
            kind=str(raw.get("kind", "joint_effort")),
            drive_gains=gains,
            gain_side=str(raw.get("gain_side", "joint")),
            ft_frame=str(raw.get("ft_frame", "")),
            ft_joint=str(raw.get("ft_joint", "")),
        )
    except ConfigError as exc:
        raise ConfigError(f"{exc}".replace("torque_source.", f"{key}.")) from None


def _couplings(
    raw: Any, joints: tuple[str, ...], joint_parameters: tuple[JointConfig, ...], default_friction: FrictionShape
) -> tuple[CouplingConfig, ...]:
    """Validate the ``robot.couplings`` mapping (group name -> group) into `CouplingConfig` entries."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"robot.couplings = {raw!r}: expected a mapping by group name")
    out = []
    seen: dict[str, str] = {}
    for name, entry in raw.items():
        key = f"robot.couplings.{name}"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{key} = {entry!r}: expected a mapping with joints, motors and coupling")
        require_mapping(entry, key, allowed={"joints", "motors", "coupling", "max_condition", "motor_parameters"})
        for required in ("joints", "motors", "coupling"):
            if required not in entry:
                raise ConfigError(f"{key}.{required} is missing")
        group_joints, motors = entry["joints"], entry["motors"]
        for item, value in (("joints", group_joints), ("motors", motors)):
            if not isinstance(value, Sequence) or isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{key}.{item} = {value!r}: expected a list of names")
        stray = [j for j in group_joints if j not in joints]
        if stray:
            raise ConfigError(f"{key}.joints: {stray} are not in robot.joints {list(joints)}")
        for joint in group_joints:
            if joint in seen:
                raise ConfigError(f"{key}.joints: {joint!r} is already driven by coupling {seen[joint]!r}")
            seen[joint] = str(name)
            if joint_parameters[joints.index(joint)].rotor_inertia > 0.0:
                raise ConfigError(
                    f"robot.joint_parameters.{joint}.rotor_inertia: {joint!r} is driven through coupling {name!r}; "
                    f"expected the rotor inertia under {key}.motor_parameters"
                )
        coupling = entry["coupling"]
        if not isinstance(coupling, Sequence) or isinstance(coupling, str):
            raise ConfigError(f"{key}.coupling = {coupling!r}: expected a list of rows")
        rows = tuple(_float_list(row, f"{key}.coupling[{i}]", len(group_joints)) for i, row in enumerate(coupling))
        per_motor = _optional_mapping(entry, "motor_parameters")
        if not isinstance(per_motor, Mapping):
            raise ConfigError(f"{key}.motor_parameters = {per_motor!r}: expected a mapping by motor name")
        stray_motors = set(per_motor) - set(motors)
        if stray_motors:
            raise ConfigError(f"{key}.motor_parameters: {sorted(stray_motors)} are not in {key}.motors {list(motors)}")
        drives = tuple(_joint_config(per_motor.get(m), f"{key}.motor_parameters.{m}", default_friction) for m in motors)
        max_condition = _number(entry.get("max_condition", 100.0), f"{key}.max_condition")
        try:
            group = TransmissionGroup(
                name=str(name),
                joints=tuple(group_joints),
                motors=tuple(motors),
                coupling=rows,
                gear_ratio=tuple(d.gear_ratio for d in drives),
                rotor_inertia=tuple(d.rotor_inertia for d in drives),
                max_condition=max_condition,
            )
        except ConfigError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        out.append(CouplingConfig(group=group, motor_parameters=drives))
    return tuple(out)


def load_robot_config(name_or_path: str | Path) -> RobotConfig:
    """Load and validate a robot config from a YAML path, a shipped config's name or a plain
    URDF (every movable joint: `motor_ident.io.urdf_robot`).

    Raises:
        ConfigError: the file is missing, is not valid YAML, or a value is wrong (the message
            names the key, the value and what was expected).
    """
    path = find_config(name_or_path)
    if path.suffix.lower() == ".urdf":
        return robot_config_from_dict(urdf_robot_mapping(path), base_dir=path.parent, source=path)
    doc = read_yaml(path)
    if not isinstance(doc, Mapping) or "robot" not in doc:
        raise ConfigError(f"{path}: expected a top-level 'robot:' mapping")
    try:
        return robot_config_from_dict(doc["robot"], base_dir=path.parent, source=path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
