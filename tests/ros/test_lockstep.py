"""Lockstep over DDS: a simulator (sim_robot, elastic_sim) and a test-side controller that answers
some states late and skips one.

The controller answers state k (stamp k / rate_hz) with a joint-0 torque that encodes k; the
simulator publishes the torque it applied as the next state's effort (no torque noise), so each
step shows which state's answer it applied. "Late" is an event, not a delay: the answer to state
k is sent only once state k + 1 arrived, i.e. after the simulator stepped past k on its timeout.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros

RATE_HZ = 1000.0
STEPS = 100
LATE = (20, 40)  # states answered only after the next state arrived
SKIPPED = 60  # a state never answered
SCALE = 1e-3  # N m per state index
TIMEOUT_S = 0.3  # a spurious timeout on a loaded machine is allowed for below, not assumed away


SIMULATORS = {  # node -> (class, parameters beyond the lockstep ones)
    "sim_robot": ("motor_ident.ros.nodes.sim_robot_node:SimRobotNode", {"rate_hz": RATE_HZ, "torque_noise_std": 0.0}),
    "elastic_sim": ("motor_ident.ros.nodes.elastic_sim_node:ElasticSimNode", {"rate_hz": RATE_HZ}),
}


@pytest.mark.parametrize("simulator", sorted(SIMULATORS))
def test_late_and_lost_commands_leave_every_later_command_on_its_own_state(ros, simulator: str) -> None:
    """Every step applies the answer to the state it stepped from, except the timeout steps (held
    command); the late answers are held, not stepped on; the diagnostics count them."""
    import importlib
    from dataclasses import asdict

    import numpy as np
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS
    from motor_ident.ros.runtime.lockstep import status_counts

    path, parameters = SIMULATORS[simulator]
    module, name = path.split(":")
    node_class = getattr(importlib.import_module(module), name)

    controller = ros.probe("lockstep_controller")
    command_pub = controller.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
    effort_of: dict[int, float] = {}  # state index -> joint 0's published effort
    deferred: list[int] = []
    statuses: list[DiagnosticStatus] = []
    n_joints: list[int] = []

    def answer(k: int) -> None:
        command = np.zeros(n_joints[0])
        command[0] = SCALE * k
        command_pub.publish(Float64MultiArray(data=command.tolist()))

    def on_state(msg: JointState) -> None:
        k = round((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec) * RATE_HZ)
        if k in effort_of or not n_joints:
            return
        effort_of[k] = msg.effort[0]
        while deferred:
            answer(deferred.pop())
        if k in LATE:
            deferred.append(k)
        elif k != SKIPPED:
            answer(k)

    def on_diagnostics(msg: DiagnosticArray) -> None:
        statuses.extend(s for s in msg.status if s.name == f"motor_ident: {simulator}")

    controller.create_subscription(JointState, "joint_states", on_state, STATE_QOS)
    controller.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    sim = ros.add(
        node_class,
        lockstep=True,
        lockstep_timeout=TIMEOUT_S,
        duration=STEPS / RATE_HZ,
        diagnostics_period=0.2,
        **parameters,
    )
    n_joints.append(len(sim.joints if simulator == "elastic_sim" else sim.joint_names))
    assert ros.spin_until(lambda: sim.finished, 60.0), sim.wait.counts()

    def reported() -> dict | None:  # the last status's counts, as a run's summary reads them
        return status_counts({kv.key: kv.value for kv in statuses[-1].values}) if statuses else None

    def current() -> dict:
        return asdict(sim.wait.counts())

    # the status published when the duration was reached (or a later one) has the counts
    same = ros.spin_until(lambda: reported() is not None and reported()["answered"] == current()["answered"], 5.0)
    assert same, (reported(), current())
    counts = sim.wait.counts()

    applied = {k: round(effort_of[k + 1] / SCALE) for k in range(STEPS) if k in effort_of and k + 1 in effort_of}
    assert len(applied) >= 0.9 * STEPS, sorted(applied)
    first_answered = next(k for k in sorted(applied) if applied[k] == k)  # before it: the controller starting
    off = sorted(k for k in applied if k >= first_answered and applied[k] != k)
    # each intended misstep applied the previous state's answer (held), and no later step is one state late
    assert {k: applied.get(k) for k in (*LATE, SKIPPED)} == {20: 19, 40: 39, 60: 59}, off
    assert applied.get(SKIPPED + 1) == SKIPPED + 1, off  # one timeout after the lost command: in step again
    assert len(off) <= counts.timeout_steps, (off, counts)  # without the ledger: every step after 20 is off
    assert counts.stale_commands >= 2 and counts.lost_commands >= 1 and counts.timeout_steps >= 4, counts

    last = reported()
    assert last is not None and last.pop("last_wait") == pytest.approx(counts.last_wait, rel=1e-5)
    assert last == {k: v for k, v in asdict(counts).items() if k != "last_wait"}
    assert any(s.level == DiagnosticStatus.WARN and "timeout steps" in s.message for s in statuses)
