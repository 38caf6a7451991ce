"""Argument types of the ``motor-ident`` command line: numbers checked against their range once, here.

Every numeric option of every subcommand takes its type from `real` or `integer`, so a value that
is not a number, not finite (``nan``, ``inf``) or out of range is refused by the parser with one
line naming the option, the value and what was expected (exit status 2), before any work starts.
The ranges are written as the settings' are (`motor_ident.schema.Spec`), and worded the same way.
`CommandParser` makes every parser error that one line (argparse prints the whole usage first).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

from motor_ident.schema import Spec, specs, value_kind

Number = Callable[[str], float]
Integer = Callable[[str], int]


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``prog: error: message (see prog --help)``."""

    def error(self, message: str) -> NoReturn:
        """Print the error on one line to stderr and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _range(low: float | None, high: float | None, open: tuple[bool, bool]) -> Spec:  # noqa: A002 - interval notation
    return Spec("", low=low, high=high, open=open)


def real(*, low: float | None = None, high: float | None = None, open: tuple[bool, bool] = (False, False)) -> Number:  # noqa: A002
    """The type of a float option: finite, within ``[low, high]`` (``open`` excludes an end).

    Example: ``real(low=0.0, open=(True, False))`` takes any finite float > 0.
    """
    spec = _range(low, high, open)
    expected = spec.expected("a finite number")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}") from None
        if not math.isfinite(value) or not spec.in_range(value):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def integer(*, low: int | None = None, high: int | None = None) -> Integer:
    """The type of an integer option within ``[low, high]`` (either end may be None: unbounded)."""
    spec = _range(low, high, (False, False))
    bounds = ([f">= {low}"] if low is not None else []) + ([f"<= {high}"] if high is not None else [])
    expected = " ".join(["an integer", ", ".join(bounds)]).strip()

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}") from None
        if not spec.in_range(value):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    parse.__name__ = "integer"
    return parse


def from_setting(cls: type, name: str) -> Number | Integer:
    """The type of an option that sets the numeric setting ``name`` of the settings class ``cls``:
    the range its schema declares (`motor_ident.schema.setting`), so the two cannot disagree."""
    spec, hint, _ = specs(cls)[name]
    scalar, _, _ = value_kind(hint)
    if scalar is int:
        return integer(
            low=None if spec.low is None else int(spec.low), high=None if spec.high is None else int(spec.high)
        )
    return real(low=spec.low, high=spec.high, open=spec.open)


POSITIVE = real(low=0.0, open=(True, False))
"""A finite float > 0: durations [s], rates [Hz], timeouts, scales."""
NON_NEGATIVE = real(low=0.0)
"""A finite float >= 0: noise levels, masses, margins."""
FRACTION = real(low=0.0, high=1.0, open=(True, False))
"""A float in (0, 1]: a weight, a fraction of a limit."""
COUNT = integer(low=1)
"""An integer >= 1: robots, days, workers, runs, iterations."""
NON_NEGATIVE_INT = integer(low=0)
"""An integer >= 0: retries, a chunk size where 0 means never."""
SEED = integer(low=0, high=2**32 - 1)
"""A random seed: an integer in [0, 2^32 - 1] (NumPy's legacy seeding takes no more)."""
