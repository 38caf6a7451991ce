"""``motor-ident monitor`` as users start it: where it listens, what it offers, a clean Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros


def test_monitor_command_binds_loopback_says_so_and_stops_on_sigint() -> None:
    """The command serves the robot description on 127.0.0.1 with no capability, logs where it
    listens and that it is this machine only, and exits 0 on SIGINT."""
    from motor_ident.ros.monitor.foxglove_client import FoxgloveClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "motor_ident.cli", "monitor", "--port", str(port), "--robot", "valkyrie_arm"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        with FoxgloveClient(f"ws://127.0.0.1:{port}", timeout=60.0) as client:
            channels = client.wait_for(["/robot_description"], 30.0)
            assert client.server_info["capabilities"] == []
            assert channels["/robot_description"].schema_name == "std_msgs/msg/String"
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"ws://127.0.0.1:{port} (this machine only" in output, output
    assert "clients cannot publish, cannot change parameters" in output
