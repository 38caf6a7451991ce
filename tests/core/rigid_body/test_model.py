"""RobotModel: joint order by name, reflected inertia, closed-form dynamics."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.rigid_body.model import (
    check_positions_in_reach,
    forward_dynamics,
    inverse_dynamics,
    load_robot_model,
    positions_beyond_limits,
)
from motor_ident.errors import ConfigError, DataError, ModelError

PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0 0 -{l}"/><mass value="{m}"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="{ic}" iyz="0" izz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>"""

TWO_LINK = """<robot name="planar">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="{c1} 0 0"/><mass value="{m1}"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="{i1}"/></inertial></link>
  <link name="l2"><inertial><origin xyz="{c2} 0 0"/><mass value="{m2}"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="{i2}"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="{l1} 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>"""


def test_pendulum_matches_closed_form(rng: np.random.Generator) -> None:
    """A 1-DoF pendulum: tau = (I_c + m l^2 + rho^2 I_m) qdd + m g l sin(q)."""
    m, l, ic, rho, im = 1.7, 0.42, 0.013, 50.0, 2e-5
    robot = load_robot_model(PENDULUM.format(m=m, l=l, ic=ic), gear_ratio=rho, rotor_inertia=im)
    data = robot.create_data()
    for _ in range(20):
        q, v, a = rng.normal(size=3)
        expected = (ic + m * l * l + rho**2 * im) * a + m * 9.81 * l * np.sin(q)
        assert_allclose(inverse_dynamics(robot, data, [q], [v], [a]), [expected], rtol=1e-12, atol=1e-12)


def test_planar_two_link_matches_closed_form(rng: np.random.Generator) -> None:
    """A horizontal planar 2-link arm against the textbook M(q) qdd + C(q, qd) qd."""
    m1, m2, l1, c1, c2, i1, i2 = 2.0, 1.3, 0.6, 0.3, 0.25, 0.05, 0.02
    robot = load_robot_model(TWO_LINK.format(m1=m1, m2=m2, l1=l1, c1=c1, c2=c2, i1=i1, i2=i2))
    data = robot.create_data()
    for _ in range(20):
        q, v, a = rng.normal(size=(3, 2))
        cos2, sin2 = np.cos(q[1]), np.sin(q[1])
        m11 = i1 + i2 + m1 * c1**2 + m2 * (l1**2 + c2**2 + 2 * l1 * c2 * cos2)
        m12 = i2 + m2 * (c2**2 + l1 * c2 * cos2)
        m22 = i2 + m2 * c2**2
        h = m2 * l1 * c2 * sin2
        tau = np.array(
            [m11 * a[0] + m12 * a[1] - h * (2 * v[0] * v[1] + v[1] ** 2), m12 * a[0] + m22 * a[1] + h * v[0] ** 2]
        )
        assert_allclose(inverse_dynamics(robot, data, q, v, a), tau, rtol=1e-11, atol=1e-12)


def test_joint_order_follows_names(rng: np.random.Generator) -> None:
    """Arrays follow the configured joint order, whatever pinocchio's order is."""
    urdf = TWO_LINK.format(m1=2.0, m2=1.3, l1=0.6, c1=0.3, c2=0.25, i1=0.05, i2=0.02)
    natural = load_robot_model(urdf)
    swapped = load_robot_model(urdf, joint_names=["j2", "j1"], gear_ratio=[3.0, 7.0])
    assert swapped.joint_names == ("j2", "j1")
    assert swapped.body_names == ("l2", "l1")
    assert_allclose(swapped.gear_ratio, [3.0, 7.0])
    q, v, a = rng.normal(size=(3, 2))
    tau = inverse_dynamics(natural, natural.create_data(), q, v, a)
    tau_swapped = inverse_dynamics(swapped, swapped.create_data(), q[::-1], v[::-1], a[::-1])
    assert_allclose(tau_swapped, tau[::-1], rtol=1e-12)
    qdd = forward_dynamics(swapped, swapped.create_data(), q[::-1], v[::-1], tau[::-1])
    assert_allclose(qdd, a[::-1], rtol=1e-9, atol=1e-9)


def test_locked_joints_and_reflected_inertia() -> None:
    """Unlisted joints are locked; reflected inertia is rho^2 I_m (Guedelha et al. 2021, eq. 10)."""
    urdf = TWO_LINK.format(m1=2.0, m2=1.3, l1=0.6, c1=0.3, c2=0.25, i1=0.05, i2=0.02)
    robot = load_robot_model(urdf, joint_names=["j2"], gear_ratio=120.0, rotor_inertia=3e-5)
    assert robot.n == 1 and robot.model.nv == 1
    assert_allclose(robot.reflected_inertia, [120.0**2 * 3e-5])
    tau = inverse_dynamics(robot, robot.create_data(), [0.0], [0.0], [1.0])
    assert_allclose(tau, [0.02 + 1.3 * 0.25**2 + 120.0**2 * 3e-5], rtol=1e-12)


def test_bad_inputs_name_the_problem() -> None:
    """Unknown joints, wrong shapes and broken URDFs raise errors that say what is wrong."""
    urdf = TWO_LINK.format(m1=2.0, m2=1.3, l1=0.6, c1=0.3, c2=0.25, i1=0.05, i2=0.02)
    with pytest.raises(ConfigError, match="elbow"):
        load_robot_model(urdf, joint_names=["j1", "elbow"])
    with pytest.raises(ConfigError, match="gear_ratio"):
        load_robot_model(urdf, gear_ratio=[1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match="rotor_inertia"):
        load_robot_model(urdf, rotor_inertia=[-1.0, 0.0])
    with pytest.raises(ModelError, match="does not exist"):
        load_robot_model("/nonexistent/robot.urdf")
    with pytest.raises(ModelError, match="URDF"):
        load_robot_model("<robot name='x'><joint name='a' type='revolute'></robot>")


def test_positions_beyond_twice_the_range_are_named_and_continuous_joints_never() -> None:
    """Limits [-3, 3] (range 6): 14.9 rad passes, 15.1 rad (beyond 3 + 2 x 6) is named; a continuous joint never."""
    urdf = TWO_LINK.format(m1=2.0, m2=1.3, l1=0.6, c1=0.3, c2=0.25, i1=0.05, i2=0.02)
    robot = load_robot_model(urdf)
    assert positions_beyond_limits(robot, [[0.0, -14.9], [1.0, 14.9]]) == []
    assert positions_beyond_limits(robot, [[0.0, -15.1], [1.0, 0.0]]) == ["j2 reaches -15.1 (URDF limits -3 to 3)"]
    with pytest.raises(DataError, match=r"j1 reaches 171.9 \(URDF limits -3 to 3\)\. Degrees\?"):
        check_positions_in_reach(robot, np.degrees([[0.0, 0.0], [3.0, 0.1]]))
    continuous = load_robot_model(urdf.replace('name="j1" type="revolute"', 'name="j1" type="continuous"'))
    assert positions_beyond_limits(continuous, [[1000.0, 0.0], [0.0, 0.0]]) == []
