"""rosbag2 files written by motor_ident and read back without ROS: MCAP and sqlite3, damage, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from motor_ident.io.bags.read import read_bag
from motor_ident.io.bags.series import (
    BagError,
    CorruptBagError,
    EmptyBagError,
    MissingTopicError,
    UnsupportedTypeError,
    align,
    resample,
)
from motor_ident.io.bags.write import BagWriter

JOINTS = ("j1", "j2", "j3")


def _write(
    path: Path, rng: np.random.Generator, *, storage: str = "mcap", samples: int = 400, shuffle: bool = True
) -> dict:
    """A bag whose joint states come in a shuffled name order per message (or all alike); returns the truth."""
    t = 1.0 + np.arange(samples) / 500.0
    q = rng.standard_normal((samples, 3))
    qd = rng.standard_normal((samples, 3))
    tau = rng.standard_normal((samples, 3))
    with BagWriter(path, storage=storage) as bag:
        for k in range(samples):
            order = rng.permutation(3) if shuffle else np.array([2, 0, 1])
            names = [JOINTS[i] for i in order]
            bag.joint_state("/joint_states", t[k], names, q[k, order], qd[k, order], tau[k, order])
            # motor side: half a period later, linear in time so interpolation is exact
            bag.joint_state("/motor_states", t[k] + 0.001, ["m1"], [2.0 * (t[k] + 0.001)], [2.0], [0.1])
            if k % 10 == 0:
                bag.array("/effort_controller/commands", t[k], [float(k), -float(k), 0.5])
                bag.wrench("/ft_sensor/wrench", t[k], [1.0, 2.0, t[k]], [4.0, 5.0, 6.0], "ft_link")
    return {"t": t, "q": q, "qd": qd, "tau": tau}


@pytest.mark.parametrize(("storage", "shuffle"), [("mcap", True), ("sqlite3", True), ("mcap", False)])
def test_round_trip_reorders_joints_by_name(
    tmp_path: Path, rng: np.random.Generator, storage: str, shuffle: bool
) -> None:
    """Read back in the requested order, bit for bit, in both storages; one name order per message
    (decoded one by one with rosbags) or the same order throughout (decoded in bulk with numpy)."""
    truth = _write(tmp_path / "bag", rng, storage=storage, shuffle=shuffle)
    order = ["j3", "j1", "j2"]
    data = read_bag(tmp_path / "bag", joints=order)
    idx = [JOINTS.index(j) for j in order]
    assert data.storage == storage and data.warnings == ()
    assert data.joint_states.names == tuple(order)
    np.testing.assert_allclose(data.joint_states.t, truth["t"], rtol=0, atol=1e-9)  # stamps are integer ns
    np.testing.assert_array_equal(data.joint_states.position, truth["q"][:, idx])
    np.testing.assert_array_equal(data.joint_states.velocity, truth["qd"][:, idx])
    np.testing.assert_array_equal(data.joint_states.effort, truth["tau"][:, idx])
    assert data.wrench is not None and data.wrench.frame_id == "ft_link"
    np.testing.assert_allclose(data.wrench.force[:, 2], data.wrench.t)
    assert data.commands is not None and data.commands.values.shape == (40, 3)
    record = data.joint_record(["j2", "j1", "j3"])
    np.testing.assert_array_equal(record.tau, truth["tau"][:, [1, 0, 2]])


def test_alignment_on_joint_state_stamps(tmp_path: Path, rng: np.random.Generator) -> None:
    """Motor states interpolate linearly, commands hold, wrench follows; `valid` marks uncovered stamps."""
    truth = _write(tmp_path / "bag", rng)
    aligned = align(read_bag(tmp_path / "bag"))
    t = truth["t"]
    assert aligned.motor_position is not None and aligned.command is not None and aligned.force is not None
    # motor stamps start 1 ms after the first joint state: that first row is not covered
    assert not aligned.valid[0] and aligned.valid[1:-9].all()
    np.testing.assert_allclose(aligned.motor_position[1:, 0], 2.0 * t[1:], rtol=1e-12)
    # zero-order hold: the command sent at sample 10 k applies until sample 10 (k + 1)
    np.testing.assert_array_equal(aligned.command[:, 0], 10.0 * (np.arange(t.size) // 10))
    np.testing.assert_allclose(aligned.force[:-9, 2], t[:-9], rtol=1e-12)


def test_resample_closed_form() -> None:
    """Linear interpolation and hold against hand-computed values, edges flagged outside."""
    ts = np.array([0.0, 1.0, 2.0])
    values = np.array([[0.0], [10.0], [30.0]])
    linear, inside = resample(ts, values, [-0.5, 0.5, 1.5, 2.5])
    np.testing.assert_allclose(linear[:, 0], [0.0, 5.0, 20.0, 30.0])
    np.testing.assert_array_equal(inside, [False, True, True, False])
    held, _ = resample(ts, values, [0.5, 1.0, 1.99], hold=True)
    np.testing.assert_array_equal(held[:, 0], [0.0, 10.0, 10.0])


def test_truncated_mcap_keeps_the_intact_part(tmp_path: Path, rng: np.random.Generator) -> None:
    """An MCAP cut mid-file (no footer, no index) still gives its intact messages, with a warning."""
    truth = _write(tmp_path / "bag", rng, samples=4500)  # > 1 MiB: the writer's first chunk is complete
    mcap = next((tmp_path / "bag").glob("*.mcap"))
    raw = mcap.read_bytes()
    mcap.write_bytes(raw[: int(0.85 * len(raw))])
    data = read_bag(tmp_path / "bag", joints=JOINTS)
    N = data.joint_states.t.size
    assert 1000 < N < 4500
    np.testing.assert_array_equal(data.joint_states.position, truth["q"][:N])
    assert any("cut short" in w for w in data.warnings), data.warnings
    # the same file on its own (no metadata.yaml beside it) reads the same way
    alone = tmp_path / "alone.mcap"
    shutil.copy(mcap, alone)
    assert read_bag(alone).joint_states.t.size == N


def test_damaged_beyond_recovery(tmp_path: Path, rng: np.random.Generator) -> None:
    """Too little left of an MCAP, a truncated sqlite3 file, an empty file: CorruptBagError saying so."""
    _write(tmp_path / "m", rng, samples=100)
    mcap = next((tmp_path / "m").glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[:200])
    with pytest.raises(CorruptBagError, match="no joint state could be recovered"):
        read_bag(tmp_path / "m")
    _write(tmp_path / "s", rng, storage="sqlite3", samples=100)
    db = next((tmp_path / "s").glob("*.db3"))
    db.write_bytes(db.read_bytes()[:3000])
    with pytest.raises(CorruptBagError, match="cannot be read"):
        read_bag(tmp_path / "s")
    (tmp_path / "empty.mcap").write_bytes(b"")
    with pytest.raises(CorruptBagError, match="empty"):
        read_bag(tmp_path / "empty.mcap")


def test_clear_errors(tmp_path: Path) -> None:
    """Missing topic (lists what is there), wrong type, no messages, not a bag, existing output."""
    with BagWriter(tmp_path / "motors_only") as bag:
        bag.joint_state("/motor_states", 0.1, ["m1"], [0.0], [0.0], [0.0])
    with pytest.raises(MissingTopicError, match=r"no /joint_states topic; it holds /motor_states"):
        read_bag(tmp_path / "motors_only")
    with BagWriter(tmp_path / "wrong_type") as bag:
        bag.array("/joint_states", 0.1, [1.0])
    with pytest.raises(UnsupportedTypeError, match="Float64MultiArray; expected sensor_msgs/msg/JointState"):
        read_bag(tmp_path / "wrong_type")
    with BagWriter(tmp_path / "nothing"):
        pass
    with pytest.raises(EmptyBagError):
        read_bag(tmp_path / "nothing")
    (tmp_path / "dir").mkdir()
    with pytest.raises(BagError, match="no .mcap or .db3"):
        read_bag(tmp_path / "dir")
    with pytest.raises(BagError, match="exists already"):
        BagWriter(tmp_path / "nothing")


def test_bad_messages_are_dropped_and_counted(tmp_path: Path) -> None:
    """A missing joint, a NaN, a short array and a repeated stamp are dropped with their reasons."""
    with BagWriter(tmp_path / "bag") as bag:
        bag.joint_state("/joint_states", 0.1, JOINTS, [0, 0, 0], [0, 0, 0], [0, 0, 0])
        bag.joint_state("/joint_states", 0.2, ["j1", "j2"], [0, 0], [0, 0], [0, 0])
        bag.joint_state("/joint_states", 0.3, JOINTS, [0, np.nan, 0], [0, 0, 0], [0, 0, 0])
        bag.joint_state("/joint_states", 0.4, JOINTS, [0, 0, 0], [0, 0], [0, 0, 0])
        bag.joint_state("/joint_states", 0.4, JOINTS, [1, 1, 1], [1, 1, 1], [1, 1, 1])
        bag.joint_state("/joint_states", 0.4, JOINTS, [9, 9, 9], [9, 9, 9], [9, 9, 9])
        bag.joint_state("/joint_states", 0.5, list(reversed(JOINTS)), [3, 2, 1], [0, 0, 0], [0, 0, 0])
    data = read_bag(tmp_path / "bag", joints=JOINTS)
    np.testing.assert_array_equal(data.joint_states.t, [0.1, 0.4, 0.5])
    np.testing.assert_array_equal(data.joint_states.position[-1], [1, 2, 3])
    text = " | ".join(data.warnings)
    for reason in ("joints ['j3'] missing", "non-finite position", "velocity has 2 values", "did not increase"):
        assert reason in text, text


def test_unstamped_joint_states_use_the_receive_time(tmp_path: Path) -> None:
    """A driver that leaves header stamps at zero: the bag's receive times are used instead."""
    with BagWriter(tmp_path / "bag") as bag:
        for k in range(5):
            bag.joint_state("/joint_states", 2.0 + 0.01 * k, JOINTS, [k, 0, 0], [0, 0, 0], [0, 0, 0], stamp=0.0)
    data = read_bag(tmp_path / "bag")
    np.testing.assert_allclose(data.joint_states.t, 2.0 + 0.01 * np.arange(5), atol=1e-9)
    assert data.warnings == ()


def test_a_clock_starting_at_zero_keeps_its_stamps(tmp_path: Path) -> None:
    """A simulated bag played back and recorded again: stamps 0, 0.01, ... received at wall-clock
    times. The first stamp is zero, the rest are not: every message keeps its stamp (read per
    message, the first joint state and wrench went to the receive time, decades after the rest)."""
    with BagWriter(tmp_path / "bag") as bag:
        for k in range(5):
            received, stamp = 1.8e9 + 0.01 * k, 0.01 * k
            bag.joint_state("/joint_states", received, JOINTS, [k, 0, 0], [0, 0, 0], [0, 0, 0], stamp=stamp)
            bag.wrench("/ft_sensor/wrench", received, [k, 0, 0], [0, 0, 0], "ft", stamp=stamp)
    data = read_bag(tmp_path / "bag")
    np.testing.assert_allclose(data.joint_states.t, 0.01 * np.arange(5), atol=1e-9)
    assert data.wrench is not None
    np.testing.assert_allclose(data.wrench.t, 0.01 * np.arange(5), atol=1e-9)
    np.testing.assert_array_equal(data.wrench.force[:, 0], np.arange(5))
    assert data.warnings == ()


def test_joints_not_asked_for_are_reported_with_their_motion(tmp_path: Path) -> None:
    """A bag whose joint states carry a gripper the robot config does not name: it is left out of the
    arrays and reported with the range it moved over (the CSV path's warning names it the same way)."""
    from motor_ident.commands.torque_options import ignored_joints

    with BagWriter(tmp_path / "bag") as bag:
        for k in range(5):
            bag.joint_state("/joint_states", 0.01 * (k + 1), [*JOINTS, "gripper"], [0, 0, 0, 0.1 * k])
    data = read_bag(tmp_path / "bag", joints=JOINTS)
    assert data.joint_states.names == tuple(JOINTS)
    assert data.other_joints == pytest.approx({"gripper": 0.4})
    (warning,) = ignored_joints(data.other_joints, JOINTS)
    assert "positions of gripper (moves over 0.4 rad) are ignored" in warning
    assert read_bag(tmp_path / "bag").other_joints == {}  # no joints asked for: every joint is read
