"""Settings defined once: frozen dataclasses whose fields carry a default, a description, a unit,
a range and whether the value may change while a node runs.

Every loader builds from these classes: the scenario files (`motor_ident.scenario.loader`), the
ROS parameter declaration (`motor_ident.ros.runtime.parameters`), the ROS-free closed loop,
``motor-ident identify --online`` and the parameter reference (docs/parameters.md). A field is
declared with `setting`; a nested config whose fields become top-level keys with `inline`.

Types are strict, as rclpy's are: a float setting refuses the integer ``1000`` (ROS 2 would
declare it as an integer parameter), so a scenario file that loads here also loads in
``ros2 launch``. Defaults are read from the dataclass fields when `build` runs, never from the
generated ``__init__``, so a default changed in one place reaches every loader.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from motor_ident.errors import ConfigError

T = TypeVar("T")
_KEY = "motor_ident"


@dataclass(frozen=True)
class Spec:
    """What a setting means and which values it takes.

    Attributes:
        description: one line for the user, without the unit.
        unit: SI unit (``"s"``, ``"N m"``), empty when dimensionless.
        low, high: bounds of a number (or of each element of a tuple), None = unbounded.
        open: whether ``low`` / ``high`` themselves are excluded.
        choices: the allowed values of a string, empty = any.
        live: may change while the node runs (else: read-only, restart to change).
        demo: a knob of the demonstrations (a deliberately wrong nominal model, ...), not of a robot.
        per_joint: a tuple of one value (every joint) or one per joint.
    """

    description: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    open: tuple[bool, bool] = (False, False)
    choices: tuple[str, ...] = ()
    live: bool = False
    demo: bool = False
    per_joint: bool = False

    def expected(self, kind: str) -> str:
        """What a valid value looks like, for error messages and descriptions."""
        parts = [kind]
        if self.choices:
            parts = ["one of " + ", ".join(repr(c) for c in self.choices)]
        if self.low is not None:
            parts.append(f"{'>' if self.open[0] else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.open[1] else '<='} {self.high:g}")
        if self.per_joint:
            parts.append("1 or one per joint")
        return " ".join(parts[:1]) + (" " + ", ".join(parts[1:]) if parts[1:] else "")

    def in_range(self, x: float) -> bool:
        """Whether the number ``x`` lies within the bounds (NaN is outside any bound)."""
        if self.low is not None and not (x > self.low if self.open[0] else x >= self.low):
            return False
        return self.high is None or (x < self.high if self.open[1] else x <= self.high)


def setting(
    default: Any,
    description: str,
    *,
    unit: str = "",
    low: float | None = None,
    high: float | None = None,
    open: tuple[bool, bool] = (False, False),  # noqa: A002 - the word of interval notation
    choices: tuple[str, ...] = (),
    live: bool = False,
    demo: bool = False,
    per_joint: bool = False,
) -> Any:
    """A dataclass field with a default and its `Spec` (lists are tuples: the classes are frozen)."""
    spec = Spec(description, unit, low, high, open, tuple(choices), live, demo, per_joint)
    return dataclasses.field(default=default, metadata={_KEY: spec})


def inline(cls: type) -> Any:
    """A field holding a nested config whose settings are top-level keys of the outer one."""
    return dataclasses.field(default_factory=cls, metadata={_KEY: cls})


def _fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if _KEY in f.metadata]


def _nested(f: dataclasses.Field[Any]) -> type | None:
    meta = f.metadata[_KEY]
    return meta if isinstance(meta, type) else None


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    factory: Any = f.default_factory  # a dataclass field has a default or a factory
    return factory()


def specs(cls: type) -> dict[str, tuple[Spec, Any, Any]]:
    """Every setting of ``cls``, inlined ones included: name -> (spec, type, default now)."""
    out: dict[str, tuple[Spec, Any, Any]] = {}
    for f, hint in _fields(cls):
        nested = _nested(f)
        items = specs(nested).items() if nested else [(f.name, (f.metadata[_KEY], hint, _default(f)))]
        for name, entry in items:
            if name in out:
                raise ConfigError(f"{cls.__name__}: setting {name!r} defined twice")
            out[name] = entry
    return out


def defaults(cls: type) -> dict[str, Any]:
    """name -> default of every setting of ``cls``, read from the fields at call time."""
    return {name: default for name, (_, _, default) in specs(cls).items()}


def value_kind(hint: Any) -> tuple[Any, bool, bool]:
    """(scalar type, is a tuple, may be None) of a field annotation."""
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional, hint = True, args[0]
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True, optional
    return hint, False, optional


_NAMES = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}


def check_value(name: str, value: Any, spec: Spec, hint: Any, *, strict: bool = True) -> Any:
    """``value`` converted to the field's type (lists -> tuples). ``strict``: an integer is not a
    float (as in ROS 2 parameters and scenario files); otherwise (Python callers) it is.

    Raises:
        ConfigError: ``name = value: expected ...``, with the ROS 2 reading of an integer written
            for a float.
    """
    scalar, is_tuple, optional = value_kind(hint)
    noun = _NAMES.get(scalar, str(scalar))
    what = spec.expected(f"a list of {noun.split(' ', 1)[1]}s" if is_tuple else noun)
    if value is None and optional:
        return None

    def fail(hint_text: str = "") -> ConfigError:
        return ConfigError(f"{name} = {value!r}: expected {what}{hint_text}")

    items = value if is_tuple else [value]
    if is_tuple and not isinstance(value, list | tuple):
        raise fail()
    if is_tuple and not items and spec.per_joint:
        raise fail()
    for item in items:
        if scalar is float and type(item) is int:
            if strict:
                raise fail(f" (write {item}.0: ROS 2 reads {item} as an integer)")
        elif not isinstance(item, scalar) or (scalar is not bool and isinstance(item, bool)):
            raise fail()
        if scalar in (int, float) and (spec.low is not None or spec.high is not None) and not spec.in_range(item):
            raise fail()
        if spec.choices and item not in spec.choices:
            raise fail()
    return tuple(value) if is_tuple else value


def build(cls: type[T], mapping: Mapping[str, Any] | None = None, *, where: str = "") -> T:
    """An instance of ``cls`` from ``mapping`` (flat keys, inlined settings included), the rest defaults.

    Raises:
        ConfigError: ``where: key = value: expected ...`` for an unknown key, a wrong type or a
            value out of range or choices; the class's own cross-field checks too.
    """
    mapping = dict(mapping or {})
    prefix = f"{where}: " if where else ""
    table = specs(cls)
    unknown = sorted(set(mapping) - set(table))
    if unknown:
        raise ConfigError(f"{prefix}unknown setting(s) {unknown}: expected some of {sorted(table)}")
    try:
        return _construct(cls, mapping)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc}") from None


def _construct(cls: type[T], mapping: Mapping[str, Any]) -> T:
    kwargs: dict[str, Any] = {}
    for f, hint in _fields(cls):
        nested = _nested(f)
        if nested is not None:
            kwargs[f.name] = _construct(nested, mapping)
        elif f.name in mapping:
            kwargs[f.name] = check_value(f.name, mapping[f.name], f.metadata[_KEY], hint)
        else:
            kwargs[f.name] = _default(f)
    return cls(**kwargs)


def check(instance: Any) -> None:
    """Check every own (not inlined) setting of a config instance; for its ``__post_init__``.

    Raises:
        ConfigError: the first value of the wrong type or out of range.
    """
    for f, hint in _fields(type(instance)):
        if _nested(f) is None:
            check_value(f.name, getattr(instance, f.name), f.metadata[_KEY], hint, strict=False)


def flatten(instance: Any) -> dict[str, Any]:
    """name -> value of every setting of ``instance``, inlined ones included (tuples stay tuples)."""
    out: dict[str, Any] = {}
    for f, _ in _fields(type(instance)):
        value = getattr(instance, f.name)
        out.update(flatten(value) if _nested(f) is not None else {f.name: value})
    return out


def per_joint(name: str, values: tuple[float, ...], n: int) -> tuple[float, ...]:
    """A per-joint setting expanded to ``n`` values (one value applies to every joint).

    Raises:
        ConfigError: neither 1 nor ``n`` values.
    """
    if len(values) == 1:
        return tuple(values) * n
    if len(values) != n:
        raise ConfigError(f"{name} = {list(values)!r}: expected 1 value or {n} (one per joint)")
    return tuple(values)


def describe(spec: Spec) -> str:
    """The description with its unit and flags, as ROS 2 parameter descriptors and the docs show it."""
    text = spec.description + (f" [{spec.unit}]" if spec.unit else "")
    if spec.demo:
        text += " [demo]"
    if not spec.live:
        text += " [restart to change]"
    return text


def markdown_table(cls: type) -> str:
    """The settings of ``cls`` as a markdown table: name, default, unit, valid values, live, meaning."""
    rows = ["| name | default | unit | valid | live | description |", "|---|---|---|---|---|---|"]
    for name, (spec, hint, default) in specs(cls).items():
        scalar, is_tuple, _ = value_kind(hint)
        kind = ("list of " if is_tuple else "") + scalar.__name__
        shown = list(default) if isinstance(default, tuple) else default
        text = spec.description + (" (demo)" if spec.demo else "")
        live = "yes" if spec.live else "restart"
        rows.append(f"| `{name}` | `{shown!r}` | {spec.unit} | {spec.expected(kind)} | {live} | {text} |")
    return "\n".join(rows) + "\n"


MAX_YAML_BYTES = 64 * 1024**2
"""Largest YAML file read [bytes]: configs, data specs, parameter files and scenarios are a few kB;
a larger file is refused before it is read (a 2 GB file would be held whole, several times over)."""


def read_yaml(path: str | Path) -> Any:
    """The parsed content of a YAML file (None when empty).

    Raises:
        ConfigError: the file is missing, larger than `MAX_YAML_BYTES`, is not UTF-8 text, is not
            valid YAML, or writes a key twice in one mapping (with file and line).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise ConfigError(
                f"{path}: {size / 1024**2:.4g} MiB, larger than the {MAX_YAML_BYTES // 1024**2} MiB a YAML file "
                "may be: not a configuration"
            )
        text = path.read_text(encoding="utf-8")
        _refuse_duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader), path)
        return yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # one line
        raise ConfigError(f"{path}{line}: not valid YAML: {problem}") from None


def _refuse_duplicate_keys(node: yaml.Node | None, path: Path) -> None:
    """A key written twice in one mapping: YAML keeps the last silently, so a typo'd copy would win.

    Raises:
        ConfigError: ``file:line: key 'name' written twice (first on line N)``.
    """
    stack = [node] if node is not None else []
    visited: set[int] = set()  # an alias may point back to a node that holds it
    while stack:
        current = stack.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen and key.value != "<<":
                        raise ConfigError(
                            f"{path}:{key.start_mark.line + 1}: key {key.value!r} written twice "
                            f"(first on line {seen[key.value]})"
                        )
                    seen[key.value] = key.start_mark.line + 1
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def config_number(value: Any, key: str, *, largest: float) -> float:
    """A number read from a YAML file, as a float: not a boolean (YAML's ``true`` is no number) and
    0 or of magnitude within ``1 / largest`` ... ``largest`` (beyond, products such as a gear ratio
    squared or a torque divided by a gain overflow).

    Raises:
        ConfigError: ``key = value: expected ...``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{key} = {value!r}: expected a number")
    if not (value == 0 or 1.0 / largest <= abs(value) <= largest):  # NaN and Inf too
        raise ConfigError(
            f"{key} = {value!r}: expected 0 or a finite number with {1 / largest:g} <= |x| <= {largest:g}"
        )
    return float(value)


def require_mapping(raw: Any, where: str, *, allowed: Any = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``raw`` as a dict with string keys; ``allowed`` (None = any) and ``required`` keys checked.

    Raises:
        ConfigError: naming ``where`` and what is wrong.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of names to values, got {type(raw).__name__}")
    if allowed is not None:
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}: expected some of {sorted(allowed)}")
    missing = [k for k in required if k not in raw]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {missing}")
    return dict(raw)
