"""A scenario's control loop without ROS: plant, online identifier and feedforward in one loop.

The same core objects the nodes wrap (`SimulatedRobot`, `OnlineIdentifier`, `ComputedTorque`,
`ramp_in` of a Fourier excitation), configured from the same scenario parameter file, stepped
in a plain loop: the reference for long soak runs, memory measurements and fast experiments,
with no DDS in between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from motor_ident.core.control.computed_torque import ComputedTorque, FeedforwardConfig, ModelBlend, saturate
from motor_ident.core.estimation.gate import GateConfig
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier
from motor_ident.core.excitation.fourier import ramp_in, random_fourier_trajectory
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import config_directories, load_robot_config
from motor_ident.io.trajectory import load_trajectory
from motor_ident.sim.plant import Measurement, PlantConfig, SimulatedRobot

FloatArray = NDArray[np.float64]


def scenario_parameters(name_or_path: str | Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The scenario's parameter file and its ``ros__parameters`` per node name."""
    path = Path(name_or_path)
    if not path.is_file():
        candidates = [d / "scenarios" / f"{name_or_path}.yaml" for d in config_directories()]
        found = [c for c in candidates if c.is_file()]
        if not found:
            raise ConfigError(f"scenario {str(name_or_path)!r} not found in {[str(c.parent) for c in candidates]}")
        path = found[0]
    doc = yaml.safe_load(path.read_text()) or {}
    return path, {node: dict((section or {}).get("ros__parameters", {})) for node, section in doc.items()}


def _pick(params: dict[str, Any], cls: type, **renames: str) -> dict[str, Any]:
    from dataclasses import fields

    names = {f.name for f in fields(cls) if f.init}
    out = {k: v for k, v in params.items() if k in names}
    out.update({new: params[old] for new, old in renames.items() if old in params})
    return out


@dataclass
class ClosedLoop:
    """The objects of one scenario, ready to step."""

    sim: SimulatedRobot
    identifier: OnlineIdentifier
    law: ComputedTorque
    excitation: Any
    ramp_time: float
    q_start: FloatArray
    command: FloatArray
    blend: ModelBlend

    def step(self) -> tuple[Measurement, FloatArray]:
        """One control cycle: measure, identify, command, integrate. Returns the measurement and q_ref - q."""
        m = self.sim.measure()
        fit = self.identifier.fit
        self.identifier.add_sample(m.t, m.q, m.qd, m.effort)
        if self.identifier.fit is not fit:  # a refit: the node publishes the active model, the feedforward blends
            self.blend.set_target(self.identifier.active_theta)
        q_ref, qd_ref, qdd_ref = (x[0] for x in ramp_in([m.t], self.q_start, self.excitation, self.ramp_time))
        rows = self.law.command_rows(m.q, m.qd, q_ref, qd_ref, qdd_ref)
        tau = rows @ self.blend.step(rows, self.sim.dt)
        self.command = saturate(tau, self.command, self.law.config, self.sim.dt)
        self.sim.set_effort(self.command)
        self.sim.step()
        return m, q_ref - m.q


def build_closed_loop(scenario: str | Path, overrides: dict[str, dict[str, Any]] | None = None) -> ClosedLoop:
    """Build the loop of a scenario from its parameter file (plus per-node overrides)."""
    _, params = scenario_parameters(scenario)
    for node, values in (overrides or {}).items():
        params.setdefault(node, {}).update(values)
    sim_p, id_p, ff_p, ex_p = (params.get(k, {}) for k in ("sim_robot", "identifier", "feedforward", "excitation"))
    config = load_robot_config(sim_p.get("robot", "valkyrie_arm"))
    regressor = config.build_regressor()
    robot = regressor.robot
    # the loop commands joint torques, whatever the scenario's sim_robot takes (icub_torso: PWM)
    plant = PlantConfig(**{**_pick(sim_p, PlantConfig), "command_interface": "effort"})
    sim = SimulatedRobot(regressor, config.nominal_friction(), plant)
    base = structural_base_parameters(regressor)
    nominal_robot = robot.with_inertial_parameters(
        robot.inertial_parameters() * float(id_p.get("nominal_inertia_scale", 1.0))
    )
    friction = [float(id_p.get("nominal_friction_scale", 1.0)) * f for f in config.nominal_friction()]
    theta_nominal = regressor.parameters(robot=nominal_robot, friction=friction)
    settings = IdentifierConfig(gate=GateConfig(**_pick(id_p, GateConfig)), **_pick(id_p, IdentifierConfig))
    identifier = OnlineIdentifier(regressor, base, theta_nominal, settings)
    n = robot.n

    def per_joint(key: str, default: float) -> FloatArray:
        values = np.asarray(ff_p.get(key, [default]), dtype=float)
        return np.full(n, values[0]) if values.size == 1 else values

    law = ComputedTorque(
        regressor,
        base,
        FeedforwardConfig(
            kp=per_joint("kp", 100.0),
            kd=per_joint("kd", 20.0),
            effort_limit=np.where(np.isfinite(sim.effort_limit), sim.effort_limit, 100.0),
            rate_limit=per_joint("rate_limit", 1e5),
            safe_mode=ff_p.get("safe_mode", "gravity"),
        ),
    )
    if ex_p.get("trajectory_file"):  # an optimised trajectory from motor-ident excite, as the node plays it
        excitation = load_trajectory(ex_p["trajectory_file"]).select(robot.joint_names)
    else:
        excitation = random_fourier_trajectory(
            np.random.default_rng(int(ex_p.get("seed", 3))),
            n=n,
            harmonics=int(ex_p.get("harmonics", 5)),
            base_frequency=float(ex_p.get("base_frequency", 0.2)),
            velocity_amplitude=float(ex_p.get("velocity_amplitude", 1.2)),
            q0=sim.q.copy(),
        )
    return ClosedLoop(
        sim=sim,
        identifier=identifier,
        law=law,
        excitation=excitation,
        ramp_time=float(ex_p.get("ramp_time", 2.0)),
        q_start=sim.q.copy(),
        command=np.zeros(n),
        blend=ModelBlend(identifier.theta_nominal, rate=float(ff_p.get("blend_rate", 50.0))),
    )


def run_closed_loop(
    loop: ClosedLoop,
    duration: float,
    *,
    every: float = 1.0,
    callback: Callable[[ClosedLoop, FloatArray], None] | None = None,
) -> int:
    """Step ``loop`` for ``duration`` simulated seconds; ``callback(loop, error)`` every ``every`` s.

    Returns:
        The number of control cycles run.
    """
    steps = int(round(duration / loop.sim.dt))
    stride = max(int(round(every / loop.sim.dt)), 1)
    for k in range(steps):
        _, error = loop.step()
        if callback is not None and (k + 1) % stride == 0:
            callback(loop, error)
    return steps
