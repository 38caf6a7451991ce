"""Managed (lifecycle) nodes: the nodes whose output drives a robot.

``feedforward``, ``pwm_feedforward``, ``vrec_controller``, ``excitation``, ``identifier`` and
``floating_identifier`` are `rclpy.lifecycle` nodes, as ros2_control's controllers and Nav2's
servers are: a bringup configures them, checks the robot, activates them, and deactivates them
on a fault. The simulators, the
decoupler and the recorder stay plain nodes. A `ManagedNode` implements three hooks:

- `build` (configure): robot config, model, settings checked, publishers and the inputs that do
  not lead to a command (model parameters, references). A `MotorIdentError` (a bad parameter, a
  robot config that does not load) leaves the node unconfigured, logged once as ``refusing to
  configure: <why>`` and kept in `ManagedNode.configure_error`;
- `start_commanding` (activate): the subscriptions and timers that lead to commands. Nothing
  is commanded before; the 1 kHz path is the same callback as before, with nothing added to it;
- `safe_output` (deactivate, after those are destroyed; shutdown while active; error processing):
  the configured safe output, published once.

A managed node waits unconfigured, as any lifecycle node does, unless its ``autostart`` parameter
is true (`AUTOSTART`: for a node started on its own, ``ros2 run`` or its entry point, with no
lifecycle manager): `run_node` then configures and activates it once it is up. Launch files and
``motor-ident run`` drive the transitions themselves and leave the parameter false.

Every parameter is declared at construction (`ManagedNode` from the node's settings class, with
`declare_settings`), as ros2_control declares a controller's when it is loaded: a bringup reads
and sets them while the node is unconfigured, a bad value is refused with the reason, and
configure builds from the values set. A start value the schema refuses stops the process in one
line, as for the plain nodes. Cleanup destroys what `build` made; the parameters stay declared,
and those that are read-only while configured can be set while unconfigured and apply at the next
configure. An exception in a
transition goes to error processing (safe output, everything built destroyed: unconfigured). An
exception in a callback while active is caught where the node is spun (`run_node`, the runner),
not in the callback (no per-message cost): `ManagedNode.fail` sends the safe output, logs the error
and leaves the node unconfigured, from where a lifecycle manager may configure it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from motor_ident.core.threads import settle_heap
from motor_ident.errors import ConfigError, MotorIdentError
from motor_ident.ros.runtime.parameters import declare_settings

T = TypeVar("T")
AUTOSTART = "autostart"
"""Read-only bool parameter of every managed node (default false): configure and activate at start."""
ACK_WAIT_S = 0.5
"""[s] a stopping process waits at most for its safe output to be acknowledged (reliable subscribers)."""

SUCCESS, FAILURE, ERROR = (
    TransitionCallbackReturn.SUCCESS,
    TransitionCallbackReturn.FAILURE,
    TransitionCallbackReturn.ERROR,
)


def _entities(node: LifecycleNode) -> list[Any]:
    return [*node.publishers, *node.subscriptions, *node.timers, *node.services, *node.clients]


class ManagedNode(LifecycleNode):
    """A lifecycle node built at configure, commanding only while active. Subclasses implement
    `build`, `start_commanding` and `safe_output`."""

    def __init__(self, node_name: str, *, settings: type, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_parameter(
            AUTOSTART,
            False,
            ParameterDescriptor(
                description="configure and activate at start, for a node started on its own (ros2 run, its "
                "entry point) without a lifecycle manager; launch files and motor-ident run leave it false",
                read_only=True,
            ),
        )
        self.configure_error: MotorIdentError | None = None
        self.configured = False
        self.commanding = False
        self._built: list[Any] = []
        self._activated: list[Any] = []
        self.settle_heap_after_configure = False
        """Set by `run_node` (the node's own process): `settle_heap` after each configure."""
        self._on_settings: Callable[[Any], None] | None = None
        self._check_settings: Callable[[Any], object] | None = None
        # every parameter from the start, so a bringup can read and set them while unconfigured
        self._settings: Any = declare_settings(
            self, settings, self._settings_changed, self._settings_checked, configurable=lambda: not self.configured
        )

    # -- hooks ---------------------------------------------------------------------------------
    def build(self) -> None:
        """Load and check everything; create publishers and the inputs that do not command.

        Raises:
            MotorIdentError: the node cannot be configured (it stays unconfigured).
        """
        raise NotImplementedError

    def start_commanding(self) -> None:
        """Create the subscriptions and timers that lead to commands."""
        raise NotImplementedError

    def safe_output(self) -> None:
        """Publish the configured safe output once."""
        raise NotImplementedError

    def destroy_node(self) -> None:
        """Destroy the node now. rclpy's lifecycle state machine holds the node's handle, so without
        releasing it first the node (and its lifecycle services) stays in the ROS graph until the
        Python object is garbage-collected: a later run in the same process would send its
        lifecycle requests to this node instead of the new one of the same name."""
        self._state_machine.destroy_when_not_in_use()
        super().destroy_node()

    def declared(
        self, cls: type[T], apply: Callable[[T], None] | None = None, check: Callable[[T], object] | None = None
    ) -> T:
        """The node's settings (declared at construction from ``settings``, `declare_settings`): the
        latest values, for `build`.

        ``apply`` (a live change) and ``check`` (values only the configured node can judge) run
        only while the node is configured; settings that are not live may be set only while it is
        unconfigured.
        """
        if not isinstance(self._settings, cls):
            raise TypeError(f"node {self.get_name()} declares {type(self._settings).__name__}, not {cls.__name__}")
        self._on_settings, self._check_settings = apply, check
        return self._settings  # type: ignore[no-any-return]

    def _settings_changed(self, settings: Any) -> None:
        self._settings = settings
        if self.configured and self._on_settings is not None:
            self._on_settings(settings)

    def _settings_checked(self, settings: Any) -> object:
        return self._check_settings(settings) if self.configured and self._check_settings is not None else None

    # -- transitions ---------------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        before = {id(e) for e in _entities(self)}
        try:
            self.build()
        except MotorIdentError as exc:
            self._built = [e for e in _entities(self) if id(e) not in before]
            self._destroy(self._built)
            self.configure_error = exc if isinstance(exc, ConfigError) else ConfigError(str(exc))
            self.get_logger().error(f"refusing to configure: {exc}")
            return FAILURE
        self._built = [e for e in _entities(self) if id(e) not in before]
        self.configure_error, self.configured = None, True
        if self.settle_heap_after_configure:
            settle_heap()
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        before = {id(e) for e in _entities(self)}
        self.start_commanding()
        self._activated = [e for e in _entities(self) if id(e) not in before]
        self.commanding = True
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop()
        self._release()
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.get_logger().error(f"error while {state.label}: safe output, unconfigured")
        self._stop(always=self.configured)
        self._release()
        return SUCCESS

    def fail(self, exc: BaseException) -> None:
        """A callback raised while the node ran: safe output, then unconfigured (as error processing)."""
        self.get_logger().error(f"{type(exc).__name__} in a callback: {exc}; safe output sent, node unconfigured")
        if self.commanding:
            self.trigger_deactivate()
        if self.configured:
            self.trigger_cleanup()

    def stop_commanding(self) -> None:
        """At the end of the process: the safe output once if the node is active (`run_node`), and
        up to `ACK_WAIT_S` for reliable subscribers to acknowledge it before the node is destroyed."""
        if not self.commanding:
            return
        self.trigger_deactivate()
        deadline = time.monotonic() + ACK_WAIT_S
        for publisher in list(self.publishers):
            left = deadline - time.monotonic()
            if left <= 0.0:
                break
            publisher.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9)))

    # -- helpers -------------------------------------------------------------------------------
    def _stop(self, *, always: bool = False) -> None:
        was = self.commanding
        self._destroy(self._activated)
        self._activated, self.commanding = [], False
        if was or always:
            self.safe_output()

    def _release(self) -> None:
        self._destroy(self._activated)
        self._destroy(self._built)
        self._activated, self._built = [], []
        self.configured = self.commanding = False

    def _destroy(self, entities: list[Any]) -> None:
        for entity in entities:
            kind = type(entity).__name__.lower()
            destroy = getattr(self, f"destroy_{'publisher' if 'publisher' in kind else kind}", None)
            if destroy is not None:
                destroy(entity)


def managing(exc: BaseException) -> ManagedNode | None:
    """The managed node whose callback raised ``exc`` (from the traceback's frames), if any."""
    tb = exc.__traceback__
    node = None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, ManagedNode):
            node = candidate
        tb = tb.tb_next
    return node


def configure(node: Any) -> Any:
    """Configure ``node`` if it is an unconfigured `ManagedNode`; return it.

    Raises:
        ConfigError: configure failed (the node stays unconfigured; the reason is the message).
    """
    if isinstance(node, ManagedNode) and not node.configured and node.trigger_configure() != SUCCESS:
        raise node.configure_error or ConfigError(f"node {node.get_name()}: configure failed")
    return node


def activate(node: Any) -> Any:
    """Activate ``node`` if it is a configured, inactive `ManagedNode`; return it.

    Raises:
        ConfigError: activate failed (the node went through error processing: unconfigured).
    """
    if isinstance(node, ManagedNode) and node.configured and not node.commanding:
        if node.trigger_activate() != SUCCESS:
            raise ConfigError(f"node {node.get_name()}: activate failed (see its log)")
    return node


def autostart(node: Any) -> Any:
    """`start` ``node`` if it is a `ManagedNode` whose ``autostart`` parameter is true; return it.

    Raises:
        ConfigError: configure or activate failed.
    """
    if isinstance(node, ManagedNode) and node.get_parameter(AUTOSTART).value:
        start(node)
    return node


def start(node: Any) -> Any:
    """Configure and activate ``node`` if it is a `ManagedNode` (what launch and the runner do); return it.

    Raises:
        ConfigError: configure or activate failed.
    """
    return activate(configure(node))
