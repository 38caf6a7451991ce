"""The managed nodes driven over DDS through their lifecycle_msgs services, as launch's
LifecycleNode actions and a robot's lifecycle manager drive them: nothing commanded before
activate, exactly the safe output on deactivate, invalid transitions refused, reconfigure with
new parameters, a configure error leaves the node unconfigured, a callback exception sends the
safe output."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

JOINTS = {
    "valkyrie_arm": ("shoulder_extensor", "shoulder_adductor", "upper_arm_rotation", "elbow"),
    "icub_torso": ("torso_pitch", "torso_roll", "torso_yaw"),
}
# Measured per node (printed with pytest -s): activate -> first output, deactivate -> safe output [ms].
MEASURED: dict[str, dict[str, float]] = {}


@dataclass
class Lifecycle:
    """Clients of one node's ``change_state`` / ``get_state`` services, from the test's probe."""

    ros: Any
    probe: Any
    name: str
    clients: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from lifecycle_msgs.srv import ChangeState, GetState

        self.clients = {
            "change": self.probe.create_client(ChangeState, f"/{self.name}/change_state"),
            "get": self.probe.create_client(GetState, f"/{self.name}/get_state"),
        }
        assert self.ros.spin_until(lambda: all(c.service_is_ready() for c in self.clients.values()), 30.0)

    def _call(self, which: str, request: Any) -> Any:
        future = self.clients[which].call_async(request)
        assert self.ros.spin_until(future.done, 60.0), f"{self.name}: no answer from {which}"
        return future.result()

    def change(self, transition: str) -> bool:
        """Ask for ``transition`` (configure, activate, deactivate, cleanup, shutdown); whether it succeeded."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        ids = {
            "configure": Transition.TRANSITION_CONFIGURE,
            "activate": Transition.TRANSITION_ACTIVATE,
            "deactivate": Transition.TRANSITION_DEACTIVATE,
            "cleanup": Transition.TRANSITION_CLEANUP,
            "shutdown": Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,
        }
        return bool(self._call("change", ChangeState.Request(transition=Transition(id=ids[transition]))).success)

    def state(self) -> str:
        from lifecycle_msgs.srv import GetState

        return str(self._call("get", GetState.Request()).current_state.label)


@dataclass(frozen=True)
class Case:
    """A managed node, what the probe feeds it and the topic its commands go out on."""

    node: str
    robot: str
    output: str  # topic
    output_type: str  # "array" or "trajectory"
    feeds: tuple[str, ...]  # joint_states, motor_states, desired (pwm_feedforward's command_topic)
    parameters: dict[str, Any] = field(default_factory=dict)


CASES = {
    "feedforward": Case(
        "feedforward",
        "valkyrie_arm",
        "effort_controller/commands",
        "array",
        ("joint_states",),
        {"safe_mode": "zero", "rate_limit": [1e9]},
    ),
    "pwm_feedforward": Case(
        "pwm_feedforward",
        "icub_torso",
        "pwm_controller/commands",
        "array",
        ("joint_states", "desired"),
        {"robot": "icub_torso", "command_space": "joint", "command_topic": "desired_torques"},
    ),
    "vrec_controller": Case(
        "vrec_controller", "valkyrie_arm", "effort_controller/commands", "array", ("joint_states", "motor_states")
    ),
    "excitation": Case("excitation", "valkyrie_arm", "feedforward/reference", "trajectory", ("joint_states",)),
    "identifier": Case(
        "identifier",
        "valkyrie_arm",
        "identifier/active_full_parameters",
        "array",
        ("joint_states",),
        {"require_consistent": False},
    ),
}


def _node_class(name: str) -> Any:
    from motor_ident.ros.runtime.runner import node_class

    return node_class(name)


def _feeder(probe: Any, case: Case) -> Any:
    """A function publishing one sample on each of the case's inputs (joint states at a rising stamp)."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS
    from motor_ident.ros.wire.conversions import make_array, make_joint_state

    joints = ("joint1",) if case.node == "vrec_controller" else JOINTS[case.robot]
    rng = np.random.default_rng(3)
    publishers = {
        "joint_states": probe.create_publisher(JointState, "joint_states", STATE_QOS),
        "motor_states": probe.create_publisher(JointState, "motor_states", STATE_QOS),
        "desired": probe.create_publisher(Float64MultiArray, "desired_torques", COMMAND_QOS),
    }
    count = [0]

    def feed() -> None:
        count[0] += 1
        t = 0.001 * count[0]
        n = len(joints)
        for what in case.feeds:
            if what == "joint_states":
                q, qd, tau = rng.uniform(-0.3, 0.3, (3, n))
                publishers[what].publish(make_joint_state(joints, t, q, qd, tau))
            elif what == "motor_states":
                q, qd = rng.uniform(-0.3, 0.3, (2, n))
                publishers[what].publish(
                    make_joint_state(joints, t, q, qd, np.zeros(n))
                )  # motor_names default: the joints
            else:
                publishers[what].publish(make_array(rng.uniform(-1.0, 1.0, n)))

    return feed


def _reference(probe: Any, joints: tuple[str, ...]) -> Any:
    """A publisher of a reference holding position 0.1 rad over the next 100 s (for the feedforward)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    pub = probe.create_publisher(JointTrajectory, "feedforward/reference", 10)
    msg = JointTrajectory(joint_names=list(joints))
    msg.points = [
        JointTrajectoryPoint(positions=[0.1] * len(joints), time_from_start=Duration(sec=sec)) for sec in (0, 100)
    ]
    return lambda: pub.publish(msg)


@pytest.mark.parametrize("name", list(CASES))
def test_transitions_over_dds(ros, name: str) -> None:
    """unconfigured -> configure -> inactive (no output however many inputs) -> activate -> output
    -> deactivate -> exactly one more message, the safe output -> inactive, no output -> cleanup
    -> unconfigured -> shutdown -> finalized; invalid transitions are refused on the way."""
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from motor_ident.ros.runtime.common import STATE_QOS

    case = CASES[name]
    node = ros.add(_node_class(name), activate=False, **case.parameters)
    probe = ros.probe("lifecycle_probe")
    received: list[tuple[float, Any]] = []
    kind = Float64MultiArray if case.output_type == "array" else JointTrajectory
    qos = 10 if name == "identifier" else STATE_QOS
    probe.create_subscription(kind, case.output, lambda m: received.append((time.monotonic(), m)), qos)
    life = Lifecycle(ros, probe, node.get_name())
    feed = _feeder(probe, case)
    reference = _reference(probe, JOINTS[case.robot])
    each = (lambda: (feed(), reference())) if name == "feedforward" else feed

    assert life.state() == "unconfigured"
    assert not life.change("activate") and not life.change("deactivate"), "activate/deactivate while unconfigured"
    assert life.change("configure") and life.state() == "inactive"
    assert not life.change("configure"), "configure twice"
    # inactive: the inputs that lead to commands are not even subscribed; 50 rounds of inputs, no output
    for _ in range(50):
        each()
        ros.executor.spin_once(timeout_sec=0.005)
    if name != "identifier":  # the identifier's model topic is latched: nothing before activate either
        assert not received, f"{name} published {len(received)} messages while inactive"
    else:
        assert not received

    activated = time.monotonic()
    assert life.change("activate") and life.state() == "active"
    assert ros.spin_until(lambda: bool(received), 60.0, each=each), f"{name}: no output while active"
    first = received[0][0] - activated

    def is_safe(msg: Any) -> bool:
        if name == "excitation":
            return bool(msg.points) and not np.array([p.velocities for p in msg.points]).any()
        if name == "identifier":  # the nominal model, gate closed
            return not node.core.gate_open and np.allclose(msg.data, node.core.active_theta_full)
        return not np.any(msg.data)  # zero torque / zero duty

    deactivate = time.monotonic()
    assert life.change("deactivate") and life.state() == "inactive"
    before = len([t for t, _ in received if t <= deactivate])  # commands still in flight may follow

    def safe_received() -> bool:
        return any(is_safe(m) for _, m in received[before:])

    assert ros.spin_until(safe_received, 10.0), f"{name}: no safe output on deactivate"
    safe_seconds = next(t for t, m in received[before:] if is_safe(m)) - deactivate
    for _ in range(50):  # inactive again: inputs, no output
        each()
        ros.executor.spin_once(timeout_sec=0.005)
    last = received[-1][1]
    assert is_safe(last), f"{name}: {last} after the safe output"
    if name != "identifier":  # the one safe message ends the output (the identifier's nominal model may repeat)
        assert sum(is_safe(m) for _, m in received[before:]) == 1, f"{name}: more than one safe output"

    assert not life.change("deactivate"), "deactivate twice"
    assert life.change("cleanup") and life.state() == "unconfigured"
    assert life.change("shutdown") and life.state() == "finalized"
    MEASURED[name] = {"activate_to_first_output_ms": 1e3 * first, "deactivate_to_safe_output_ms": 1e3 * safe_seconds}
    print(f"\n{name}: {MEASURED[name]}")


def test_reconfigure_applies_new_parameters(ros) -> None:
    """A parameter read at configure (state_timeout) is refused while configured, taken while
    unconfigured, and in use after the next configure; a configure error (robot that does not
    exist) leaves the node unconfigured with the reason, and a good value configures it again."""
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode

    node = ros.add(FeedforwardNode, activate=False)
    probe = ros.probe("reconfigure_probe")
    life = Lifecycle(ros, probe, "feedforward")
    params = AsyncParameterClient(probe, "feedforward")
    assert ros.spin_until(params.services_are_ready, 30.0)

    def set_parameter(name: str, value: Any) -> Any:
        future = params.set_parameters([Parameter(name, value=value)])
        assert ros.spin_until(future.done, 30.0)
        return future.result().results[0]

    assert life.change("configure") and node.state_timeout == 0.1
    refused = set_parameter("state_timeout", 0.25)
    assert not refused.successful and "apply at configure" in refused.reason
    assert life.change("cleanup")
    assert set_parameter("state_timeout", 0.25).successful
    assert set_parameter("robot", "no_such_robot").successful  # checked at configure
    assert not life.change("configure") and life.state() == "unconfigured"
    assert node.configure_error is not None and "robot = 'no_such_robot'" in str(node.configure_error)
    assert set_parameter("robot", "valkyrie_arm").successful
    assert life.change("configure") and life.state() == "inactive"
    assert node.state_timeout == 0.25
    assert life.change("activate") and life.state() == "active"


def test_callback_exception_sends_safe_output_and_unconfigures(ros) -> None:
    """An exception in the feedforward's state callback, caught where the node is spun (`managing`
    finds the node, `fail`): the safe output goes out (zero torque), the node is unconfigured."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode
    from motor_ident.ros.runtime.common import STATE_QOS
    from motor_ident.ros.runtime.lifecycle import managing

    node = ros.add(FeedforwardNode, safe_mode="zero", rate_limit=[1e9])
    probe = ros.probe("failure_probe")
    received: list[Any] = []
    probe.create_subscription(Float64MultiArray, "effort_controller/commands", received.append, STATE_QOS)
    case = CASES["feedforward"]
    feed, reference = _feeder(probe, case), _reference(probe, JOINTS[case.robot])
    assert ros.spin_until(lambda: bool(received), 60.0, each=lambda: (feed(), reference()))

    def broken(*args: Any) -> Any:
        raise RuntimeError("model blew up")

    node.law.command = broken
    failure: list[BaseException] = []
    deadline = time.monotonic() + 30.0
    while not failure and time.monotonic() < deadline:
        feed()
        try:
            ros.executor.spin_once(timeout_sec=0.05)
        except RuntimeError as exc:  # what run_node and the runner do with it
            failure.append(exc)
            failed = managing(exc)
            assert failed is node
            failed.fail(exc)
    assert failure, "the broken callback never ran"
    count = len(received)
    assert ros.spin_until(lambda: len(received) > count and not any(received[-1].data), 10.0), received[-1:]
    assert not node.configured and not node.commanding
    assert node._state_machine.current_state[1] == "unconfigured"


def test_destroyed_node_leaves_the_graph_at_once(ros) -> None:
    """A destroyed managed node and its lifecycle services leave the ROS graph when it is destroyed,
    not when Python collects it: a second run in the same process (an in-process demo, then
    ``--processes``) must not send its configure requests to the first run's node."""
    from motor_ident.ros.nodes.excitation_node import ExcitationNode

    probe = ros.probe("graph_probe")
    node = ros.add(ExcitationNode, activate=True)
    assert ros.spin_until(lambda: "excitation" in probe.get_node_names(), 30.0)
    ros.destroy(node)

    def services() -> list[str]:  # its lifecycle services (rclpy leaves get_type_description behind)
        return [name for name, _ in probe.get_service_names_and_types() if "/excitation/" in name and "state" in name]

    assert ros.spin_until(lambda: "excitation" not in probe.get_node_names() and not services(), 30.0), services()
