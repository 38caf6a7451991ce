"""The settings machinery on toy classes: strict types, ranges, choices, unknown keys, inlining, tables, YAML."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from motor_ident.errors import ConfigError
from motor_ident.schema import (
    build,
    defaults,
    flatten,
    inline,
    markdown_table,
    per_joint,
    read_yaml,
    require_mapping,
    setting,
    specs,
)


@dataclass(frozen=True)
class Inner:
    """Nested settings."""

    threshold: float = setting(0.5, "a fraction", low=0.0, high=1.0, open=(True, False), live=True)
    mode: str = setting("a", "a choice", choices=("a", "b"))


@dataclass(frozen=True)
class Outer:
    """Toy node settings."""

    rate_hz: float = setting(100.0, "a rate", unit="Hz", low=0.0, open=(True, False))
    count: int = setting(3, "a count", low=1, high=10)
    gains: tuple[float, ...] = setting((1.0,), "a gain", low=0.0, per_joint=True)
    limit: tuple[float, ...] | None = setting(None, "optional", per_joint=True)
    inner: Inner = inline(Inner)


def test_build_takes_values_and_defaults() -> None:
    """Given keys replace defaults, inlined keys reach the nested class, lists become tuples."""
    out = build(Outer, {"count": 4, "threshold": 1.0, "gains": [2.0, 3.0]})
    assert (out.rate_hz, out.count, out.gains, out.inner.threshold, out.inner.mode) == (100.0, 4, (2.0, 3.0), 1.0, "a")
    assert flatten(out) == {
        "rate_hz": 100.0,
        "count": 4,
        "gains": (2.0, 3.0),
        "limit": None,
        "threshold": 1.0,
        "mode": "a",
    }
    assert build(Outer, flatten(out)) == out


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (
            {"rate_hz": 1000},
            "where: rate_hz = 1000: expected a float > 0 (write 1000.0: ROS 2 reads 1000 as an integer)",
        ),
        ({"rate_hz": 0.0}, "rate_hz = 0.0: expected a float > 0"),
        ({"count": 11}, "count = 11: expected an integer >= 1, <= 10"),
        ({"count": True}, "count = True: expected an integer"),
        ({"threshold": float("nan")}, "threshold = nan: expected a float > 0, <= 1"),
        ({"mode": "c"}, "mode = 'c': expected one of 'a', 'b'"),
        ({"gains": [-1.0]}, "gains = [-1.0]: expected a list of floats >= 0, 1 or one per joint"),
        ({"gains": 1.0}, "gains = 1.0: expected a list of floats"),
        ({"colour": 1}, "unknown setting(s) ['colour']"),
    ],
)
def test_build_refuses_with_key_value_and_expectation(mapping: dict, message: str) -> None:
    """Each wrong value is named with what was expected."""
    with pytest.raises(ConfigError) as info:
        build(Outer, mapping, where="where")
    assert message in str(info.value)


def test_defaults_are_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patched field default reaches specs, defaults, build and the table (not Outer())."""
    field = {f.name: f for f in dataclasses.fields(Inner)}["threshold"]
    monkeypatch.setattr(field, "default", 0.25)
    assert defaults(Outer)["threshold"] == 0.25
    assert build(Outer).inner.threshold == 0.25
    assert "| `threshold` | `0.25` |" in markdown_table(Outer)


def test_names_are_unique_across_inlined_classes() -> None:
    """Two settings of one name (an inlined class repeating one) are refused."""

    @dataclass(frozen=True)
    class Twice:
        mode: str = setting("x", "clash")
        inner: Inner = inline(Inner)

    with pytest.raises(ConfigError, match="'mode' defined twice"):
        specs(Twice)


def test_node_settings_names_are_unique() -> None:
    """Every shipped node settings class flattens to unique names."""
    from motor_ident.scenario.nodes import NODE_SETTINGS

    for cls in NODE_SETTINGS.values():
        assert set(flatten(build(cls))) == set(specs(cls))


def test_per_joint_expands_or_refuses() -> None:
    """One value is every joint's; n values pass; anything else names the setting."""
    assert per_joint("kp", (2.0,), 3) == (2.0, 2.0, 2.0)
    assert per_joint("kp", (1.0, 2.0, 3.0), 3) == (1.0, 2.0, 3.0)
    with pytest.raises(ConfigError, match=r"kp = \[1.0, 2.0\]: expected 1 value or 3"):
        per_joint("kp", (1.0, 2.0), 3)


def test_read_yaml_and_require_mapping(tmp_path: Path) -> None:
    """Bad YAML names file and line; mappings are checked for unknown and missing keys."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\nb: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: not valid YAML"):
        read_yaml(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        read_yaml(tmp_path / "missing.yaml")
    assert require_mapping(None, "x") == {}
    with pytest.raises(ConfigError, match="x: expected a mapping"):
        require_mapping([1], "x")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['c'\]"):
        require_mapping({"a": 1, "c": 2}, "x", allowed=("a",))
    with pytest.raises(ConfigError, match=r"missing key\(s\) \['b'\]"):
        require_mapping({"a": 1}, "x", required=("b",))
