"""Node processes of a scenario run: starting, watching and stopping them.

The multi-process layout of `motor_ident.ros.runtime.runner.run_scenario` (``processes=True``;
``motor-ident run --processes``) starts each node through its entry point with ``--ros-args
--params-file FILE -p name:=value`` as ``ros2 launch`` starts it. At the end each process gets
SIGINT; one still running after `STOP_GRACE_S` gets SIGTERM, then SIGKILL (reported: Fast DDS
then leaves files in /dev/shm, removed by ``fastdds shm clean``). Each process writes its output
to ``<log_dir>/<node>.log``; a process that exits early stops the run with its last log lines.

The node processes cannot outlive the process that started them. `Forwarding`: SIGINT, SIGTERM or
SIGHUP to the runner (Ctrl-C, a service manager's or container's stop, a closed terminal) is
recorded, the runner's loops see it, and every node gets the same signal, then the escalation
above (each stops with its safe output; the runner waits for them). And each node is started with
`motor_ident.ros.runtime.shutdown.PARENT_ENV`: it asks the kernel for SIGTERM when the runner ends, so a
runner killed by SIGKILL (or crashed) leaves no node running either.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rclpy.node import Node, NodeNameNonExistentError

from motor_ident.errors import ConfigError, NodeProcessError
from motor_ident.io.demo_report import RunResult
from motor_ident.ros.runtime.shutdown import PARENT_ENV, STOP_SIGNALS

STOP_GRACE_S = 5.0  # after SIGINT (then SIGTERM) before the next, harder signal
LOG_TAIL_LINES = 15
RETRY_S = 5.0  # a lifecycle request unanswered this long: ask the node's state, send it again if lost


def parameter_argument(name: str, value: object) -> str:
    """``name:=value`` for ``--ros-args -p``: the value as YAML, which is how rcl reads it."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return f"{name}:={text.removesuffix('...').strip()}"


def memory_mb(pid: int | None = None, *, peak: bool = False) -> float:
    """Resident set size of a process (this one by default) [MB], its peak with ``peak``.

    Linux /proc; NaN elsewhere or once the process has gone.
    """
    key = "VmHWM:" if peak else "VmRSS:"
    try:
        with open(f"/proc/{'self' if pid is None else pid}/status") as status:
            for line in status:
                if line.startswith(key):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


@dataclass
class ProcessRunResult(RunResult):
    """A run with every node in its own process; also how each process did.

    ``processes``: one dict per node: ``node``, ``pid``, ``log`` (path), ``rss_mb`` (last seen
    while it ran), ``peak_rss_mb``, ``returncode`` (None while running) and ``stopped_with``
    (the last signal the runner sent: SIGINT, SIGTERM, SIGKILL; "interrupted" when Ctrl-C ended
    the run, "" if it exited by itself).
    """

    log_dir: Path | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)


class RunInterrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP ended a run with node processes before it was under way (the
    nodes have been stopped). A KeyboardInterrupt, so code that handles Ctrl-C handles it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Forwarding:
    """While node processes run: `STOP_SIGNALS` to this process are recorded, never raised at an
    arbitrary point (a ``Popen`` half done would lose its child, a teardown half done its nodes).

    `install` (main thread only: elsewhere it does nothing) and `restore` (the previous handlers
    back). A SIGHUP ignored from the start (``nohup``) stays ignored. `check` raises
    `RunInterrupted` once a signal came; `stop_processes` sends the nodes the first one.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def install(self) -> Forwarding:
        """Record `STOP_SIGNALS` from now on."""
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                if signum != signal.SIGHUP or signal.getsignal(signum) != signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._record)
        return self

    def restore(self) -> None:
        """The handlers from before `install`."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _record(self, signum: int, _frame: object) -> None:
        self.received.append(signum)

    @property
    def first(self) -> signal.Signals | None:
        """The first signal received, if any."""
        return signal.Signals(self.received[0]) if self.received else None

    def check(self) -> None:
        """Raises `RunInterrupted` once a signal came."""
        if self.received:
            raise RunInterrupted(self.received[0])


class NodeProcess:
    """One node started through its entry point, its output going to ``<log_dir>/<name>.log``.

    The node stops (SIGTERM from the kernel) when the thread that starts it ends: started from the
    main thread, when this process ends (`motor_ident.ros.runtime.shutdown.PARENT_ENV`); started from another
    thread, it is not tied to it (that thread may end before the run does).
    """

    def __init__(self, name: str, command: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 -- closed in `close`, after the process ended
        if threading.current_thread() is threading.main_thread():
            env = {**env, PARENT_ENV: str(os.getpid())}
        self.popen = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT, env=env
        )
        self.stopped_with = ""
        self.rss_mb = float("nan")
        self.peak_rss_mb = float("nan")

    def sample_memory(self) -> None:
        """Read the process's resident and peak memory while it runs."""
        if self.popen.poll() is None:
            rss, peak = memory_mb(self.popen.pid), memory_mb(self.popen.pid, peak=True)
            if np.isfinite(rss):
                self.rss_mb, self.peak_rss_mb = rss, peak

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the process's log."""
        if not self._log_file.closed:
            self._log_file.flush()
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def failure(self) -> ConfigError | NodeProcessError | None:
        """The error to raise when the process has exited without being asked to, else None."""
        code = self.popen.poll()
        if code is None or self.stopped_with:
            return None
        tail = self.tail()
        refusal = next((line for line in reversed(tail.splitlines()) if "refusing to start: " in line), None)
        if code == 2 and refusal is not None:  # run_node: a parameter is wrong
            return ConfigError(f"{self.name}: {refusal.split('refusing to start: ', 1)[1]} (log {self.log})")
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        return NodeProcessError(f"node {self.name} {how} before the run ended; the end of {self.log}:\n{tail}")

    def report(self) -> dict[str, Any]:
        """What `ProcessRunResult.processes` holds for this process."""
        return {
            "node": self.name,
            "pid": self.popen.pid,
            "log": str(self.log),
            "rss_mb": self.rss_mb,
            "peak_rss_mb": self.peak_rss_mb,
            "returncode": self.popen.poll(),
            "stopped_with": self.stopped_with,
        }

    def close(self) -> None:
        """Close the log file (the process has ended)."""
        self._log_file.close()


def stop_processes(
    processes: Sequence[NodeProcess], grace: float = STOP_GRACE_S, first: signal.Signals = signal.SIGINT
) -> None:
    """End the running ones: ``first`` (SIGINT, or the signal the runner got) to all at once;
    SIGTERM after ``grace`` seconds; SIGKILL after another."""
    for sig in dict.fromkeys((first, signal.SIGTERM, signal.SIGKILL)):
        running = [p for p in processes if p.popen.poll() is None]
        if not running:
            break
        for process in running:
            process.sample_memory()
            process.popen.send_signal(sig)
            process.stopped_with = sig.name
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.popen.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
    for process in processes:
        process.close()


def spin_until(
    done: Callable[[], bool],
    executor: Any,
    children: Sequence[NodeProcess],
    timeout: float,
    failure: Callable[[], str] | None,
    forwarding: Forwarding | None = None,
) -> None:
    """Spin until ``done()``; raise a `NodeProcessError` with ``failure()`` after ``timeout`` seconds
    (just return when ``failure`` is None), the error of a child that exited, or `RunInterrupted`
    when ``forwarding`` received a signal."""
    deadline = time.monotonic() + timeout
    while not done():
        if forwarding is not None:
            forwarding.check()
        raise_on_exit(children)
        if time.monotonic() > deadline:
            if failure is None:
                return
            raise NodeProcessError(f"{failure()} (within {timeout:g} s)")
        executor.spin_once(timeout_sec=0.05)


def raise_on_exit(children: Sequence[NodeProcess]) -> None:
    for child in children:
        error = child.failure()
        if error is not None:
            raise error


def has_topics(node: Node, name: str) -> bool:
    """Whether node ``name`` has created a publisher of its own (past rcl's /rosout and
    /parameter_events): its constructor, where the start-up work is, has come that far."""
    try:
        publishers = node.get_publisher_names_and_types_by_node(name, "/")
    except NodeNameNonExistentError:
        return False
    return any(topic not in ("/rosout", "/parameter_events") for topic, _ in publishers)


def not_up(node: Node, children: Sequence[NodeProcess], names: Sequence[str]) -> str:
    missing = [c for c in children if c.name in names and not has_topics(node, c.name)] or [
        c for c in children if c.name in names
    ]
    return "; ".join(f"{c.name} (the end of {c.log}:\n{c.tail()})" for c in missing)


def change_states(
    node: Node,
    executor: Any,
    children: Sequence[NodeProcess],
    targets: Sequence[tuple[str, NodeProcess]],
    transition: str,
    timeout: float,
    forwarding: Forwarding | None = None,
) -> None:
    """Lifecycle ``transition`` (``configure`` or ``activate``) of managed nodes, all at once,
    through their ``<node>/change_state`` services (lifecycle_msgs), as launch's ``LifecycleNode``
    actions do. ``targets``: (fully qualified node name, its process); ``forwarding`` as in
    `spin_until`.

    A request unanswered after `RETRY_S` is followed by a ``get_state`` request: a node already in
    the transition's goal state counts as done (its answer was lost), one still in the start state
    gets the request again (the request was lost: a service can be discovered before its replies
    can reach this client), one busy in the transition is waited for.

    Raises:
        ConfigError: a node refused to configure (its ``refusing to configure:`` log line).
        NodeProcessError: a service did not appear or answer within ``timeout`` seconds, a
            transition failed otherwise, or a process exited.
        RunInterrupted: ``forwarding`` received a signal.
    """
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState

    ids = {"configure": Transition.TRANSITION_CONFIGURE, "activate": Transition.TRANSITION_ACTIVATE}
    start_state, goal_state = {"configure": ("unconfigured", "inactive"), "activate": ("inactive", "active")}[
        transition
    ]
    changes: dict[str, Any] = {name: node.create_client(ChangeState, f"{name}/change_state") for name, _ in targets}
    states: dict[str, Any] = {name: node.create_client(GetState, f"{name}/get_state") for name, _ in targets}
    clients = [*changes.values(), *states.values()]
    by_name = dict(targets)
    try:
        spin_until(
            lambda: all(client.service_is_ready() for client in clients),
            executor,
            children,
            timeout,
            lambda: f"no lifecycle services of {[n for n in changes if not changes[n].service_is_ready()]}",
            forwarding,
        )

        def request(name: str) -> Any:
            return changes[name].call_async(ChangeState.Request(transition=Transition(id=ids[transition])))

        def wait_all(pending: list[Any], seconds: float) -> None:
            spin_until(lambda: all(future.done() for future in pending), executor, children, seconds, None, forwarding)

        futures = {name: request(name) for name in changes}
        answered: dict[str, bool] = {}  # name -> success
        deadline = time.monotonic() + timeout
        while len(answered) < len(futures):
            waiting = [name for name in futures if name not in answered]
            wait_all([futures[name] for name in waiting], min(RETRY_S, max(deadline - time.monotonic(), 0.0)))
            for name in waiting:
                if futures[name].done():
                    result = futures[name].result()
                    answered[name] = result is not None and result.success
            late = [name for name in waiting if name not in answered]
            if not late:
                break
            if time.monotonic() > deadline:
                tails = "; ".join(f"{name} (the end of {by_name[name].log}:\n{by_name[name].tail()})" for name in late)
                raise NodeProcessError(f"{transition} not answered within {timeout:g} s by {tails}")
            queries = {name: states[name].call_async(GetState.Request()) for name in late}
            wait_all(list(queries.values()), RETRY_S)
            for name, query in queries.items():
                answer = query.result() if query.done() else None
                label = answer.current_state.label if answer is not None else ""
                if label == goal_state:
                    answered[name] = True
                elif label == start_state:
                    futures[name] = request(name)
        for name, success in answered.items():
            if success:
                continue
            child = by_name[name]
            tail = child.tail()
            refusal = next((line for line in reversed(tail.splitlines()) if "refusing to configure: " in line), None)
            if refusal is not None:
                raise ConfigError(f"{name}: {refusal.split('refusing to configure: ', 1)[1]} (log {child.log})")
            raise NodeProcessError(f"node {name}: {transition} failed; the end of {child.log}:\n{tail}")
    finally:
        for client in clients:
            node.destroy_client(client)
