"""A humanoid standing on two feet, simulated by MuJoCo: F/T wrenches at the feet, an IMU on the pelvis.

The robot config's URDF (with a ``floating_base`` section) is compiled by MuJoCo itself (its own
URDF parser and dynamics; nothing here evaluates pinocchio's dynamics), with

- a free joint on the root link, and every foot's sole **welded** to the ground at its initial
  pose (a weld equality: the simplification of a flat foot that neither slips nor tilts; contacts
  are off, so the URDF's collision meshes are not needed). `friction_check` (in
  `motor_ident.sim.humanoid_common`) tells afterwards whether real feet would have held the same
  wrenches (friction cone, centre of pressure);
- true link masses perturbed from the URDF's by a random factor 1 +- U(low, high) per link (the
  link's inertia scales with it, so each link stays physical); inertias MuJoCo refuses (zero or
  not satisfying the triangle inequality, as some public URDFs have) are lifted to the smallest
  valid ones first, and the truth is read back from the compiled model;
- joint PD position servos (MuJoCo ``position`` actuators) tracking a balancing excitation
  (`motor_ident.sim.humanoid_motion`: the CoM sways over the feet, the pelvis bobs and tilts, the
  legs follow by stance inverse kinematics, torso, arms and head swing by sums of sines within
  their limits; optional single-support phases), ramped in over the first second from rest.

Sensors at ``rate_hz`` (noise std / constant bias per run, from `HumanoidSimConfig`): joint
encoders; IMU orientation (world <- IMU quaternion), gyro, accelerometer (proper acceleration);
per foot the 6-axis wrench the ground applies, expressed in the sensor frame; the actuators'
joint torques. Not simulated: foot slip, sensor dynamics and drift.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
from numpy.typing import NDArray
from scipy.interpolate import CubicSpline

from motor_ident.core.floating_base.model import FloatingBaseModel
from motor_ident.core.floating_base.stance import leg_joints
from motor_ident.errors import ConfigError, ModelError
from motor_ident.io.robot_config import RobotConfig
from motor_ident.sim.humanoid_common import (
    HumanoidRun,
    HumanoidSimConfig,
    balancing_excitation,
    perturbed_urdf,
    signal_buffers,
    standing_run,
)
from motor_ident.sim.humanoid_motion import (
    GRID_S,
    ForceDistribution,
    MotionPlan,
    Phase,
    contact_schedule,
    in_contact,
    plan_reference,
)
from motor_ident.sim.mujoco_model import inertial_parameters

FloatArray = NDArray[np.float64]

FREE_JOINT = "floating_base"
"""MuJoCo's name of the free joint added at the root link."""

_INTEGRATORS = {
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}

MAX_TIMESTEP = 4e-4
"""Longest MuJoCo step [s]: the stiff leg servos (iCub's kp 2000, kd 40) are unstable under RK4 at 0.8 ms."""

SETTLE_S = 0.5
"""Simulated time before the recording starts, holding the standing posture [s]."""


def build_humanoid(config: RobotConfig, sim: HumanoidSimConfig) -> mujoco.MjSpec:
    """The MuJoCo specification (module docstring) with servos on ``config.joints``; welds added by `simulate_humanoid`.

    Raises:
        ConfigError: no ``floating_base`` section, or a configured joint is not in the URDF.
        ModelError: MuJoCo cannot read the URDF.
    """
    if config.floating_base is None:
        raise ConfigError(f"robot {config.name!r} has no floating_base section")
    try:
        spec = mujoco.MjSpec.from_string(perturbed_urdf(config, sim))
    except ValueError as exc:
        raise ModelError(f"MuJoCo cannot read the URDF {config.urdf}: {exc}") from exc
    spec.compiler.fusestatic = False  # sensor and sole frames stay bodies
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.gravity = np.asarray(config.gravity, dtype=float)
    spec.option.timestep = 1.0 / (sim.rate_hz * _substeps(sim))
    spec.option.integrator = _INTEGRATORS[sim.integrator]
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    spec.worldbody.first_body().add_freejoint(name=FREE_JOINT)
    by_name = {joint.name: joint for joint in spec.joints}
    missing = [name for name in config.joints if name not in by_name]
    if missing:
        raise ConfigError(f"joints {missing} of robot config {config.name!r} are not in the URDF {config.urdf}")
    for name, joint in by_name.items():
        if name != FREE_JOINT and name not in config.joints:
            spec.delete(joint)
    for name in config.joints:
        actuator = spec.add_actuator(name=f"{name}_servo", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=1.0, kv=0.0)  # gains per joint in `_tune_servos`
    imu = spec.body(_child_link(config, config.floating_base.imu_frame))
    if imu is None:
        raise ConfigError(
            f"robot.floating_base.imu_frame = {config.floating_base.imu_frame!r} is not a frame of the URDF"
        )
    imu.add_site(name="imu")
    for kind, name in (
        (mujoco.mjtSensor.mjSENS_FRAMEQUAT, "imu_quaternion"),
        (mujoco.mjtSensor.mjSENS_GYRO, "imu_gyro"),
        (mujoco.mjtSensor.mjSENS_ACCELEROMETER, "imu_accelerometer"),
    ):
        spec.add_sensor(name=name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu")
    return spec


def _substeps(sim: HumanoidSimConfig) -> int:
    """MuJoCo steps per sample: ``substeps``, or more so that a step is at most `MAX_TIMESTEP`."""
    return max(sim.substeps, int(np.ceil(1.0 / (sim.rate_hz * MAX_TIMESTEP) - 1e-9)))


def _child_link(config: RobotConfig, frame: str) -> str:
    """The link whose frame is ``frame``: the frame itself, or the child of a fixed joint of that name."""
    root = ET.parse(config.urdf).getroot()
    for joint in root.iter("joint"):
        child = joint.find("child")
        if joint.get("name") == frame and child is not None:
            return str(child.get("link"))
    return frame


def frame_body(model: mujoco.MjModel, config: RobotConfig, frame: str) -> int:
    """MuJoCo body id of a URDF frame (a link, or a fixed joint's child link).

    Raises:
        ConfigError: no such link or joint.
    """
    try:
        return int(model.body(_child_link(config, frame)).id)
    except KeyError:
        raise ConfigError(f"frame {frame!r} is neither a link nor a joint of {config.urdf}") from None


def _standing_pose(
    model: mujoco.MjModel, config: RobotConfig, hinge_qpos: NDArray[np.int64], posture: FloatArray
) -> tuple[FloatArray, list[tuple[FloatArray, FloatArray]]]:
    """qpos of the standing robot (first sole flat, soles at height 0) and each sole's world pose (p, R)."""
    assert config.floating_base is not None
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[:3] = 0.0
    data.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    data.qpos[hinge_qpos] = posture
    mujoco.mj_kinematics(model, data)
    soles = [frame_body(model, config, name) for name in config.floating_base.sole_frames]
    z_first = data.xmat[soles[0]].reshape(3, 3)[:, 2]
    R_fix = pin.Quaternion.FromTwoVectors(z_first, np.array([0.0, 0.0, 1.0])).toRotationMatrix()
    positions = np.array([R_fix @ data.xpos[b] for b in soles])
    offset = -np.array([positions[:, 0].mean(), positions[:, 1].mean(), positions[:, 2].mean()])
    q_fix = pin.Quaternion(R_fix)
    data.qpos[:3] = offset
    data.qpos[3:7] = [q_fix.w, q_fix.x, q_fix.y, q_fix.z]
    mujoco.mj_kinematics(model, data)
    poses = [(data.xpos[b].copy(), data.xmat[b].reshape(3, 3).copy()) for b in soles]
    return data.qpos.copy(), poses


def _tune_servos(
    spec: mujoco.MjSpec, model: mujoco.MjModel, qpos: FloatArray, config: RobotConfig, sim: HumanoidSimConfig
) -> dict[str, tuple[float, float]]:
    """Servo gains kp, kd, capped at M_jj w^2 and 2 M_jj w for w = 2 pi ``servo_max_frequency``;
    returns every joint's capped (kp, kd), which a lifted leg's joints take.

    kp = ``leg_stiffness`` m g h with m g the robot's weight [N] and h the height of its CoM above
    the soles [m] at the standing pose, kd = ``leg_damping_time`` kp: a robot three times as heavy
    and twice as tall as another needs six times the stiffness for the same sag and sway.
    M_jj is the joint's inertia at the standing pose: soft enough that a light wrist or neck link
    does not chatter. Leg joints (between the base and a sole) keep kp, kd: in the closed chain of
    the two feet their load and effective inertia are the whole body's, not their link's.
    """
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    assert config.floating_base is not None
    sole_height = np.mean([data.xpos[frame_body(model, config, f)][2] for f in config.floating_base.sole_frames])
    weight = float(model.body_subtreemass[0]) * float(np.linalg.norm(model.opt.gravity))
    leg_kp = sim.leg_stiffness * weight * max(float(data.subtree_com[0][2]) - sole_height, 0.0)
    leg_kd = sim.leg_damping_time * leg_kp
    M = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, M)
    legs: set[int] = set()  # joints between the base and a sole: in the closed chain, they carry the body
    for frame in config.floating_base.sole_frames:
        body = frame_body(model, config, frame)
        while body != 0:
            legs.update(int(j) for j in np.flatnonzero(model.jnt_bodyid == body))
            body = int(model.body_parentid[body])
    w = 2.0 * np.pi * sim.servo_max_frequency
    free_gains: dict[str, tuple[float, float]] = {}
    for name in config.joints:
        joint = model.joint(name).id
        dof = model.jnt_dofadr[joint]
        kp, kd = leg_kp, leg_kd
        if joint not in legs:
            kp, kd = min(kp, M[dof, dof] * w**2), min(kd, 2.0 * M[dof, dof] * w)
        spec.actuator(f"{name}_servo").set_to_position(kp=kp, kv=kd)
        free_gains[name] = (min(kp, M[dof, dof] * w**2), min(kd, 2.0 * M[dof, dof] * w))
    return free_gains


def _weld_soles(
    spec: mujoco.MjSpec, config: RobotConfig, poses: list[tuple[FloatArray, FloatArray]], weld_time_constant: float
) -> None:
    """Weld each sole to the world at its pose (relpose = the world's pose in the sole frame)."""
    assert config.floating_base is not None
    for frame, (p, R) in zip(config.floating_base.sole_frames, poses):
        name = _child_link(config, frame)
        world_in_sole = pin.SE3(R, p).inverse()
        quat = pin.Quaternion(world_in_sole.rotation)
        eq = spec.add_equality(
            name=f"{frame}_weld", type=mujoco.mjtEq.mjEQ_WELD, name1=name, objtype=mujoco.mjtObj.mjOBJ_BODY
        )
        eq.data[:11] = [0.0, 0.0, 0.0, *world_in_sole.translation, quat.w, quat.x, quat.y, quat.z, 1.0]
        eq.solref = [weld_time_constant, 1.0]  # stiff: a flat foot on hard ground


def _reference(
    config: RobotConfig,
    sim: HumanoidSimConfig,
    truth: FloatingBaseModel,
    q_start: FloatArray,
    base0: pin.SE3,
    poses: list[tuple[FloatArray, FloatArray]],
    schedule: list[Phase],
) -> tuple[CubicSpline, pin.SE3]:
    """Joint references (spline of time) and the first base pose: CoM sway and pelvis motion, sines elsewhere."""
    assert config.floating_base is not None
    soles = {name: pin.SE3(R, p) for name, (p, R) in zip(config.floating_base.sole_frames, poses)}
    model = truth.model
    legs = leg_joints(truth, [model.getFrameId(name) for name in soles])
    lower = model.lowerPositionLimit[truth.robot.q_index]
    upper = model.upperPositionLimit[truth.robot.q_index]
    swinging = np.setdiff1d(np.arange(truth.n), legs)
    t, axes, q = balancing_excitation(sim, np.asarray(q_start, dtype=float), lower, upper, swinging, GRID_S)
    plan = MotionPlan(t=t, com_offset=axes[:, :2], base_motion=axes[:, 2:], upper=q)
    return plan_reference(
        truth, plan, schedule, soles, base0, np.asarray(q_start, dtype=float), step_height=sim.step_height
    )


def _wrench_in_frame(data: mujoco.MjData, model: mujoco.MjModel, body: int, frame: int) -> FloatArray:
    """Wrench [f; tau] the constraints apply to ``body``, about and in the axes of body ``frame`` (6,)."""
    torque_c, force = data.cfrc_ext[body, :3], data.cfrc_ext[body, 3:]
    centre = data.subtree_com[model.body_rootid[body]]
    p, R = data.xpos[frame], data.xmat[frame].reshape(3, 3)
    torque = torque_c + np.cross(centre - p, force)
    return np.concatenate([R.T @ force, R.T @ torque])


def simulate_humanoid(config: RobotConfig, sim: HumanoidSimConfig) -> HumanoidRun:
    """Simulate the standing humanoid's balancing excitation and record its sensors (module docstring).

    Raises:
        ConfigError: no ``floating_base`` section or bad frames; EstimationError: the sway is out of reach.
    """
    fb = config.floating_base
    if fb is None:
        raise ConfigError(f"robot {config.name!r} has no floating_base section")
    spec = build_humanoid(config, sim)
    model = spec.compile()
    hinge_qpos = np.array([model.jnt_qposadr[model.joint(j).id] for j in config.joints])
    posture = np.asarray(fb.posture(config.joints), dtype=float)
    qpos0, poses = _standing_pose(model, config, hinge_qpos, posture)
    _weld_soles(spec, config, poses, sim.weld_time_constant)
    free_gains = _tune_servos(spec, model, qpos0, config, sim)
    theta_true = inertial_parameters(model, (FREE_JOINT, *config.joints))
    model = spec.compile()
    data = mujoco.MjData(model)
    data.qpos[:] = qpos0
    base0 = pin.SE3(pin.Quaternion(qpos0[3], *qpos0[4:7]).toRotationMatrix(), qpos0[:3])
    truth = config.build_floating_base().with_inertial_parameters(theta_true)
    n, c = len(config.joints), len(fb.contacts)
    schedule = contact_schedule(sim.duration, sim.single_support_phases, sim.single_support_s, c)
    reference, start = _reference(config, sim, truth, posture, base0, poses, schedule)
    data.qpos[:3] = start.translation  # the plan's first pose, so that the recording starts at rest
    quat_start = pin.Quaternion(start.rotation)
    data.qpos[3:7] = [quat_start.w, quat_start.x, quat_start.y, quat_start.z]
    data.qpos[hinge_qpos] = reference(0.0)
    N = int(round(sim.duration * sim.rate_hz))
    dt = 1.0 / sim.rate_hz
    t = np.arange(N, dtype=float) * dt
    contact = in_contact(schedule, t, c)
    welds = np.array([model.equality(f"{frame}_weld").id for frame in fb.sole_frames])
    soles = [frame_body(model, config, name) for name in fb.sole_frames]
    sensors = [frame_body(model, config, name) for name in fb.sensor_frames]
    adr = {name: int(model.sensor(name).adr[0]) for name in ("imu_quaternion", "imu_gyro", "imu_accelerometer")}
    actuators = np.array([model.actuator(f"{j}_servo").id for j in config.joints])
    dofs = np.array([model.jnt_dofadr[model.joint(j).id] for j in config.joints])
    kp = model.actuator_gainprm[actuators, 0].copy()
    stance_gains = (kp.copy(), -model.actuator_biasprm[actuators, 2].copy())
    capped = (np.array([free_gains[j][0] for j in config.joints]), np.array([free_gains[j][1] for j in config.joints]))
    pin_model = truth.model
    foot_legs = [leg_joints(truth, [pin_model.getFrameId(f)]) for f in fb.sole_frames]
    loop = ForceDistribution(
        model,
        soles,
        dofs,
        weight=float(theta_true[0::10].sum() * np.linalg.norm(config.gravity)),
        foot_size=fb.foot_size or (0.1, 0.05),
        friction_coefficient=fb.friction_coefficient,
        gain=sim.force_loop_gain,
    )
    out = signal_buffers(N, n, c)
    data.ctrl[actuators] = reference(0.0)
    for _ in range(int(round(SETTLE_S / model.opt.timestep))):  # let the servos take the weight
        mujoco.mj_step(model, data)
    tau_ff = np.zeros(n)
    for k in range(N):
        for i in map(
            int, np.flatnonzero(contact[k] & ~data.eq_active[welds].astype(bool))
        ):  # touchdown: weld where it landed
            mujoco.mj_kinematics(model, data)
            landed = pin.SE3(data.xmat[soles[i]].reshape(3, 3), data.xpos[soles[i]]).inverse()
            q_landed = pin.Quaternion(landed.rotation)
            model.eq_data[welds[i], 3:10] = [*landed.translation, q_landed.w, q_landed.x, q_landed.y, q_landed.z]
        if k == 0 or np.any(contact[k] != contact[k - 1]):  # a lifted leg carries only itself: capped gains
            kp, kd = stance_gains[0].copy(), stance_gains[1].copy()
            for i in map(int, np.flatnonzero(~contact[k])):
                kp[foot_legs[i]], kd[foot_legs[i]] = capped[0][foot_legs[i]], capped[1][foot_legs[i]]
            model.actuator_gainprm[actuators, 0] = kp
            model.actuator_biasprm[actuators, 1] = -kp
            model.actuator_biasprm[actuators, 2] = -kd
        data.eq_active[welds] = contact[k]
        mujoco.mj_forward(model, data)
        mujoco.mj_rnePostConstraint(model, data)
        tau_before, tau_ff = tau_ff, loop.update(data, contact[k]).copy() if sim.force_loop_gain > 0.0 else tau_ff
        # the control switches here: record the wrench of the mean control (the servo force is affine in it)
        data.ctrl[actuators] = reference(k * dt) + 0.5 * (tau_before + tau_ff) / kp
        mujoco.mj_forward(model, data)
        mujoco.mj_rnePostConstraint(model, data)
        out["q"][k] = data.qpos[hinge_qpos]
        out["tau"][k] = data.qfrc_actuator[dofs]  # after the joint's effort limit
        for i in range(c):
            out["wrench"][k, i] = _wrench_in_frame(data, model, soles[i], sensors[i])
            out["sole_wrench"][k, i] = _wrench_in_frame(data, model, soles[i], soles[i])
        w, x, y, z = data.sensordata[adr["imu_quaternion"] : adr["imu_quaternion"] + 4]
        out["quat"][k] = [x, y, z, w]
        out["gyro"][k] = data.sensordata[adr["imu_gyro"] : adr["imu_gyro"] + 3]
        out["acc"][k] = data.sensordata[adr["imu_accelerometer"] : adr["imu_accelerometer"] + 3]
        out["base_p"][k] = data.qpos[:3]
        out["base_q"][k] = [*data.qpos[4:7], data.qpos[3]]
        for s in range(_substeps(sim)):  # the reference at each step's middle: the control's mean error is 0
            data.ctrl[actuators] = reference(k * dt + (s + 0.5) * dt / _substeps(sim)) + tau_ff / kp
            mujoco.mj_step(model, data)
    return standing_run(config, sim, t, out, contact, theta_true)
