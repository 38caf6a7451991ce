"""Message conversions: joint order by name, bad messages refused with a reason."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from motor_ident.ros.wire.conversions import (
    JointIndex,
    array_values,
    joint_state_arrays,
    make_array,
    make_joint_state,
    seconds_to_stamp,
    stamp_to_seconds,
)

JOINTS = ("a", "b", "c", "d")


@settings(max_examples=3000, deadline=None)
@given(
    perm=st.permutations(range(6)),
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=18, max_size=18),
)
def test_shuffled_names_round_trip(perm: list[int], values: list[float]) -> None:
    """Arrays -> JointState with shuffled and extra names -> arrays gives the original arrays."""
    names = list(JOINTS) + ["extra1", "extra2"]
    arr = np.asarray(values).reshape(3, 6)
    order = list(perm)
    msg = make_joint_state([names[i] for i in order], 1.5, arr[0][order], arr[1][order], arr[2][order])
    out, reason = joint_state_arrays(msg, JointIndex(JOINTS))
    assert reason == ""
    for k in range(3):
        assert_allclose(out[k], arr[k][:4])


def test_bad_joint_states_are_refused_with_reasons() -> None:
    """Missing joints, short fields and NaN give a reason instead of arrays."""
    index = JointIndex(JOINTS)
    msg = make_joint_state(["a", "b", "c"], 0.0, np.zeros(3), np.zeros(3), np.zeros(3))
    assert joint_state_arrays(msg, index) == ([], "joints ['d'] missing")
    msg = make_joint_state(list(JOINTS), 0.0, np.zeros(4), np.zeros(3), np.zeros(4))
    assert "velocity has 3 values" in joint_state_arrays(msg, index)[1]
    msg = make_joint_state(list(JOINTS), 0.0, np.zeros(4), np.zeros(4), [0.0, np.nan, 0.0, 0.0])
    assert joint_state_arrays(msg, index)[1] == "non-finite effort"
    msg = make_joint_state(["a", "a", "b", "c", "d"], 0.0, np.zeros(5), np.zeros(5), np.zeros(5))
    assert joint_state_arrays(msg, index)[1] == "joints ['a'] named twice"


def test_command_arrays_and_stamps() -> None:
    """Float64MultiArray sizes and finiteness are checked; stamps round-trip to the nanosecond."""
    assert array_values(make_array(np.ones(3)), 4)[0] is None
    assert array_values(make_array(np.array([1.0, np.inf])), 2)[1] == "non-finite value"
    assert_allclose(array_values(make_array(np.arange(3.0)), 3)[0], [0.0, 1.0, 2.0])
    assert abs(stamp_to_seconds(seconds_to_stamp(12.345678901)) - 12.345678901) < 1e-9
