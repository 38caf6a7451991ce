"""The ``ros2 run motor_ident <node>`` entry points (setup.py's ``NODES``).

Each installs the process's stop handling (`motor_ident.ros.runtime.shutdown`) before it imports its node's
module, so a Ctrl-C, SIGTERM or SIGHUP during those imports (rclpy, pinocchio, cvxpy: seconds on a busy
machine) ends the process with exit code 0 and no KeyboardInterrupt traceback, then runs the
module's ``main()``. Only the standard library is imported at module level.

    python -m motor_ident.ros.runtime.entry_points feedforward --ros-args -p robot:=valkyrie_arm
"""

from __future__ import annotations

import importlib
import sys

from motor_ident.ros.runtime.shutdown import StopRequested, install

MODULES = {
    "sim_robot": "motor_ident.ros.nodes.sim_robot_node",
    "identifier": "motor_ident.ros.nodes.identifier_node",
    "floating_identifier": "motor_ident.ros.nodes.floating_identifier_node",
    "feedforward": "motor_ident.ros.nodes.feedforward_node",
    "excitation": "motor_ident.ros.nodes.excitation_node",
    "decoupler": "motor_ident.ros.nodes.decoupler_node",
    "pwm_feedforward": "motor_ident.ros.nodes.pwm_feedforward_node",
    "vrec_controller": "motor_ident.ros.nodes.vrec_controller_node",
    "elastic_sim": "motor_ident.ros.nodes.elastic_sim_node",
    "monitor": "motor_ident.ros.monitor.monitor_node",
}
"""Node name -> the module whose ``main()`` runs it."""


def run(name: str, args: list[str] | None = None) -> None:
    """Install the stop handling, import node ``name``'s module and run its ``main(args)``."""
    try:
        install()  # raises when the supervisor it must not outlive has ended already
        module = importlib.import_module(MODULES[name])
        module.main(args)
    except StopRequested as stop:
        sys.stderr.write(f"[{name}] stopped by {stop} while starting\n")
        install().finished()


def sim_robot() -> None:
    """``ros2 run motor_ident sim_robot``."""
    run("sim_robot")


def identifier() -> None:
    """``ros2 run motor_ident identifier``."""
    run("identifier")


def floating_identifier() -> None:
    """``ros2 run motor_ident floating_identifier``."""
    run("floating_identifier")


def feedforward() -> None:
    """``ros2 run motor_ident feedforward``."""
    run("feedforward")


def excitation() -> None:
    """``ros2 run motor_ident excitation``."""
    run("excitation")


def decoupler() -> None:
    """``ros2 run motor_ident decoupler``."""
    run("decoupler")


def pwm_feedforward() -> None:
    """``ros2 run motor_ident pwm_feedforward``."""
    run("pwm_feedforward")


def vrec_controller() -> None:
    """``ros2 run motor_ident vrec_controller``."""
    run("vrec_controller")


def elastic_sim() -> None:
    """``ros2 run motor_ident elastic_sim``."""
    run("elastic_sim")


def monitor() -> None:
    """``ros2 run motor_ident monitor``."""
    run("monitor")


if __name__ == "__main__":
    run(sys.argv[1], [sys.argv[0], *sys.argv[2:]])  # rcl reads the first as the program name
