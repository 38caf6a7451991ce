"""A managed node started as its own process has every parameter from the start: a bringup lists,
reads and sets them over the parameter services while the node is unconfigured, and configure
builds from what it set."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from motor_ident.scenario.nodes import FeedforwardSettings
from motor_ident.schema import specs
from tests.conftest import REPO

pytestmark = pytest.mark.ros

STARTUP_TIMEOUT_S = 90.0  # the node's imports and DDS discovery on a loaded machine
ANSWER_TIMEOUT_S = 30.0


def _answer(ros: Any, future: Any) -> Any:
    assert ros.spin_until(future.done, ANSWER_TIMEOUT_S), "no answer from the node's service"
    return future.result()


def test_parameters_set_while_unconfigured_apply_at_configure(ros, tmp_path) -> None:
    """A fresh unconfigured feedforward process lists every setting with its value; a value out of
    range or not among the choices is refused with the reason, a read-only-while-running one (``output``) is
    taken, and after configure the node publishes what it was set to (a JointTrajectory)."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    log = tmp_path / "feedforward.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "motor_ident.ros.nodes.feedforward_node"],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        probe = ros.probe("bringup_probe")
        params = AsyncParameterClient(probe, "feedforward")
        get_state = probe.create_client(GetState, "feedforward/get_state")
        change_state = probe.create_client(ChangeState, "feedforward/change_state")
        ready = ros.spin_until(
            lambda: process.poll() is not None or (params.services_are_ready() and get_state.service_is_ready()),
            STARTUP_TIMEOUT_S,
        )
        assert ready and process.poll() is None, log.read_text()
        assert _answer(ros, get_state.call_async(GetState.Request())).current_state.label == "unconfigured"

        listed = set(_answer(ros, params.list_parameters()).result.names)
        assert set(specs(FeedforwardSettings)) <= listed, sorted(set(specs(FeedforwardSettings)) - listed)
        (safe_mode,) = _answer(ros, params.get_parameters(["safe_mode"])).values
        assert safe_mode.string_value == "gravity"

        (bad,) = _answer(ros, params.set_parameters([Parameter("state_timeout", value=-1.0)])).results
        assert not bad.successful and "state_timeout out of range" in bad.reason, bad.reason
        (bad,) = _answer(ros, params.set_parameters([Parameter("output", value="torque")])).results
        assert not bad.successful and "output = 'torque'" in bad.reason and "joint_trajectory" in bad.reason, bad.reason
        (good,) = _answer(ros, params.set_parameters([Parameter("output", value="joint_trajectory")])).results
        assert good.successful, good.reason

        configure = ChangeState.Request(transition=Transition(id=Transition.TRANSITION_CONFIGURE))
        assert _answer(ros, change_state.call_async(configure)).success, log.read_text()
        published = dict(probe.get_publisher_names_and_types_by_node("feedforward", "/"))
        trajectory = published.get("/joint_trajectory_controller/joint_trajectory")
        assert trajectory == ["trajectory_msgs/msg/JointTrajectory"] and "/effort_controller/commands" not in published
        (refused,) = _answer(ros, params.set_parameters([Parameter("output", value="forward_command")])).results
        assert not refused.successful and "apply at configure" in refused.reason
    finally:
        process.terminate()
        process.wait(timeout=30.0)
