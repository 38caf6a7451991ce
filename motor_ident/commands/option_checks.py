"""Every option either acts or is refused: contradicting options and options that would do nothing.

`refuse_idle_options` runs once on the parsed command line, before any work, and refuses (exit
status 2, one line, as the parser's own errors) a pair of options that contradict each other
(``--report DIR --no-report``), alternatives given together (``--validate`` and
``--validate-on``), and an option that the rest of the command line leaves without effect
(``--payload-frame`` without ``--payload-data``, ``--alpha`` without ``--method nominal``, a
``--floating-base`` run given the options of the joint-torque path). An option counts as given
when its value differs from its default: repeating a default changes nothing and is accepted.

What only the recording can tell is checked by `refuse_idle_preparation` once DATA is read:
``--derivative``, ``--savgol-window`` and ``--cutoff-hz`` set how velocities and accelerations are
computed from positions, so on a recording that carries both (``qd.*`` and ``qdd.*``) nothing is
differentiated and they are refused (unless ``--filter-torque`` puts the torque through that
filter); ``--savgol-window`` with Butterworth and ``--cutoff-hz`` with Savitzky-Golay are refused
too, and so is ``--filter-torque`` on a recording whose torque is converted from raw measurements
after preparation. A refusal rather than a note: a run that looks as if the option was applied,
with an exit status 0, is how the option came to be ignored unnoticed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from motor_ident.commands.options import RecordingOptions
    from motor_ident.io.data import JointRecord

Given = Callable[[str], bool]
"""``given(dest)``: the option whose attribute is ``dest`` was set to a value other than its default."""

FLOATING_BASE_IGNORES = (
    "out",
    "report",
    "online",
    "spec",
    "keep_time",
    "keep_samples",
    "resample_hz",
    "resample",
    "derivative",
    "savgol_window",
    "cutoff_hz",
    "filter_torque",
    "torque_source",
    "gains",
    "payload_data",
    "payload_mass",
    "payload_frame",
    "motor_states_topic",
    "wrench_topic",
    "validate_spec",
    "validate_keep_time",
    "validate_keep_samples",
    "max_rre",
    "min_r2",
)
"""``identify --floating-base`` options it does not read (it reads a floating-base NPZ or bag,
fits the contact wrenches, and writes --json and --urdf-out)."""
DIFFERENTIATION_FLAGS = ("derivative", "savgol_window", "cutoff_hz")


def flag(dest: str) -> str:
    """The option as typed: ``savgol_window`` -> ``--savgol-window``."""
    return "--" + dest.replace("_", "-")


def refuse_idle_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with status 2 and one line when two options contradict or one would do nothing.

    Args:
        parser: the ``motor-ident`` parser (its subcommand's parser gives the defaults and prints
            the error).
        args: the parsed command line.
    """
    command = getattr(args, "command", None)
    sub = _subparser(parser, command)
    if sub is None or command not in _RULES:
        return
    for problem in _RULES[command](lambda dest: _given(sub, args, dest), args):
        sub.error(problem)


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    for action in parser._actions:  # argparse offers no public way to reach a subcommand's parser
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(command or "")
            return found
    return None


def _given(parser: argparse.ArgumentParser, args: argparse.Namespace, dest: str) -> bool:
    value = getattr(args, dest, None)
    default = parser.get_default(dest)
    return value is not None and value != default and value != []


def _identify(given: Given, args: argparse.Namespace) -> Iterator[str]:
    yield from _both(given, "report", "no_report", "contradict each other: give one")
    yield from _both(
        given,
        "validate",
        "validate_on",
        "are alternatives: --validate holds out the end of DATA, --validate-on predicts another recording; give one",
    )
    if args.floating_base:
        for dest in FLOATING_BASE_IGNORES:
            if given(dest):
                yield (
                    f"{flag(dest)} does not apply with --floating-base (it reads a floating-base recording, fits the "
                    "contact wrenches and writes --json and --urdf-out)"
                )
        if given("alpha") and args.method not in ("sdp", "log_cholesky"):
            yield "--alpha does nothing with --floating-base unless --method sdp or log_cholesky (its pull to the URDF)"
        return
    for dest in ("rows", "imu_tilt", "orientation_noise", "imu_topic", "foot_wrench_topic"):
        if given(dest):
            yield f"{flag(dest)} applies to --floating-base only"
    if given("alpha") and args.method != "nominal":
        yield f"--alpha is the data weight of --method nominal; --method {args.method} does not use it"
    yield from _torque_flags(given)
    for dest in ("validate_spec", "validate_keep_time", "validate_keep_samples", "max_rre", "min_r2"):
        if given(dest) and not given("validate_on"):
            yield f"{flag(dest)} applies to --validate-on's recording: give --validate-on DATA2"
    yield from _bag_topics(given, args, ("data", "validate_on", "payload_data"))


def _validate(given: Given, args: argparse.Namespace) -> Iterator[str]:
    yield from _bag_topics(given, args, ("data",))


def _bag_topics(given: Given, args: argparse.Namespace, recordings: tuple[str, ...]) -> Iterator[str]:
    """The bag topic options when no recording of the command line is a bag."""
    from motor_ident.commands.data_options import is_bag

    if any(getattr(args, dest, None) and is_bag(getattr(args, dest)) for dest in recordings):
        return
    for dest in ("joint_states_topic", "motor_states_topic", "wrench_topic"):
        if given(dest):
            yield f"{flag(dest)} names a topic of a rosbag2 bag; no recording given here is one"


def _torque_flags(given: Given) -> Iterator[str]:
    yield from _both(
        given,
        "gains",
        "payload_data",
        "contradict each other: the payload run identifies the drive gains, which --gains would set; give one",
    )
    if given("payload_frame") and not given("payload_data"):
        yield "--payload-frame places the payload of --payload-data: give --payload-data and --payload-mass too"
    if given("payload_data") != given("payload_mass"):
        yield "--payload-data and --payload-mass go together: the recording with the payload and its mass"


def _synth(given: Given, args: argparse.Namespace) -> Iterator[str]:
    if args.floating_base:
        for dest in ("torque_source", "payload_mass", "payload_frame", "noise"):
            if given(dest):
                yield f"{flag(dest)} does not apply with --floating-base (its sensors carry their own noise models)"
        return
    for dest in ("mass_seed", "single_support", "plant"):
        if given(dest):
            yield f"{flag(dest)} applies to --floating-base only"
    if given("payload_frame") and not given("payload_mass"):
        yield "--payload-frame places the payload of --payload-mass: give its mass too"


def _excite(given: Given, args: argparse.Namespace) -> Iterator[str]:
    if given("block_weights") and args.criterion != "block":
        yield f"--block-weights weighs the terms of --criterion block; --criterion {args.criterion} does not use them"


def _record(given: Given, args: argparse.Namespace) -> Iterator[str]:
    if args.topics:
        for dest in ("scenario", "engine"):
            if given(dest):
                yield f"{flag(dest)} sets up a simulation; --topics records live topics instead: give one"
    elif given("wait"):
        yield "--wait bounds the wait for the publishers of --topics: give --topics too"


def _both(given: Given, first: str, second: str, why: str) -> Iterator[str]:
    if given(first) and given(second):
        yield f"{flag(first)} and {flag(second)} {why}"


_RULES: dict[str, Callable[[Given, argparse.Namespace], Iterator[str]]] = {
    "identify": _identify,
    "validate": _validate,
    "synth": _synth,
    "excite": _excite,
    "record": _record,
}


def refuse_idle_preparation(args: RecordingOptions, spec: Any, record: JointRecord, label: str) -> None:
    """Refuse the differentiation options a recording leaves without effect (module docstring).

    Args:
        args: how DATA is prepared (``--derivative``, ``--savgol-window``, ``--cutoff-hz``, ``--filter-torque``).
        spec: the data spec DATA is read through (its differentiation), or None.
        record: DATA as read, before preparation.
        label: how errors name DATA.

    Raises:
        ConfigError: one line naming the option and why it does nothing.
    """
    from motor_ident.errors import ConfigError

    base = spec.preparation.differentiation if spec is not None else None
    method = getattr(args, "derivative", None) or (base.method if base is not None else "savgol")
    filter_torque = getattr(args, "filter_torque", None)
    if filter_torque is None:
        filter_torque = bool(base is not None and base.filter_torque)
    if getattr(args, "savgol_window", None) is not None and method == "butterworth":
        raise ConfigError(
            "--savgol-window sets the Savitzky-Golay window; Butterworth differentiation uses --cutoff-hz"
        )
    if getattr(args, "cutoff_hz", None) is not None and method == "savgol":
        raise ConfigError(
            "--cutoff-hz sets the Butterworth cut-off; Savitzky-Golay differentiation (the default) uses "
            "--savgol-window (or give --derivative butterworth)"
        )
    if filter_torque and getattr(args, "filter_torque", None) and not record.tau_measured:
        raise ConfigError(
            f"--filter-torque filters a measured joint torque: {label} holds none (its torque is converted from raw "
            "measurements after the filter would run)"
        )
    given = [flag(d) for d in DIFFERENTIATION_FLAGS if getattr(args, d, None) is not None]
    if given and record.qd is not None and record.qdd is not None and not filter_torque:
        raise ConfigError(
            f"{' and '.join(given)} {'sets' if len(given) == 1 else 'set'} how velocities and accelerations are "
            f"computed from positions, but {label} "
            "carries both (qd and qdd): nothing is differentiated. Drop the option, or add --filter-torque to pass "
            "the torque through that filter"
        )
