"""Guedelha et al.'s identification procedures run on the simulated actuators (`motor_ident.sim.actuator`).

Each procedure simulates the paper's experiments and hands the records to
`motor_ident.core.actuators.actuator_ident`:

- phase 1: PWM = 0, the external actuator back-drives the joints with an oscillation whose
  velocity amplitude sweeps the range (sec. 4.1.1); Coulomb + viscous (eq. 21), asymmetric
  Stribeck (eq. 29), and Stribeck with zero slope at 0+ (sec. 4.1.2) are fitted;
- phase 2: the external actuator keeps the chain moving slowly while an open-loop PWM excites the
  motor; K_pwm* and tau_0 are fitted with the phase-1 Stribeck friction known (eq. 32).

Three procedures: `identify_uncoupled` (every joint its own motor, all joints at once),
`identify_motor_wise` (coupled group, one motor moving, the others braked, sec. 3.4.2, the
paper's choice) and `identify_joint_wise` (coupled group, one joint moving, the other joints held
by the external actuator; all motors move and T attributes the torques, the paper's alternative).

Independent experiments of a group are simulated at once, as copies of the group side by side in
one plant (`replicate`): the copies do not interact, and one integration loop serves them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.actuator_ident import (
    chain_torque,
    coupling_column,
    joint_wise_chain_torques,
)
from motor_ident.core.actuators.friction import FrictionShape
from motor_ident.core.actuators.transmission import TransmissionGroup
from motor_ident.core.control.pwm import ChainModel, PwmFeedforwardConfig, pwm_feedforward
from motor_ident.errors import ConfigError
from motor_ident.papers.guedelha.protocol import ChainResult, ProtocolConfig, _fit_chain, _sim, _stack, replicate
from motor_ident.sim.actuator import (
    ActuatorPlant,
    ActuatorRecord,
    ActuatorSimConfig,
    oscillation,
    random_pwm,
    simulate,
)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class GroupRecords:
    """Raw records of a group's procedure: per experiment k, phase 1 and phase 2 (group names, no ``#k``)."""

    group: TransmissionGroup
    phase1: list[ActuatorRecord]
    phase2: list[ActuatorRecord]
    reflected_inertia: FloatArray


def _split(record: ActuatorRecord, n: int, copies: int) -> list[ActuatorRecord]:
    out = []
    for k in range(copies):
        sl = slice(k * n, (k + 1) * n)
        values = {}
        for name in ActuatorRecord.__dataclass_fields__:
            value = getattr(record, name)
            if name in ("joints", "motors"):
                value = tuple(x.split("#")[0] for x in value[sl])
            elif name != "t":
                value = value[:, sl]
            values[name] = value
        out.append(ActuatorRecord(**values))
    return out


def run_group_experiments(
    plant: ActuatorPlant,
    group_name: str,
    *,
    mode: str,
    protocol: ProtocolConfig = ProtocolConfig(),
    coupling: ArrayLike | None = None,
) -> GroupRecords:
    """Simulate both phases of a coupled group, one experiment per motor (``mode="motor"``: the other
    motors braked) or per joint (``mode="joint"``: the other joints held by the external actuator).

    Args:
        plant: the plant holding the group.
        group_name: which group.
        mode: ``"motor"`` or ``"joint"``.
        protocol: durations and excitation.
        coupling: the T the experimenter believes (used only to aim the external actuator in motor
            mode); the group's true T when None.
    """
    if mode not in ("motor", "joint"):
        raise ConfigError(f"mode = {mode!r}: expected 'motor' or 'joint'")
    group = next((g for g in plant.transmission.groups if g.name == group_name), None)
    if group is None:
        raise ConfigError(f"group {group_name!r}: expected one of {[g.name for g in plant.transmission.groups]}")
    n = group.n
    T_aim = group.T if coupling is None else np.asarray(coupling, dtype=float)
    copies = replicate(plant, group, n)
    directions = [T_aim[:, k] if mode == "motor" else np.eye(n)[k] for k in range(n)]
    # the velocity sweep is on the moving motor (motor mode) or the moving joint (joint mode)
    locked = [f"{m}#{k}" for k in range(n) for c, m in enumerate(group.motors) if mode == "motor" and c != k]
    periods = 3.0 + 0.37 * np.arange(n)
    refs = [
        oscillation(
            d,
            v_max=protocol.v_max,
            v_min=protocol.v_min,
            period=p,
            envelope_period=protocol.friction_duration,
        )
        for d, p in zip(directions, periods)
    ]
    rec1 = _sim(
        copies, protocol, 10, duration=protocol.friction_duration, reference=lambda t: _stack(refs, t), locked=locked
    )
    lo, hi = protocol.pwm_v_range
    refs2 = [
        oscillation(d, v_max=hi, v_min=lo, period=p + 2.0, envelope_period=protocol.pwm_duration)
        for d, p in zip(directions, periods)
    ]
    active = [not (mode == "motor" and c != k) for k in range(n) for c in range(n)]
    schedule = random_pwm(n * n, amplitude=protocol.pwm_amplitude, active=active, seed=protocol.sim.seed + 17)
    rec2 = _sim(
        copies,
        protocol,
        11,
        duration=protocol.pwm_duration,
        reference=lambda t: _stack(refs2, t),
        pwm=schedule,
        locked=locked,
    )
    cols = [plant.transmission.motors.index(m) for m in group.motors]
    return GroupRecords(
        group=group,
        phase1=_split(rec1, n, n),
        phase2=_split(rec2, n, n),
        reflected_inertia=plant.reflected_inertia[cols],
    )


def identify_motor_wise(
    records: GroupRecords,
    shape: FrictionShape,
    protocol: ProtocolConfig = ProtocolConfig(),
    *,
    coupling: ArrayLike | None = None,
) -> list[ChainResult]:
    """Guedelha et al. 2021, sec. 3.4.2 on motor-mode records: motor ``c`` alone moves, ``tau_c = T_c' tau_joint``.

    Args:
        records: from `run_group_experiments` with ``mode="motor"``.
        shape: friction model.
        protocol: fitting settings.
        coupling: nominal T to take the column from; None = measure the column from the motion
            (`coupling_column`), which needs no T at all.
    """
    results = []
    for c, motor in enumerate(records.group.motors):
        r1, r2 = records.phase1[c], records.phase2[c]
        if coupling is None:
            column = coupling_column(r1.qd_joint, r1.qd_motor[:, c])
        else:
            column = np.asarray(coupling, dtype=float)[:, c]
        results.append(
            _fit_chain(
                motor,
                (r1.qd_motor[:, c], chain_torque(r1.tau_joint, column), r1.qdd_motor[:, c]),
                (r2.pwm[:, c], r2.qd_motor[:, c], chain_torque(r2.tau_joint, column), r2.qdd_motor[:, c]),
                column,
                float(records.reflected_inertia[c]),
                shape,
                protocol,
            )
        )
    return results


def identify_joint_wise(
    records: GroupRecords,
    shape: FrictionShape,
    protocol: ProtocolConfig = ProtocolConfig(),
    *,
    coupling: ArrayLike,
) -> list[ChainResult]:
    """The joint-by-joint alternative: all joint experiments pooled, torques attributed by ``T' tau_joint``.

    Args:
        records: from `run_group_experiments` with ``mode="joint"``.
        shape: friction model.
        protocol: fitting settings.
        coupling: the nominal T (its errors go into every chain torque).
    """
    T = np.asarray(coupling, dtype=float)
    p1, p2 = records.phase1, records.phase2
    tau1 = np.vstack([joint_wise_chain_torques(r.tau_joint, T) for r in p1])
    tau2 = np.vstack([joint_wise_chain_torques(r.tau_joint, T) for r in p2])
    qd1, qdd1 = np.vstack([r.qd_motor for r in p1]), np.vstack([r.qdd_motor for r in p1])
    qd2, qdd2, pwm2 = (np.vstack([getattr(r, k) for r in p2]) for k in ("qd_motor", "qdd_motor", "pwm"))
    return [
        _fit_chain(
            motor,
            (qd1[:, c], tau1[:, c], qdd1[:, c]),
            (pwm2[:, c], qd2[:, c], tau2[:, c], qdd2[:, c]),
            T[:, c],
            float(records.reflected_inertia[c]),
            shape,
            protocol,
        )
        for c, motor in enumerate(records.group.motors)
    ]


def run_motor_experiment(
    plant: ActuatorPlant,
    motor: str,
    *,
    phase: str,
    protocol: ProtocolConfig = ProtocolConfig(),
    coupling: ArrayLike | None = None,
) -> ActuatorRecord:
    """One experiment of Guedelha et al. 2021 on one motor: its group alone, the group's other motors braked.

    ``phase="friction"``: PWM = 0 and the external actuator sweeps the motor's velocity amplitude
    from ``v_min`` to ``v_max`` over ``friction_duration``; ``phase="pwm"``: the external actuator
    keeps it moving in ``pwm_v_range`` while an open-loop duty excites this motor only.

    Args:
        plant: the plant holding the motor.
        motor: the motor's name.
        phase: ``"friction"`` or ``"pwm"``.
        protocol: durations, excitation and sensors.
        coupling: the T the experimenter believes, to aim the external actuator; the true T when None.

    Returns:
        The record of the group (its joints and motors, group order).

    Raises:
        ConfigError: unknown motor or phase.
    """
    if phase not in ("friction", "pwm"):
        raise ConfigError(f"phase = {phase!r}: expected 'friction' or 'pwm'")
    group = plant.transmission.group_of(motor)
    if motor not in group.motors:
        raise ConfigError(f"motor = {motor!r}: expected one of {list(plant.transmission.motors)}")
    c = group.motors.index(motor)
    single = replicate(plant, group, 1)
    T_aim = group.T if coupling is None else np.asarray(coupling, dtype=float)
    locked = [f"{m}#0" for k, m in enumerate(group.motors) if k != c]
    if phase == "friction":
        reference = oscillation(
            T_aim[:, c],
            v_max=protocol.v_max,
            v_min=protocol.v_min,
            period=3.0,
            envelope_period=protocol.friction_duration,
        )
        record = _sim(single, protocol, 20 + c, duration=protocol.friction_duration, reference=reference, locked=locked)
    else:
        lo, hi = protocol.pwm_v_range
        reference = oscillation(T_aim[:, c], v_max=hi, v_min=lo, period=5.0, envelope_period=protocol.pwm_duration)
        active = [k == c for k in range(group.n)]
        schedule = random_pwm(group.n, amplitude=protocol.pwm_amplitude, active=active, seed=protocol.sim.seed + 27)
        record = _sim(
            single, protocol, 30 + c, duration=protocol.pwm_duration, reference=reference, pwm=schedule, locked=locked
        )
    return _split(record, group.n, 1)[0]


def perturbed_coupling(group: TransmissionGroup, *, ratio_error: float) -> FloatArray:
    """The group's T with every coupling ratio off by ``ratio_error`` (0.05 = 5 % too large).

    Entries equal to 0 or 1 are structural (a missing or direct connection) and stay; the others are
    pulley-radius ratios and are scaled.
    """
    T = group.T.copy()
    ratio = (T != 0.0) & (np.abs(T) != 1.0)
    T[ratio] *= 1.0 + ratio_error
    return T


def worst_errors(results: Sequence[ChainResult], plant: ActuatorPlant) -> tuple[float, float]:
    """Worst relative error over the chains of (sigma_s+, sigma_s-, K_v) and of K_pwm* against the plant's truth.

    Returns fractions (0.01 = 1 %). K_v is compared with the chain's viscous friction plus its
    back-EMF, since phase 1 runs at PWM = 0 with the stator closed.
    """
    friction, gain = 0.0, 0.0
    for result, chain in zip(results, plant.chains, strict=True):
        _, fv, static_pos, static_neg = chain.friction_values
        fit = result.stribeck
        friction = max(
            friction,
            abs(fit.value("static_pos") / static_pos - 1.0),
            abs(fit.value("static_neg") / static_neg - 1.0),
            abs(fit.value("fv") / (fv + chain.motor.back_emf) - 1.0),
        )
        gain = max(gain, abs(result.motor_fit.k_pwm / chain.motor.k_pwm - 1.0))
    return friction, gain


def feedforward_tracking(
    plant: ActuatorPlant, results: Sequence[ChainResult], sim: ActuatorSimConfig, duration: float
) -> dict[bool, tuple[float, ActuatorRecord]]:
    """Joint-torque tracking of the PWM feedforward built from identified chains (Guedelha et al. 2021, sec. 4.2).

    A sinusoidal joint torque is commanded through `pwm_feedforward` with the identified Stribeck
    friction and motor gain of every chain, while the external actuator moves the joints; run
    without and with friction compensation.

    Returns:
        {friction_compensation: (tracking RMSE of the true joint torques [N m], the record)}.
    """
    tr = plant.transmission
    models = [
        ChainModel(
            friction=r.stribeck.friction_only()[0],
            friction_values=r.stribeck.friction_only()[1],
            motor=r.motor_fit.parameters(),
            reflected_inertia=c.reflected_inertia,
        )
        for r, c in zip(results, plant.chains, strict=True)
    ]
    amplitude = np.array([8.0, 8.0, 5.0, 5.0, 4.0, 2.0])[: tr.n]  # [N m], within every motor's reach

    def desired(t: float) -> FloatArray:
        return amplitude * np.sin(2.0 * np.pi * 0.4 * t + np.arange(tr.n))

    motion = oscillation(np.ones(tr.n), v_max=0.15, v_min=0.03, period=5.0, envelope_period=duration)
    out = {}
    for compensate in (False, True):
        config = PwmFeedforwardConfig(friction_compensation=compensate)

        def controller(t: float, qd_motor: FloatArray, config: PwmFeedforwardConfig = config) -> FloatArray:
            return pwm_feedforward(desired(t), qd_motor, tr, models, config)

        record = simulate(plant, duration=duration, reference=motion, controller=controller, config=sim)
        target = np.array([desired(t) for t in record.t])
        out[compensate] = (float(np.sqrt(np.mean((record.true_tau_joint - target) ** 2))), record)
    return out
