"""A node process that blocks where motor_ident's nodes can block: while importing, in its
constructor or in ``destroy_node``; started through `run_node` as every node entry point is.

    python -m tests.ros.slow_node WHERE SECONDS [--ros-args ...]

WHERE: import, constructor, destroy, destroy_stubborn, callback_c, destroy_c_locked or
spin_stubborn (anything else: a node that does not block).

``destroy_stubborn`` swallows the signal's `StopRequested` and blocks again (code that catches
BaseException): only the watchdog's immediate exit ends it. ``callback_c`` blocks its running
timer callback in C code (a mutex wait that signals do not interrupt, the interpreter lock
released): the main thread never returns to Python to run a signal handler. ``destroy_c_locked``
blocks ``destroy_node`` in C code holding the interpreter lock: no Python thread runs.
``spin_stubborn`` busy-loops in its running timer callback, swallowing every `StopRequested`: at
a real-time priority (the node's `motor_ident.scenario.nodes.RealtimeSettings`, given as ROS
parameters) it never gives its core up. It prints ``blocking in <where>`` just before it blocks,
and ``running`` once it spins.
"""

from __future__ import annotations

import ctypes
import sys
import time
from dataclasses import dataclass

from motor_ident.ros.runtime.shutdown import StopRequested, install
from motor_ident.scenario.nodes import RealtimeSettings
from motor_ident.schema import inline


@dataclass(frozen=True)
class SlowSettings:
    """The slow node's settings: the real-time ones of the 1 kHz nodes."""

    realtime: RealtimeSettings = inline(RealtimeSettings)


def block(where: str, seconds: float, *, stubborn: bool = False) -> None:
    print(f"blocking in {where}", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            time.sleep(max(end - time.monotonic(), 0.0))
        except StopRequested:
            if not stubborn:
                raise


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def spin(where: str, seconds: float) -> None:
    """Busy-loop for ``seconds`` without ever blocking, swallowing every `StopRequested`."""
    print(f"blocking in {where}", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            while time.monotonic() < end:
                pass
        except StopRequested:
            pass


def block_in_c(where: str, seconds: float, *, hold_lock: bool) -> None:
    """Wait ``seconds`` in libc on a mutex this thread holds; with ``hold_lock`` the interpreter
    lock stays held (ctypes.PyDLL), otherwise it is released (ctypes.CDLL)."""
    print(f"blocking in {where}", flush=True)
    libc = ctypes.PyDLL(None) if hold_lock else ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: a default mutex (glibc)
    libc.pthread_mutex_lock(mutex)
    deadline = time.time() + seconds
    libc.pthread_mutex_timedlock(mutex, ctypes.byref(_Timespec(int(deadline), int(deadline % 1 * 1e9))))


def main() -> None:
    install()
    where, seconds = sys.argv[1], float(sys.argv[2])
    if where == "import":
        try:
            block("import", seconds)
        except StopRequested as stop:  # what motor_ident.ros.runtime.entry_points.run does
            print(f"stopped by {stop} while starting", flush=True)
            return
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.runtime.common import run_node
    from motor_ident.ros.runtime.parameters import declare_settings

    class SlowNode(Node):
        def __init__(self) -> None:
            super().__init__("slow_node")
            self.settings = declare_settings(self, SlowSettings)
            self.pub = self.create_publisher(Float64MultiArray, "slow_node/out", 10)
            self.ticks = 0
            self.create_timer(0.05, self._tick)
            if where == "constructor":
                block("constructor", seconds)

        def _tick(self) -> None:
            self.pub.publish(Float64MultiArray(data=[1.0]))
            self.ticks += 1
            if self.ticks == 1:
                print("running", flush=True)
            elif self.ticks == 3 and where == "callback_c":
                block_in_c("a callback", seconds, hold_lock=False)
            elif self.ticks == 3 and where == "spin_stubborn":
                spin("a callback", seconds)

        def destroy_node(self) -> None:
            if where == "destroy_c_locked":
                block_in_c("destroy_node", seconds, hold_lock=True)
            elif where.startswith("destroy"):
                block("destroy_node", seconds, stubborn=where == "destroy_stubborn")
            super().destroy_node()

    run_node(SlowNode, [sys.argv[0], *sys.argv[3:]])


if __name__ == "__main__":
    main()
