"""A node process that blocks where motor_ident's nodes can block: while importing, in its
constructor or in ``destroy_node``; started through `run_node` as every node entry point is.

    python -m tests.ros.slow_node {import,constructor,destroy,destroy_stubborn} SECONDS [--ros-args ...]

``destroy_stubborn`` swallows the signal's `StopRequested` and blocks again (code that catches
BaseException): only the watchdog's immediate exit ends it. It prints ``blocking in <where>``
just before it blocks, and ``running`` once it spins.
"""

from __future__ import annotations

import sys
import time

from motor_ident.ros.shutdown import StopRequested, install


def block(where: str, seconds: float, *, stubborn: bool = False) -> None:
    print(f"blocking in {where}", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            time.sleep(max(end - time.monotonic(), 0.0))
        except StopRequested:
            if not stubborn:
                raise


def main() -> None:
    install()
    where, seconds = sys.argv[1], float(sys.argv[2])
    if where == "import":
        try:
            block("import", seconds)
        except StopRequested as stop:  # what motor_ident.ros.entry_points.run does
            print(f"stopped by {stop} while starting", flush=True)
            return
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.common import run_node

    class SlowNode(Node):
        def __init__(self) -> None:
            super().__init__("slow_node")
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

        def destroy_node(self) -> None:
            if where.startswith("destroy"):
                block("destroy_node", seconds, stubborn=where == "destroy_stubborn")
            super().destroy_node()

    run_node(SlowNode, [sys.argv[0], *sys.argv[3:]])


if __name__ == "__main__":
    main()
