"""A simulated fleet: N robots x M days of short excitation recordings with known truth.

Every robot is the robot config's nominal model with its own small spread (each link's inertial
parameters and rotor inertia scaled by ``1 + inertia_spread * N(0, 1)``, each joint's friction by
``1 + friction_spread * N(0, 1)``), so the fleet has a distribution. Two drifts are injected:

- a friction ramp: one joint's viscous friction of one robot grows by ``ramp_per_day`` (relative)
  every day from ``from_day`` on (a gear wearing);
- a payload: from one day on, another robot carries a point mass at the tip of its last link
  (a tool added without updating the model).

On request (``outlier``), the last robot is built unlike its siblings: its last joint's Coulomb
friction is ``outlier`` times the nominal from day 0 (a different gearbox), for fleet outlier checks.

Recordings are `motor_ident.sim.synthetic.excitation_record` runs (exact inverse dynamics, white
torque noise, a new random Fourier excitation every day), written as ``DIR/<robot>/day_<DDD>.npz``
with absolute time stamps (one recording a day at 09:00 UTC), which is how `motor_ident.fleet.
recordings` dates a recording. ``DIR/truth.json`` holds the drifts and every robot's true base
parameters per day.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.drive_gains import with_point_payload
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError
from motor_ident.fleet.parameters import parameter_labels
from motor_ident.io.data import atomic_write, save_record
from motor_ident.io.robot_config import RobotConfig
from motor_ident.sim.synthetic import excitation_record

FloatArray = NDArray[np.float64]

EPOCH = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
"""Day 0 of a simulated fleet (midnight UTC); recording d starts at EPOCH + d days + 9 h."""


@dataclass(frozen=True)
class FleetSpec:
    """What `simulate_fleet` writes.

    Attributes:
        robots: number of robots; days: recording days (one recording per robot and day).
        duration: seconds per recording; rate_hz: sample rate [Hz].
        noise_std: torque noise std [N m].
        friction_spread, inertia_spread: relative std of the per-robot variation [-].
        drifts: inject the friction ramp and the payload (False: a stationary fleet).
        outlier: factor on the last robot's last-joint Coulomb friction (0: no outlier robot).
        ramp_per_day: relative viscous friction increase per day of the ramp [-].
        payload_mass: payload [kg], at ``payload_offset`` [m] in the last link's frame.
        seed: seeds the variation, the excitations and the noise.
    """

    robots: int = 3
    days: int = 5
    duration: float = 8.0
    rate_hz: float = 200.0
    noise_std: float = 0.05
    friction_spread: float = 0.05
    inertia_spread: float = 0.03
    drifts: bool = True
    ramp_per_day: float = 0.25
    outlier: float = 0.0
    payload_mass: float = 1.0
    payload_offset: tuple[float, float, float] = (0.0, 0.0, -0.3)
    seed: int = 0


def robot_name(index: int) -> str:
    """Name of the simulated robot ``index``: ``robot_00``, ``robot_01``, ..."""
    return f"robot_{index:02d}"


def recording_start(day: int) -> float:
    """Start of day ``day``'s simulated recording [s since the Unix epoch]."""
    return (EPOCH + dt.timedelta(days=day, hours=9)).timestamp()


def _robot_theta(regressor: Regressor, nominal: FloatArray, spec: FleetSpec, rng: np.random.Generator) -> FloatArray:
    """A robot of the fleet: the nominal model with its own inertia and friction spread."""
    robot = regressor.robot
    theta = nominal.copy()
    names = regressor.names
    for joint, body in zip(robot.joint_names, robot.body_names):
        inertia = 1.0 + spec.inertia_spread * rng.standard_normal()
        friction = 1.0 + spec.friction_spread * rng.standard_normal()
        for k, name in enumerate(names):
            prefix, _, _ = name.rpartition(".")
            if prefix == body or name == f"{joint}.Ia":
                theta[k] *= inertia
            elif prefix == joint:
                theta[k] *= friction
    return theta


def simulate_fleet(config: RobotConfig, out: str | Path, spec: FleetSpec) -> dict[str, Any]:
    """Write the fleet's recordings and ``truth.json`` under ``out``; return the truth.

    The friction ramp goes to robot 1 (of N, modulo N) on the last joint's viscous friction from
    day ``max(1, M // 2)``; the payload to robot 2 (modulo N) on its last link from day ``M - 1``.

    Raises:
        ConfigError: fewer than 1 robot or day, or drifts asked with fewer than 3 days (a drift needs
            days before it to be seen against).
    """
    if spec.robots < 1 or spec.days < 1:
        raise ConfigError(f"--robots {spec.robots} --days {spec.days}: expected at least 1 of each")
    if spec.drifts and spec.days < 3:
        raise ConfigError(f"--days {spec.days}: injected drifts need at least 3 days (or --stationary)")
    out = Path(out)
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    labels = parameter_labels(base, regressor.robot)
    nominal = config.nominal_parameters(regressor)
    rng = np.random.default_rng(spec.seed)
    thetas = [_robot_theta(regressor, nominal, spec, rng) for _ in range(spec.robots)]
    joint = regressor.robot.joint_names[-1]
    outliers = []
    if spec.outlier:
        fc = regressor.names.index(f"{joint}.fc")
        thetas[-1][fc] = spec.outlier * nominal[fc]
        outliers.append({"robot": robot_name(spec.robots - 1), "joint": joint, "parameter": f"{joint}.fc"})
    body = regressor.robot.body_names[-1]
    ramp_robot, ramp_from = 1 % spec.robots, max(1, spec.days // 2)
    payload_robot, payload_from = 2 % spec.robots, spec.days - 1
    fv = regressor.names.index(f"{joint}.fv") if f"{joint}.fv" in regressor.names else None
    if spec.drifts and fv is None:
        raise ConfigError(f"{config.name}: joint {joint} has no viscous friction parameter to drift")
    truth_robots: dict[str, Any] = {}
    for r, theta in enumerate(thetas):
        days: list[list[float]] = []
        for day in range(spec.days):
            theta_day = theta.copy()
            if spec.drifts and r == ramp_robot and day >= ramp_from and fv is not None:
                theta_day[fv] *= 1.0 + spec.ramp_per_day * (day - ramp_from + 1)
            if spec.drifts and r == payload_robot and day >= payload_from:
                theta_day = with_point_payload(
                    regressor, theta_day, spec.payload_mass, regressor.robot.n - 1, spec.payload_offset
                )
            record, _ = excitation_record(
                regressor,
                theta_day,
                duration=spec.duration,
                rate_hz=spec.rate_hz,
                noise_std=spec.noise_std,
                seed=spec.seed * 100003 + r * 1009 + day,
            )
            record = replace(record, t=record.t + recording_start(day))
            save_record(out / robot_name(r) / f"day_{day:03d}.npz", record)
            days.append([float(v) for v in base.to_base(theta_day)])
        truth_robots[robot_name(r)] = {"base_parameters_by_day": days}
    drifts: list[dict[str, Any]] = []
    if spec.drifts:
        drifts.append(
            {
                "robot": robot_name(ramp_robot),
                "joint": joint,
                "parameter": f"{joint}.fv",
                "from_day": ramp_from,
                "kind": f"viscous friction +{spec.ramp_per_day:g} x nominal per day",
            }
        )
        before = np.asarray(truth_robots[robot_name(payload_robot)]["base_parameters_by_day"][payload_from - 1])
        after = np.asarray(truth_robots[robot_name(payload_robot)]["base_parameters_by_day"][payload_from])
        changed = np.argsort(-np.abs(after - before))
        largest = next(labels[int(k)] for k in changed if labels[int(k)].joint == joint)
        drifts.append(
            {
                "robot": robot_name(payload_robot),
                "joint": largest.joint,
                "parameter": largest.name,
                "from_day": payload_from,
                "kind": f"payload {spec.payload_mass:g} kg on {body}",
                "changed_parameters": [labels[int(k)].name for k in changed if abs(after[k] - before[k]) > 1e-12],
            }
        )
    truth = {
        "robot_config": config.name,
        "robots": [robot_name(r) for r in range(spec.robots)],
        "days": spec.days,
        "epoch": EPOCH.isoformat(),
        "base_parameters": [label.name for label in labels],
        "drifts": drifts,
        "outliers": outliers,
        "truth": truth_robots,
        "spec": {k: v for k, v in spec.__dict__.items()},
    }
    text = json.dumps(truth, indent=1)
    atomic_write(out / "truth.json", lambda tmp: tmp.write_text(text + "\n"))
    return truth
