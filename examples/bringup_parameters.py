"""Bring a managed motor_ident node up as a lifecycle manager does: parameters set while it is
unconfigured, then configure (and activate).

    .venv/bin/python -m motor_ident.ros.nodes.feedforward_node &      # waits unconfigured
    .venv/bin/python examples/bringup_parameters.py feedforward output=joint_trajectory \\
        state_timeout=0.25 --activate

Each ``NAME=VALUE`` (VALUE read as YAML: ``0.25``, ``zero``, ``[50.0]``) is set through the node's
parameter service and printed as accepted or refused with the node's reason. Then configure (and,
with ``--activate``, activate) through its lifecycle services. Exit code 1 if a value is refused
or a transition fails, 2 if the node does not answer within ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import rclpy
import yaml
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient


def wait(node: Node, future: Any, timeout: float) -> Any:
    """The result of ``future``, spinning ``node`` (SystemExit 2 after ``timeout`` seconds)."""
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    if not future.done():
        sys.exit(f"no answer within {timeout:g} s")
    return future.result()


def main() -> int:
    """Set the parameters, configure, optionally activate; 0 when everything was accepted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("node", help="the managed node's name, e.g. feedforward")
    parser.add_argument("settings", nargs="*", metavar="NAME=VALUE")
    parser.add_argument("--activate", action="store_true", help="activate after configure")
    parser.add_argument("--timeout", type=float, default=30.0, help="[s] wait for the node's services")
    options = parser.parse_args()
    values = {}
    for item in options.settings:
        name, sep, text = item.partition("=")
        if not sep:
            parser.error(f"{item!r}: expected NAME=VALUE")
        values[name] = yaml.safe_load(text)

    rclpy.init()
    bringup = rclpy.create_node("bringup")
    try:
        params = AsyncParameterClient(bringup, options.node)
        get_state = bringup.create_client(GetState, f"{options.node}/get_state")
        change_state = bringup.create_client(ChangeState, f"{options.node}/change_state")
        if not (params.wait_for_services(options.timeout) and get_state.wait_for_service(options.timeout)):
            print(f"/{options.node}: no parameter or lifecycle services within {options.timeout:g} s")
            return 2

        def state() -> str:
            return str(wait(bringup, get_state.call_async(GetState.Request()), options.timeout).current_state.label)

        names = wait(bringup, params.list_parameters(), options.timeout).result.names
        print(f"/{options.node}: {state()}, {len(names)} parameters")
        ok = True
        if values:
            before = wait(bringup, params.get_parameters(list(values)), options.timeout).values
            request = [Parameter(name, value=value) for name, value in values.items()]
            results = wait(bringup, params.set_parameters(request), options.timeout).results
            for (name, value), old, result in zip(values.items(), before, results, strict=True):
                was = parameter_value_to_python(old)
                verdict = "set" if result.successful else f"REFUSED: {result.reason}"
                print(f"  {name}: {was!r} -> {value!r}: {verdict}")
                ok = ok and result.successful
        transitions = [("configure", Transition.TRANSITION_CONFIGURE)]
        transitions += [("activate", Transition.TRANSITION_ACTIVATE)] if options.activate else []
        for label, transition in transitions:
            if not ok:
                break
            request = ChangeState.Request(transition=Transition(id=transition))
            ok = bool(wait(bringup, change_state.call_async(request), options.timeout).success)
            print(f"{label}: {'done' if ok else 'FAILED (see the node log)'}, now {state()}")
        return 0 if ok else 1
    finally:
        bringup.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
