"""Recordings in bag form (rosbag2, MCAP and sqlite3) damaged every way, given to ``motor-ident identify``.

A fuzzer (hypothesis) writes a bag of the 3-DoF arm with `BagWriter` (the writer motor_ident's
recorder uses), with its messages damaged (the joint_states topic missing, of another type or
without messages; NaN / Inf / huge values in any field of any message; stamps reversed, repeated,
going back, zero or jumping ahead; a joint missing; no effort) and then its files damaged
(truncated or a flipped byte at any point, emptied, metadata.yaml removed or garbled, the storage
file given alone). The outcome is always one of two: exit 0 with a finite fit, or exit 2 with one
line naming the bag, no traceback and no output file.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from motor_ident.io.bags.storage import JOINT_STATE
from motor_ident.io.bags.write import BagWriter
from tests.commands.test_bad_config_files import FIXTURE
from tests.commands.test_bad_input import assert_refused_cleanly, run_cli

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow printed on stderr is not one line
ROBOT = "szabo_3dof"


class Arrays(dict[str, np.ndarray]):
    """The arrays of the undamaged recording: t, names, q, qd, tau (a short repr in failure reports)."""

    def __repr__(self) -> str:
        return "<arm recording>"


@dataclass(frozen=True)
class Messages:
    """What the bag's messages are: a name (shown when a case fails) and how to write them."""

    what: str
    write: Callable[[BagWriter, Arrays], None]

    def __repr__(self) -> str:
        return self.what


@dataclass(frozen=True)
class FileDamage:
    """What happens to the bag's files once written; returns the path given to ``identify``."""

    what: str
    apply: Callable[[Path], Path]

    def __repr__(self) -> str:
        return self.what


def _states(bag: BagWriter, a: Arrays, *, t: np.ndarray | None = None, stamps: np.ndarray | None = None) -> None:
    """Every sample as a JointState on /joint_states, received at ``t`` and stamped ``stamps``."""
    t = a["t"] if t is None else t
    for k in range(t.size):
        stamp = None if stamps is None else float(stamps[k])
        bag.joint_state("/joint_states", float(t[k]), a["names"], a["q"][k], a["qd"][k], a["tau"][k], stamp=stamp)


def messages() -> st.SearchStrategy[Messages]:
    """Ways a bag's messages arrive damaged."""

    def value_at(field: str, value: float, where: float, joint: int) -> Messages:
        def write(bag: BagWriter, a: Arrays) -> None:
            changed = a[field].copy()
            changed[int(where * (changed.shape[0] - 1)), joint] = value
            _states(bag, {**a, field: changed})

        return Messages(f"{field}[{where:.2f}, {joint}] = {value!r}", write)

    def stamps(what: str, how: Callable[[np.ndarray], np.ndarray]) -> Messages:
        return Messages(f"stamps {what}", lambda bag, a: _states(bag, a, stamps=how(a["t"].copy())))

    def received(what: str, how: Callable[[np.ndarray], np.ndarray]) -> Messages:
        return Messages(f"received {what}", lambda bag, a: _states(bag, a, t=how(a["t"].copy())))

    def back_at(where: float, by: float) -> Callable[[np.ndarray], np.ndarray]:
        def go(t: np.ndarray) -> np.ndarray:
            t[int(where * (t.size - 1))] -= by
            return t

        return go

    def first(n: int) -> Messages:
        return Messages(
            f"first {n} messages", lambda bag, a: _states(bag, {k: v[:n] if k != "names" else v for k, v in a.items()})
        )

    def without_joint(joint: int) -> Messages:
        def write(bag: BagWriter, a: Arrays) -> None:
            keep = [i for i in range(len(a["names"])) if i != joint]
            _states(
                bag,
                {"t": a["t"], "names": [a["names"][i] for i in keep], **{k: a[k][:, keep] for k in ("q", "qd", "tau")}},
            )

        return Messages(f"joint {joint} never sent", write)

    def no_effort(bag: BagWriter, a: Arrays) -> None:
        for k in range(a["t"].size):
            bag.joint_state("/joint_states", float(a["t"][k]), a["names"], a["q"][k], a["qd"][k], None)

    def other_topic(bag: BagWriter, a: Arrays) -> None:
        for k in range(a["t"].size):
            bag.joint_state("/motor_states", float(a["t"][k]), a["names"], a["q"][k], a["qd"][k], a["tau"][k])

    def wrong_type(bag: BagWriter, a: Arrays) -> None:
        for k in range(a["t"].size):
            bag.array("/joint_states", float(a["t"][k]), a["q"][k])

    def no_messages(bag: BagWriter, a: Arrays) -> None:
        bag._writer.add_connection("/joint_states", JOINT_STATE, typestore=bag.typestore)  # a topic, never written

    fields = st.sampled_from(["q", "qd", "tau"])
    values = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-320])
    return st.one_of(
        st.just(Messages("undamaged", lambda bag, a: _states(bag, a))),
        st.builds(value_at, fields, values, st.floats(0, 1), st.integers(0, 2)),
        st.just(stamps("reversed", lambda t: t[::-1].copy())),
        st.just(stamps("all zero", np.zeros_like)),
        st.just(stamps("all the same", lambda t: np.full_like(t, 5.0))),
        st.builds(
            lambda w, by: stamps(f"one going back {by} s at {w:.2f}", back_at(w, by)),
            st.floats(0, 1),
            st.sampled_from([0.005, 0.3, 100.0]),
        ),
        st.builds(lambda w: stamps(f"one 1e6 s ahead at {w:.2f}", back_at(w, -1e6)), st.floats(0, 1)),
        st.just(received("in reverse order", lambda t: t[::-1].copy())),
        st.integers(0, 3).map(first),
        st.integers(0, 2).map(without_joint),
        st.just(Messages("no effort", no_effort)),
        st.just(Messages("joint states on /motor_states only", other_topic)),
        st.just(Messages("/joint_states as Float64MultiArray", wrong_type)),
        st.just(Messages("/joint_states without messages", no_messages)),
        st.just(Messages("no topic at all", lambda bag, a: None)),
    )


def _storage(bag: Path) -> Path:
    return next(p for p in bag.iterdir() if p.suffix in (".mcap", ".db3"))


UNDAMAGED = FileDamage("none", lambda bag: bag)


def file_damage() -> st.SearchStrategy[FileDamage]:
    """Ways a bag's files arrive damaged (after writing)."""

    def truncated(fraction: float) -> FileDamage:
        def apply(bag: Path) -> Path:
            f = _storage(bag)
            f.write_bytes(f.read_bytes()[: int(fraction * f.stat().st_size)])
            return bag

        return FileDamage(f"storage cut at {fraction:.3f}", apply)

    def flipped(fraction: float) -> FileDamage:
        def apply(bag: Path) -> Path:
            f = _storage(bag)
            data = bytearray(f.read_bytes())
            data[int(fraction * (len(data) - 1))] ^= 0xFF
            f.write_bytes(bytes(data))
            return bag

        return FileDamage(f"storage byte at {fraction:.3f} flipped", apply)

    def metadata(what: str, text: bytes | None) -> FileDamage:
        def apply(bag: Path) -> Path:
            meta = bag / "metadata.yaml"
            meta.unlink() if text is None else meta.write_bytes(text)
            return bag

        return FileDamage(f"metadata.yaml {what}", apply)

    def cut_metadata(fraction: float) -> FileDamage:
        def apply(bag: Path) -> Path:
            meta = bag / "metadata.yaml"
            meta.write_bytes(meta.read_bytes()[: int(fraction * meta.stat().st_size)])
            return bag

        return FileDamage(f"metadata.yaml cut at {fraction:.2f}", apply)

    def emptied(bag: Path) -> Path:
        _storage(bag).write_bytes(b"")
        return bag

    return st.one_of(
        st.floats(0, 0.999).map(truncated),
        st.floats(0, 1).map(flipped),
        st.just(FileDamage("storage emptied", emptied)),
        st.just(metadata("removed", None)),
        st.sampled_from([b"", b"{", b"- a\n- b\n", b"rosbag2_bagfile_information: 3\n", b"\xff\xfe"]).map(
            lambda text: metadata(f"= {text!r}", text)
        ),
        st.floats(0, 0.999).map(cut_metadata),
        st.just(FileDamage("the storage file given alone", _storage)),
    )


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Arrays:
    """A 2 s synthetic recording (100 Hz) of the 3-DoF arm: t, names, q, qd, tau."""
    path = tmp_path_factory.mktemp("arm") / "arm.npz"
    assert run_cli(["synth", "--robot", ROBOT, "--duration", "2", "--rate", "100", "--out", str(path)])[0] == 0
    with np.load(path) as z:
        return {
            "t": 1.0 + z["t"],
            "names": [str(n) for n in z["joint_names"]],
            "q": z["q"],
            "qd": z["qd"],
            "tau": z["tau"],
        }


@FIXTURE
@given(
    storage=st.sampled_from(["mcap", "sqlite3"]),
    written=messages(),
    damage=st.booleans().flatmap(lambda whole: st.just(UNDAMAGED) if whole else file_damage()),  # whole files too
)
def test_identify_reads_a_damaged_bag_or_refuses_it(
    arm: Arrays, storage: str, written: Messages, damage: FileDamage
) -> None:
    """identify on a damaged bag: finite R^2 in the JSON and a parameter file, or exit 2 in one line naming the bag."""
    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / "arm_bag"
        with BagWriter(bag, storage=storage) as writer:
            written.write(writer, arm)
        given_path = damage.apply(bag)
        params, summary = Path(tmp) / "params.yaml", Path(tmp) / "fit.json"
        argv = [
            "identify",
            str(given_path),
            "--robot",
            ROBOT,
            "--no-report",
            "--out",
            str(params),
            "--json",
            str(summary),
        ]
        event(f"bag messages: {written.what.split('[')[0].split(' at ')[0]}")
        event(f"bag files: {damage.what.split(' at ')[0].split(' = ')[0]}")
        code, err = run_cli(argv)
        if code != 0:
            assert_refused_cleanly(code, err, argv, [params, summary])
            assert given_path.name in err, (argv, err)
            return
        fit = json.loads(summary.read_text())
        assert params.is_file() and all(math.isfinite(v) for v in fit["r2_per_joint"]), (argv, fit)
        assert math.isfinite(fit["condition_number"]), (argv, fit)
