"""Joint order by name: where each of our joints sits in a message's or a file's name list.

The one rule every reader of joint states follows (the nodes, `motor_ident.ros.wire.conversions`, and
the bag reader, `motor_ident.io.bags.joint_states`): our joints are matched by name; other names
(other joints, another robot's) are ignored; one of ours missing or named twice makes the sample
unusable, with a `Reason` saying which.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

# Kinds of reason a sample is unusable: the keys drops are counted by.
MISSING_JOINTS = "missing joints"
DUPLICATE_NAMES = "duplicate names"


class Reason(str):
    """Why a message was dropped: the full text (a str), and ``kind``, the key it is counted by."""

    kind: str

    def __new__(cls, text: str, kind: str) -> Reason:
        """``text`` says what was wrong with this message; ``kind`` names the class of problem."""
        reason = super().__new__(cls, text)
        reason.kind = kind
        return reason


class JointIndex:
    """Maps the joint order of incoming name lists to ours; caches the map per name order."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self._cache: dict[tuple[str, ...], NDArray[np.int64] | Reason] = {}

    def order(self, names: Sequence[str]) -> NDArray[np.int64] | None:
        """Indices into a message's arrays giving our joint order, or None if a joint is missing
        or one of ours is named twice (`lookup` says which)."""
        found = self.lookup(names)
        return None if isinstance(found, Reason) else found

    def lookup(self, names: Sequence[str]) -> NDArray[np.int64] | Reason:
        """Indices into a message's arrays giving our joint order (n,), or the `Reason` they
        cannot: a joint of ours missing or named more than once. Other names are ignored."""
        key = tuple(names)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) > 64:
                self._cache.clear()
            found = self._cache[key] = self._resolve(key)
        return found

    def _resolve(self, names: tuple[str, ...]) -> NDArray[np.int64] | Reason:
        ours = set(self.joint_names)
        positions: dict[str, int] = {}
        twice = []
        for i, name in enumerate(names):
            if name in ours:
                if name in positions:
                    twice.append(name)
                positions[name] = i
        if twice:
            return Reason(f"joints {sorted(set(twice))} named twice", DUPLICATE_NAMES)
        missing = [j for j in self.joint_names if j not in positions]
        if missing:
            return Reason(f"joints {missing} missing", MISSING_JOINTS)
        return np.array([positions[j] for j in self.joint_names], dtype=np.int64)

    def missing(self, names: Sequence[str]) -> list[str]:
        """Our joints absent from ``names``."""
        present = set(names)
        return [j for j in self.joint_names if j not in present]
