"""A node's ROS 2 parameters declared from its settings class (`motor_ident.scenario.nodes`).

`declare_settings` declares every setting with a descriptor built from its `motor_ident.schema.Spec`
(description with unit, range, read-only unless the setting may change live), checks the values
the node starts with, and then guards the live ones: ``ros2 param set`` with a value out of
range, of the wrong type or not among the choices is refused with the reason; a good one is
applied through the node's ``apply`` callback.
"""

from __future__ import annotations

import array
from collections.abc import Callable
from typing import Any, TypeVar

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from motor_ident.errors import ConfigError
from motor_ident.schema import Spec, build, describe, flatten, specs, value_kind

T = TypeVar("T")
_INT_BOUND = 2**62  # an IntegerRange needs both ends; this stands for "unbounded"
_TYPES = {
    (bool, False): Parameter.Type.BOOL,
    (int, False): Parameter.Type.INTEGER,
    (float, False): Parameter.Type.DOUBLE,
    (str, False): Parameter.Type.STRING,
    (bool, True): Parameter.Type.BOOL_ARRAY,
    (int, True): Parameter.Type.INTEGER_ARRAY,
    (float, True): Parameter.Type.DOUBLE_ARRAY,
    (str, True): Parameter.Type.STRING_ARRAY,
}


def _plain(value: Any) -> Any:
    """A parameter value as the schema takes it (rclpy gives arrays as array.array or lists)."""
    return list(value) if isinstance(value, array.array | list | tuple) else value


def descriptor(name: str, spec: Spec, scalar: type, is_tuple: bool, *, managed: bool = False) -> ParameterDescriptor:
    """The ROS 2 descriptor of one setting: description (unit, [demo], [restart to change]),
    read-only unless live (or ``managed``: a lifecycle node's, set while unconfigured), the numeric
    range and the valid values in words."""
    kind = ("a list of " if is_tuple else "") + scalar.__name__
    d = ParameterDescriptor(
        name=name,
        type=int(_TYPES[(scalar, is_tuple)]),
        description=describe(spec),
        additional_constraints=spec.expected(kind),
        read_only=not (spec.live or managed),
    )
    if not is_tuple and scalar is float and (spec.low is not None or spec.high is not None):
        low = spec.low if spec.low is not None else -float("inf")
        high = spec.high if spec.high is not None else float("inf")
        d.floating_point_range = [FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)]
    if not is_tuple and scalar is int and (spec.low is not None or spec.high is not None):
        low = int(spec.low) if spec.low is not None else -_INT_BOUND
        high = int(spec.high) if spec.high is not None else _INT_BOUND
        d.integer_range = [IntegerRange(from_value=low, to_value=high, step=0)]
    return d


def declare_settings(
    node: Node,
    cls: type[T],
    apply: Callable[[T], None] | None = None,
    check: Callable[[T], object] | None = None,
    configurable: Callable[[], bool] | None = None,
) -> T:
    """Declare every setting of ``cls`` on ``node`` and return the settings it starts with.

    Live settings changed later (``ros2 param set``) are checked as a whole (`motor_ident.schema.build`):
    a bad value is refused with the reason and leaves the settings unchanged; a good one replaces
    them and is passed to ``apply``. ``check`` (raising `ConfigError`) refuses values only the node
    can judge, such as a per-joint list of the wrong length, before anything changes. Parameters
    the class does not own (``use_sim_time``, ...) pass through. With ``configurable`` (a
    lifecycle node's "is it unconfigured?"), the settings that are not live may be changed while
    it returns True and are refused otherwise; they apply at the next configure.

    Raises:
        ConfigError: a start value of the wrong type, out of range or not among the choices,
            naming the node, the parameter, the value and what is expected.
    """
    where = f"node {node.get_name()}: parameter"
    # the start values (parameter file, --ros-args -p, overrides) are checked by the schema first,
    # so a bad one is refused in the same words as the scenario loader's, not rclpy's
    table = specs(cls)
    starting = getattr(node, "_parameter_overrides", {})  # rclpy keeps them here until declared
    build(cls, {name: _plain(p.value) for name, p in starting.items() if name in table}, where=where)
    values: dict[str, Any] = {}
    for name, (spec, hint, default) in table.items():
        scalar, is_tuple, _ = value_kind(hint)
        desc = descriptor(name, spec, scalar, is_tuple, managed=configurable is not None)
        initial = Parameter.Type(desc.type) if default is None else _plain(default)
        try:
            value = node.declare_parameter(name, initial, desc).value
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise ConfigError(f"{where} {name}: {exc}") from None
        if value is not None:
            values[name] = _plain(value)
    names = set(table)
    current = [build(cls, values, where=where)]
    pending: list[T] = []

    def on_set(parameters: list[Parameter]) -> SetParametersResult:
        owned = {p.name: _plain(p.value) for p in parameters if p.name in names}
        if not owned:
            return SetParametersResult(successful=True)
        fixed = [name for name in owned if not table[name][0].live]
        if fixed and configurable is not None and not configurable():
            return SetParametersResult(
                successful=False, reason=f"{fixed} apply at configure: deactivate and clean up the node first"
            )
        try:
            candidate = build(cls, {**flatten(current[0]), **owned}, where=where)
            if check is not None:
                check(candidate)
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        pending[:] = [candidate]
        return SetParametersResult(successful=True)

    def post_set(parameters: list[Parameter]) -> None:
        if not pending:
            return
        current[0] = pending.pop()
        if apply is not None:
            apply(current[0])

    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(post_set)
    return current[0]
