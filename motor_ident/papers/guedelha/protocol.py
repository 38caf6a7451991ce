"""Guedelha et al. 2021's two identification phases on one motor chain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.actuator_ident import (
    FrictionFit,
    MotorFit,
    chain_torque,
    friction_target,
    identify_friction,
    identify_motor_gain,
    low_velocity_rmse,
)
from motor_ident.core.actuators.friction import FrictionKind, FrictionShape
from motor_ident.core.actuators.transmission import Transmission, TransmissionGroup
from motor_ident.errors import ConfigError
from motor_ident.sim.actuator import (
    ActuatorPlant,
    ActuatorRecord,
    ActuatorSimConfig,
    oscillation,
    random_pwm,
    simulate,
)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ProtocolConfig:
    """Durations, excitation and fitting settings of the procedures.

    Attributes:
        friction_duration: phase-1 length per experiment [s].
        pwm_duration: phase-2 length per experiment [s].
        v_max: largest gearbox-output velocity amplitude of phase 1 [rad/s] (0.2 = 11.5 deg/s).
        v_min: smallest velocity amplitude of phase 1 [rad/s].
        pwm_v_range: velocity amplitude range of the phase-2 motion [rad/s].
        pwm_amplitude: peak duty of phase 2 (fraction).
        min_velocity: samples with |qd| below this are dropped (stuck harmonic drive) [rad/s].
        low_velocity_band: |qd| band where the Stribeck and Coulomb+viscous residuals are compared [rad/s].
        stribeck_velocity_range: bounds of the Stribeck velocity v_s searched in phase 1 [rad/s]; None
            uses the v_s of the shape handed to the fit instead of identifying it.
        sim: simulator and sensor settings.
    """

    friction_duration: float = 30.0
    pwm_duration: float = 15.0
    v_max: float = 0.2
    v_min: float = 0.02
    pwm_v_range: tuple[float, float] = (0.04, 0.12)
    pwm_amplitude: float = 0.3
    min_velocity: float = 0.002
    low_velocity_band: float = 0.0524
    stribeck_velocity_range: tuple[float, float] | None = (0.002, 0.5)
    sim: ActuatorSimConfig = field(default_factory=ActuatorSimConfig)


@dataclass(frozen=True, eq=False)
class ChainResult:
    """Identification of one motor chain.

    Attributes:
        motor: motor name.
        coulomb_viscous: phase-1 fit of eq. 21 (with offset).
        stribeck: phase-1 fit of eq. 29 (with offset).
        stribeck_zero_slope: phase-1 fit with d tau_f / dv (0+) = 0.
        motor_fit: phase-2 fit of K_pwm* and tau_0 (with the Stribeck friction).
        column: T[:, c] used to project the joint torques (measured or nominal).
        low_velocity_rmse: residual RMS in the low-velocity band per model name [N m].
    """

    motor: str
    coulomb_viscous: FrictionFit
    stribeck: FrictionFit
    stribeck_zero_slope: FrictionFit
    motor_fit: MotorFit
    column: FloatArray
    low_velocity_rmse: dict[str, float]


def replicate(plant: ActuatorPlant, group: TransmissionGroup, copies: int) -> ActuatorPlant:
    """A plant holding ``copies`` independent copies of ``group`` (names suffixed ``#k``)."""
    tr = plant.transmission
    rows = [tr.joints.index(j) for j in group.joints]
    cols = [tr.motors.index(m) for m in group.motors]
    M = plant.link_inertia[np.ix_(rows, rows)]
    groups, chains = [], []
    for k in range(copies):
        groups.append(
            replace(
                group,
                name=f"{group.name}#{k}",
                joints=tuple(f"{j}#{k}" for j in group.joints),
                motors=tuple(f"{m}#{k}" for m in group.motors),
            )
        )
        chains += [replace(plant.chains[c], name=f"{plant.chains[c].name}#{k}") for c in cols]
    joints = tuple(j for g in groups for j in g.joints)
    transmission = Transmission(joints=joints, groups=tuple(groups))
    return ActuatorPlant(
        transmission=transmission, chains=tuple(chains), link_inertia=np.kron(np.eye(copies), M).astype(float)
    )


def _stack(references: Sequence, t: FloatArray) -> tuple[FloatArray, FloatArray]:
    parts = [r(t) for r in references]
    return np.hstack([p[0] for p in parts]), np.hstack([p[1] for p in parts])


@dataclass(frozen=True, eq=False)
class FrictionPhase:
    """Phase-1 fits of one chain: the three models and their residual RMS near rest [N m]."""

    coulomb_viscous: FrictionFit
    stribeck: FrictionFit
    stribeck_zero_slope: FrictionFit
    low_velocity_rmse: dict[str, float]


def fit_friction_phase(
    qd_motor: ArrayLike,
    tau_chain: ArrayLike,
    qdd_motor: ArrayLike,
    *,
    reflected_inertia: float,
    shape: FrictionShape,
    protocol: ProtocolConfig = ProtocolConfig(),
) -> FrictionPhase:
    """Phase 1 on one chain (PWM = 0): Coulomb + viscous (eq. 21), Stribeck (eq. 29), Stribeck with zero slope.

    Args:
        qd_motor: gearbox-output velocities, shape (N,) [rad/s].
        tau_chain: torque delivered by the chain, ``T_c' tau_joint``, shape (N,) [N m].
        qdd_motor: gearbox-output accelerations, shape (N,) [rad/s^2].
        reflected_inertia: D = rho^2 I [kg m^2].
        shape: the Stribeck model to fit (its Stribeck velocity is used only when
            ``protocol.stribeck_velocity_range`` is None; otherwise v_s is identified, `fit_stribeck_velocity`).
        protocol: ``min_velocity``, ``low_velocity_band`` and ``stribeck_velocity_range``.

    Raises:
        EstimationError: too few moving samples, or motion in one direction only.
    """
    qd = np.asarray(qd_motor, dtype=float)
    fit = partial(
        identify_friction,
        qd,
        tau_chain,
        qdd_motor,
        reflected_inertia=reflected_inertia,
        min_velocity=protocol.min_velocity,
    )
    cv_shape = FrictionShape(kind=FrictionKind.COULOMB_VISCOUS, smoothing_velocity=shape.smoothing_velocity)
    if protocol.stribeck_velocity_range is not None:
        shape = replace(shape, stribeck_velocity=fit_stribeck_velocity(fit, shape, protocol.stribeck_velocity_range))
    fits = {
        "coulomb_viscous": fit(shape=cv_shape),
        "stribeck": fit(shape=shape),
        "stribeck_zero_slope": fit(shape=shape, zero_slope=True),
    }
    target = friction_target(tau_chain, qdd_motor, reflected_inertia)
    moving_qd = np.where(np.abs(qd) > protocol.min_velocity, qd, 0.0)
    rmse = {name: low_velocity_rmse(fit, moving_qd, target, protocol.low_velocity_band) for name, fit in fits.items()}
    return FrictionPhase(**fits, low_velocity_rmse=rmse)


def fit_stribeck_velocity(
    fit: Callable[..., FrictionFit], shape: FrictionShape, bounds: tuple[float, float], *, grid: int = 16
) -> float:
    """The Stribeck velocity v_s [rad/s] minimising the residual RMS of the Stribeck fit (eq. 29).

    For a fixed v_s the model is linear in its parameters (Guedelha et al. 2021, eq. 26-31), so v_s
    is found by an outer search: a log-spaced grid over ``bounds``, then a bounded scalar refinement
    (in log v_s) between the grid neighbours of the best point.

    Args:
        fit: ``fit(shape=...) -> FrictionFit`` on the phase-1 data (`identify_friction` with the data bound).
        shape: the Stribeck model (its own v_s is ignored).
        bounds: (low, high) of v_s [rad/s], 0 < low < high.
    """
    low, high = bounds
    if not 0.0 < low < high:
        raise ConfigError(f"stribeck_velocity_range = {bounds!r}: expected 0 < low < high")

    def cost(log_vs: float) -> float:
        return fit(shape=replace(shape, stribeck_velocity=float(np.exp(log_vs)))).rmse

    logs = np.linspace(np.log(low), np.log(high), grid)
    costs = [cost(x) for x in logs]
    k = int(np.argmin(costs))
    lo, hi = logs[max(k - 1, 0)], logs[min(k + 1, grid - 1)]
    best = scipy.optimize.minimize_scalar(cost, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    return float(np.exp(best.x if best.fun <= costs[k] else logs[k]))


def _fit_chain(
    motor: str,
    phase1: tuple[FloatArray, FloatArray, FloatArray],
    phase2: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    column: FloatArray,
    reflected_inertia: float,
    shape: FrictionShape,
    protocol: ProtocolConfig,
) -> ChainResult:
    """Both phases on one chain: phase1 = (qd, tau_chain, qdd), phase2 = (pwm, qd, tau_chain, qdd)."""
    qd, tau, qdd = phase1
    friction = fit_friction_phase(qd, tau, qdd, reflected_inertia=reflected_inertia, shape=shape, protocol=protocol)
    pwm, qd2, tau2, qdd2 = phase2
    motor_fit = identify_motor_gain(
        pwm,
        qd2,
        tau2,
        qdd2,
        friction=friction.stribeck,
        reflected_inertia=reflected_inertia,
        min_velocity=protocol.min_velocity,
    )
    return ChainResult(
        motor=motor,
        coulomb_viscous=friction.coulomb_viscous,
        stribeck=friction.stribeck,
        stribeck_zero_slope=friction.stribeck_zero_slope,
        motor_fit=motor_fit,
        column=np.asarray(column, dtype=float),
        low_velocity_rmse=friction.low_velocity_rmse,
    )


def _sim(plant: ActuatorPlant, protocol: ProtocolConfig, seed_offset: int, **kwargs: object) -> ActuatorRecord:
    config = replace(protocol.sim, seed=protocol.sim.seed + seed_offset)
    return simulate(plant, config=config, **kwargs)  # type: ignore[arg-type]


def identify_uncoupled(
    plant: ActuatorPlant, shape: FrictionShape, protocol: ProtocolConfig = ProtocolConfig()
) -> list[ChainResult]:
    """Both phases on every chain of a plant whose joints are all uncoupled, all joints moving at once.

    Raises:
        ConfigError: a joint of the plant is coupled.
    """
    tr = plant.transmission
    coupled = [g.name for g in tr.groups if g.n > 1]
    if coupled:
        raise ConfigError(f"identify_uncoupled: groups {coupled} are coupled; use identify_motor_wise")
    n = tr.n
    periods = 3.0 + 0.37 * np.arange(n)  # distinct periods: the joints do not move in lockstep
    refs = [
        oscillation(
            [1.0], v_max=protocol.v_max, v_min=protocol.v_min, period=p, envelope_period=protocol.friction_duration
        )
        for p in periods
    ]
    rec1 = _sim(plant, protocol, 0, duration=protocol.friction_duration, reference=lambda t: _stack(refs, t))
    lo, hi = protocol.pwm_v_range
    refs2 = [
        oscillation([1.0], v_max=hi, v_min=lo, period=p + 2.0, envelope_period=protocol.pwm_duration) for p in periods
    ]
    schedule = random_pwm(n, amplitude=protocol.pwm_amplitude, seed=protocol.sim.seed + 7)
    rec2 = _sim(plant, protocol, 1, duration=protocol.pwm_duration, reference=lambda t: _stack(refs2, t), pwm=schedule)
    results = []
    for c, motor in enumerate(tr.motors):
        column = tr.T[:, c]
        tau1 = chain_torque(rec1.tau_joint, column)
        tau2 = chain_torque(rec2.tau_joint, column)
        results.append(
            _fit_chain(
                motor,
                (rec1.qd_motor[:, c], tau1, rec1.qdd_motor[:, c]),
                (rec2.pwm[:, c], rec2.qd_motor[:, c], tau2, rec2.qdd_motor[:, c]),
                column,
                float(plant.chains[c].reflected_inertia),
                shape,
                protocol,
            )
        )
    return results
