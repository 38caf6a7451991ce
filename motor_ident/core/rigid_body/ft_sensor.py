"""Joint torques from a 6-axis force/torque sensor on a link (iCub's leg and arm F/T sensors, Guedelha et al. 2021).

iCub measures no joint torque directly: each limb carries a 6-axis F/T sensor, and the torque of a
joint proximal to the sensor is the sensor wrench transported to that joint's axis plus the
inertial and gravity terms of the links between the joint and the sensor. Guedelha et al. 2021 identifies its
friction and motor models against such estimates.

Convention (pinocchio's spatial algebra, wrench vectors ``[f; m]`` with force first):

- the sensor sits on the link moved by joint ``joint`` at ``placement`` (SE3 of the sensor frame in
  that joint's frame); that link's inertia is counted on the proximal side, every child joint's
  subtree on the distal side (a real sensor splits a link; put the split where the URDF does);
- ``wrench`` is what the proximal side applies to the distal side through the sensor, in the
  sensor frame [N, N m]. Contacts on the distal side (a foot on the ground) are in it whatever
  they are, which is the point of the sensor.

For joint ``i`` on the path from the root to the sensor link ``k``, with per-body forces
``f_b = I_b a_b^g + v_b x* I_b v_b`` (``a^g`` includes gravity, as in RNEA's forward pass):

    tau_i = S_i' ( sum_{b in path(i..k)} iX_b* f_b + iX_k* kX_s* wrench )

which is RNEA's backward pass with the distal subtree replaced by the measured wrench. With the
true wrench it equals full RNEA's (link-side) torque, which the tests check. Joints not on that
path, and path joints above a branch (another limb leaving the path, whose loads the sensor does
not see), are not observable from this sensor and are returned as NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class ForceTorqueSensor:
    """A 6-axis F/T sensor on the link moved by ``joint``.

    Attributes:
        joint: name of the joint whose link carries the sensor.
        placement: sensor frame in that joint's frame (pinocchio SE3); identity when None.
    """

    joint: str
    placement: pin.SE3 | None = None

    def joint_id(self, robot: RobotModel) -> int:
        """Pinocchio joint id of ``joint``.

        Raises:
            ConfigError: the joint is not in the model.
        """
        if self.joint not in robot.joint_names:
            raise ConfigError(f"F/T sensor joint = {self.joint!r}: expected one of {list(robot.joint_names)}")
        return int(robot.model.getJointId(self.joint))

    @property
    def frame(self) -> pin.SE3:
        """The sensor placement (identity when None)."""
        return pin.SE3.Identity() if self.placement is None else self.placement


def sensor_wrench(
    robot: RobotModel,
    data: pin.Data,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    sensor: ForceTorqueSensor,
    external: dict[str, ArrayLike] | None = None,
) -> FloatArray:
    """What the sensor reads on the moving robot: the wrench across it, sensor frame, shape (6,) [N, N m].

    Args:
        robot: the (true) model; use it without rotor inertia, which is on the motor side.
        data: its workspace.
        q, qd, qdd: joint positions, velocities, accelerations, shape (n,) [rad, rad/s, rad/s^2].
        sensor: the sensor.
        external: wrench [f; m] applied by the environment on the link of a joint (name -> (6,)),
            in that joint's frame (a foot contact).
    """
    model = robot.model
    fext = pin.StdVec_Force()
    for _ in range(model.njoints):
        fext.append(pin.Force.Zero())
    for name, wrench in (external or {}).items():
        if name not in robot.joint_names:
            raise ConfigError(f"external wrench on {name!r}: expected one of {list(robot.joint_names)}")
        fext[model.getJointId(name)] = pin.Force(np.asarray(wrench, dtype=float))
    pin.rnea(model, data, robot.pin_q(q), robot.pin_v(qd), robot.pin_v(qdd), fext)
    k = sensor.joint_id(robot)
    total = pin.Force.Zero()
    for child in range(1, model.njoints):
        if model.parents[child] == k:
            total += data.liMi[child].act(data.f[child])
    return np.array(sensor.frame.actInv(total).vector)


def joint_torques_from_wrench(
    robot: RobotModel,
    data: pin.Data,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    wrench: ArrayLike,
    sensor: ForceTorqueSensor,
) -> FloatArray:
    """Link-side joint torques estimated from the sensor wrench, shape (n,) [N m]; NaN where not observable.

    Args:
        robot: the model of the links (its inertial parameters are used between joint and sensor).
        data: its workspace.
        q, qd, qdd: joint positions, velocities, accelerations, shape (n,).
        wrench: sensor reading [f; m] in the sensor frame, shape (6,) [N, N m] (see the module docstring).
        sensor: the sensor.

    Raises:
        ConfigError: the wrench is not 6 finite numbers.
    """
    w = np.asarray(wrench, dtype=float)
    if w.shape != (6,) or not np.all(np.isfinite(w)):
        raise ConfigError(f"wrench has shape {w.shape} or non-finite values: expected 6 finite numbers [N, N m]")
    model = robot.model
    k = sensor.joint_id(robot)
    pin.forwardKinematics(model, data, robot.pin_q(q), robot.pin_v(qd), robot.pin_v(qdd))
    path = []
    j = k
    while j > 0:
        path.append(j)
        j = model.parents[j]
    tau = np.full(robot.n, np.nan)
    column = {int(v): c for c, v in enumerate(robot.v_index)}
    force = sensor.frame.act(pin.Force(w))
    previous = None
    for j in path:  # sensor link -> root, RNEA's backward pass
        if previous is not None and any(model.parents[c] == j and c != previous for c in range(1, model.njoints)):
            break  # a branch (another limb) leaves the path here: its loads are not measured
        previous = j
        inertia = model.inertias[j]
        a_g = data.a[j] + data.oMi[j].actInv(-model.gravity)  # body acceleration with gravity, as in RNEA
        force = force + inertia * a_g + data.v[j].cross(inertia * data.v[j])
        if model.joints[j].nv != 1:
            raise ConfigError(f"joint {model.names[j]!r}: F/T torque estimation handles 1-DoF joints only")
        tau[column[model.joints[j].idx_v]] = (data.joints[j].S.T @ force.vector).item()
        force = data.liMi[j].act(force)
    return tau
