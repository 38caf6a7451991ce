"""A scenario's control loop without ROS: plant, online identifier and feedforward in one loop.

The same core objects the nodes wrap (the plant of `make_plant`, `OnlineIdentifier`, `ComputedTorque`,
`ramp_in` of a Fourier excitation), configured from the same node settings (`motor_ident.scenario.loader`), stepped
in a plain loop: the reference for long soak runs, memory measurements and fast experiments,
with no DDS in between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.control.computed_torque import ComputedTorque, FeedforwardConfig, ModelBlend, saturate
from motor_ident.core.estimation.online import OnlineIdentifier
from motor_ident.core.excitation.fourier import ramp_in, random_fourier_trajectory
from motor_ident.io.robot_config import load_robot_config
from motor_ident.io.trajectory import load_trajectory
from motor_ident.scenario.build import build_identifier
from motor_ident.scenario.loader import Scenario, load_scenario
from motor_ident.scenario.nodes import ExcitationSettings, FeedforwardSettings, SimRobotSettings
from motor_ident.schema import per_joint
from motor_ident.sim.engines import Plant, make_plant
from motor_ident.sim.plant import Measurement

FloatArray = NDArray[np.float64]


@dataclass
class ClosedLoop:
    """The objects of one scenario, ready to step."""

    sim: Plant
    identifier: OnlineIdentifier
    law: ComputedTorque
    excitation: Any
    ramp_time: float
    q_start: FloatArray
    command: FloatArray
    blend: ModelBlend
    scenario: Scenario

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
    """Build the loop of a scenario from its settings (`load_scenario`, plus per-node overrides).

    Every value comes from the node settings: sim_robot's plant (commanded in joint torques,
    whatever the scenario's sim_robot takes), the identifier as its node builds it, the
    feedforward's gains, limits and blend rate, the excitation's trajectory and ramp.

    Raises:
        ConfigError: the scenario or a value in it is invalid.
    """
    loaded = load_scenario(scenario, overrides)
    sim_s: SimRobotSettings = loaded.nodes["sim_robot"]
    ff_s: FeedforwardSettings = loaded.nodes["feedforward"]
    ex_s: ExcitationSettings = loaded.nodes["excitation"]
    config = load_robot_config(sim_s.robot)
    regressor = config.build_regressor()
    robot = regressor.robot
    # the loop commands joint torques, whatever the scenario's sim_robot takes (icub_torso: PWM)
    sim = make_plant(config, replace(sim_s.plant, command_interface="effort"))
    identifier = build_identifier(loaded.nodes["identifier"])
    n = robot.n
    effort_limit = (
        np.asarray(per_joint("effort_limit", ff_s.effort_limit, n))
        if ff_s.effort_limit is not None
        else np.where(np.isfinite(sim.effort_limit), sim.effort_limit, 100.0)
    )
    law = ComputedTorque(
        regressor,
        identifier.base,
        FeedforwardConfig(
            kp=np.asarray(per_joint("kp", ff_s.kp, n)),
            kd=np.asarray(per_joint("kd", ff_s.kd, n)),
            effort_limit=effort_limit,
            rate_limit=np.asarray(per_joint("rate_limit", ff_s.rate_limit, n)),
            safe_mode=ff_s.safe_mode,
        ),
    )
    if ex_s.trajectory_file:  # an optimised trajectory from motor-ident excite, as the node plays it
        excitation = load_trajectory(ex_s.trajectory_file).select(robot.joint_names)
    else:
        excitation = random_fourier_trajectory(
            np.random.default_rng(ex_s.seed),
            n=n,
            harmonics=ex_s.harmonics,
            base_frequency=ex_s.base_frequency,
            velocity_amplitude=ex_s.velocity_amplitude,
            q0=sim.q.copy(),
        )
    return ClosedLoop(
        sim=sim,
        identifier=identifier,
        law=law,
        excitation=excitation,
        ramp_time=ex_s.ramp_time,
        q_start=sim.q.copy(),
        command=np.zeros(n),
        blend=ModelBlend(identifier.theta_nominal, rate=ff_s.blend_rate),
        scenario=loaded,
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
