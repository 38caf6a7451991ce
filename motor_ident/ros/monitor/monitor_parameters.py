"""The monitor's parameter access for Foxglove clients (``allow_parameters``; off by default).

Foxglove's Parameters panel names a ROS 2 parameter ``/node.parameter``. The server's callbacks
run on the server's thread and wait here; the requests are carried out by a timer on the
monitor node's executor, which owns every rclpy entity (parameter service clients created on
first use per node), so no rclpy object is touched from two threads. A request whose nodes do not
answer within ``timeout`` returns what arrived. Setting goes through each node's own parameter
service, so the node's checks apply (motor_ident's nodes refuse out-of-range and read-only
values with the reason; the refusal is logged here and the client sees the value unchanged).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import foxglove
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient

REQUEST_PERIOD = 0.02  # [s] how often the executor looks for clients' requests


@dataclass
class _Request:
    """One client request: what to do, and where its answer goes."""

    run: Callable[[Callable[[list[foxglove.Parameter]], None]], None]
    answer: list[foxglove.Parameter] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


def split_name(name: str) -> tuple[str, str]:
    """``(node, parameter)`` of Foxglove's ``/node.parameter`` (the node's full name, namespace included)."""
    node, _, parameter = name.partition(".")
    return node, parameter


class ParameterBridge:
    """Get and set the graph's parameters for Foxglove clients (see the module docstring)."""

    def __init__(self, node: Node, *, timeout: float = 2.0) -> None:
        self.node = node
        self.timeout = timeout
        self._requests: queue.Queue[_Request] = queue.Queue()
        self._clients: dict[str, AsyncParameterClient] = {}
        self._types: dict[str, Parameter.Type] = {}  # "/node.parameter" -> type, from the last get
        node.create_timer(REQUEST_PERIOD, self._serve)

    # -- the server's thread -----------------------------------------------------------------------

    def get(self, names: list[str]) -> list[foxglove.Parameter]:
        """The parameters named (every node's, for an empty list)."""
        return self._ask(lambda reply: self._get(names, reply))

    def set(self, parameters: list[foxglove.Parameter]) -> list[foxglove.Parameter]:
        """Set them on their nodes; their values afterwards."""
        return self._ask(lambda reply: self._set(parameters, reply))

    def _ask(self, run: Callable[[Callable[[list[foxglove.Parameter]], None]], None]) -> list[foxglove.Parameter]:
        request = _Request(run)
        self._requests.put(request)
        request.done.wait(self.timeout)
        return list(request.answer)

    # -- the executor's thread ---------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._requests.empty():
            request = self._requests.get_nowait()

            def reply(found: list[foxglove.Parameter], request: _Request = request) -> None:
                request.answer[:] = found
                request.done.set()

            request.run(reply)

    def _client(self, node_name: str) -> AsyncParameterClient:
        if node_name not in self._clients:
            self._clients[node_name] = AsyncParameterClient(self.node, node_name)
        return self._clients[node_name]

    def _nodes(self) -> list[str]:
        own = self.node.get_fully_qualified_name()
        names = [f"{ns.rstrip('/')}/{name}" for name, ns in self.node.get_node_names_and_namespaces()]
        return sorted({n for n in names if n != own and not n.rsplit("/", 1)[-1].startswith("_")})

    def _get(self, names: list[str], reply: Callable[[list[foxglove.Parameter]], None]) -> None:
        wanted: dict[str, list[str]] = {}
        for name in names:
            node, parameter = split_name(name)
            wanted.setdefault(node, []).append(parameter)
        targets = wanted or {node: [] for node in self._nodes()}
        found: list[foxglove.Parameter] = []
        pending = [len(targets)]

        def finished() -> None:
            pending[0] -= 1
            if pending[0] == 0:
                reply(found)

        def fetch(node: str, parameters: list[str]) -> None:
            def got(future: Any) -> None:
                response = future.result()
                for parameter, value in zip(parameters, response.values if response else [], strict=False):
                    self._types[f"{node}.{parameter}"] = Parameter.Type(value.type)
                    found.append(foxglove.Parameter(f"{node}.{parameter}", value=_native(value)))
                finished()

            self._client(node).get_parameters(parameters).add_done_callback(got)

        def listed(node: str) -> Callable[[Any], None]:
            def on_list(future: Any) -> None:
                response = future.result()
                names = list(response.result.names) if response else []
                if names:
                    fetch(node, names)
                else:
                    finished()

            return on_list

        if not targets:
            reply(found)
        for node, parameters in targets.items():
            if parameters:
                fetch(node, parameters)
            else:
                self._client(node).list_parameters().add_done_callback(listed(node))

    def _set(self, parameters: list[foxglove.Parameter], reply: Callable[[list[foxglove.Parameter]], None]) -> None:
        by_node: dict[str, list[Parameter]] = {}
        for p in parameters:
            node, name = split_name(p.name)
            value = p.get_value()
            if self._types.get(p.name) == Parameter.Type.DOUBLE and isinstance(value, int):
                value = float(value)  # the wire does not tell 1.0 from 1
            by_node.setdefault(node, []).append(Parameter(name, value=value))
        pending = [len(by_node)]

        def after(node: str, sent: list[Parameter]) -> Callable[[Any], None]:
            def on_set(future: Any) -> None:
                response = future.result()
                for parameter, result in zip(sent, response.results if response else [], strict=False):
                    if not result.successful:
                        self.node.get_logger().warning(f"client set {node}.{parameter.name}: refused: {result.reason}")
                pending[0] -= 1
                if pending[0] == 0:
                    self._get([p.name for p in parameters], reply)

            return on_set

        if not by_node:
            reply([])
        for node, sent in by_node.items():
            self._client(node).set_parameters(sent).add_done_callback(after(node, sent))


def _native(value: Any) -> Any:
    """A ParameterValue message as a plain Python value Foxglove can send (arrays as lists)."""
    python: Any = parameter_value_to_python(value)
    return list(python) if isinstance(python, list | tuple) or hasattr(python, "tolist") else python
