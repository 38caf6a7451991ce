"""The ``floating_base:`` section of a robot config: a robot standing on its feet.

Schema (see ``config/icub.yaml``)::

    robot:
      ...
      floating_base:
        base_link: root_link            # the link the IMU is fixed to (URDF name)
        imu_frame: root_link            # frame of the IMU, on the base link
        contacts:                       # per foot: where its 6-axis F/T wrench is measured
          left_foot: {sensor_frame: l_foot_ft_sensor, sole_frame: l_sole}
          right_foot: {sensor_frame: r_foot_ft_sensor, sole_frame: r_sole}
        foot_size: [0.12, 0.06]         # sole length x width [m], for the centre-of-pressure check (optional)
        friction_coefficient: 0.6       # for the friction-cone check [-]
        standing_posture: {l_knee: -0.4} # joint positions of the standing pose [rad] (others 0)
        urdf_mass_uncertainty: 0.3      # [-] the URDF's own uncertainty, relative (optional)

A sensor measures the wrench the ground applies to the robot through that foot, expressed in
``sensor_frame``; the sole frame is flat on the ground while the foot stands (x forward, z up).

``urdf_mass_uncertainty`` says how far the URDF's inertial parameters may be from the robot's: every
link's mass, first moments and inertia independent, each with a standard deviation of this fraction of
the link's scale (its mass, its mass times a length of at least 0.3 m, that length squared). It is the
prior of the exported links and the URDF's side of the comparison that recommends the URDF's total
mass or CoM where the data determine them worse (docs/floating-base.md, "Worse than the URDF"): 0.3 for
a URDF from CAD, less for a robot weighed link by link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from motor_ident.core.estimation.nearest_consistent import PRIOR_RELATIVE_SPREAD
from motor_ident.errors import ConfigError
from motor_ident.schema import require_mapping


@dataclass(frozen=True)
class ContactConfig:
    """One foot: its name, the frame its F/T wrench is measured in and its sole frame."""

    name: str
    sensor_frame: str
    sole_frame: str


@dataclass(frozen=True)
class FloatingBaseConfig:
    """A robot standing on its feet (module docstring)."""

    base_link: str
    imu_frame: str
    contacts: tuple[ContactConfig, ...]
    foot_size: tuple[float, float] | None = None
    friction_coefficient: float = 0.6
    standing_posture: tuple[tuple[str, float], ...] = ()
    urdf_mass_uncertainty: float = PRIOR_RELATIVE_SPREAD

    def __post_init__(self) -> None:
        if not self.contacts:
            raise ConfigError("floating_base.contacts: expected at least one foot")
        if not self.friction_coefficient > 0.0:
            raise ConfigError(f"floating_base.friction_coefficient = {self.friction_coefficient!r}: expected > 0")
        if not 0.0 < self.urdf_mass_uncertainty <= 10.0:
            raise ConfigError(
                f"floating_base.urdf_mass_uncertainty = {self.urdf_mass_uncertainty!r}: expected a fraction "
                "in (0, 10] (0.3: each link's mass +-30 %)"
            )
        if self.foot_size is not None and not all(x > 0.0 for x in self.foot_size):
            raise ConfigError(f"floating_base.foot_size = {list(self.foot_size)}: expected length, width > 0 [m]")

    @property
    def sensor_frames(self) -> tuple[str, ...]:
        """The contacts' sensor frames, in contact order."""
        return tuple(c.sensor_frame for c in self.contacts)

    @property
    def sole_frames(self) -> tuple[str, ...]:
        """The contacts' sole frames, in contact order."""
        return tuple(c.sole_frame for c in self.contacts)

    def posture(self, joints: tuple[str, ...]) -> list[float]:
        """Standing joint positions in ``joints`` order [rad] (0 where not given)."""
        given = dict(self.standing_posture)
        return [given.get(j, 0.0) for j in joints]


def floating_base_from_dict(raw: Any, joints: tuple[str, ...]) -> FloatingBaseConfig:
    """Validate ``robot.floating_base`` (module docstring).

    Raises:
        ConfigError: a key, a type or a joint name is wrong (the message names the key).
    """
    key = "robot.floating_base"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key} = {raw!r}: expected a mapping with base_link, imu_frame and contacts")
    require_mapping(
        raw,
        key,
        allowed={f.name for f in fields(FloatingBaseConfig)},
    )
    for required in ("base_link", "contacts"):
        if required not in raw:
            raise ConfigError(f"{key}.{required} is missing")
    contacts_raw = raw["contacts"]
    if not isinstance(contacts_raw, Mapping) or not contacts_raw:
        raise ConfigError(
            f"{key}.contacts = {contacts_raw!r}: expected a mapping foot name -> {{sensor_frame, sole_frame}}"
        )
    contacts = []
    for name, entry in contacts_raw.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{key}.contacts.{name} = {entry!r}: expected {{sensor_frame, sole_frame}}")
        require_mapping(entry, f"{key}.contacts.{name}", allowed={"sensor_frame", "sole_frame"})
        if "sensor_frame" not in entry:
            raise ConfigError(f"{key}.contacts.{name}.sensor_frame is missing")
        sensor = str(entry["sensor_frame"])
        contacts.append(
            ContactConfig(name=str(name), sensor_frame=sensor, sole_frame=str(entry.get("sole_frame", sensor)))
        )
    posture_raw = raw.get("standing_posture") or {}
    if not isinstance(posture_raw, Mapping):
        raise ConfigError(f"{key}.standing_posture = {posture_raw!r}: expected a mapping joint -> position [rad]")
    stray = sorted(set(posture_raw) - set(joints))
    if stray:
        raise ConfigError(f"{key}.standing_posture: {stray} are not in robot.joints")
    try:
        posture = tuple((str(j), float(v)) for j, v in posture_raw.items())
        size = raw.get("foot_size")
        foot_size = None if size is None else (float(size[0]), float(size[1]))
        defaults = {f.name: f.default for f in fields(FloatingBaseConfig)}
        mu = float(raw.get("friction_coefficient", defaults["friction_coefficient"]))
        uncertainty = float(raw.get("urdf_mass_uncertainty", defaults["urdf_mass_uncertainty"]))
    except (TypeError, ValueError, IndexError, KeyError):
        raise ConfigError(
            f"{key}: standing_posture, foot_size, friction_coefficient and urdf_mass_uncertainty take numbers"
        ) from None
    return FloatingBaseConfig(
        base_link=str(raw["base_link"]),
        imu_frame=str(raw.get("imu_frame", raw["base_link"])),
        contacts=tuple(contacts),
        foot_size=foot_size,
        friction_coefficient=mu,
        standing_posture=posture,
        urdf_mass_uncertainty=uncertainty,
    )
