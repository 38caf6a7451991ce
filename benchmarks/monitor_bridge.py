"""What the monitor (Foxglove bridge) costs at a 1 kHz joint state rate, and its latency.

    ROS_DOMAIN_ID=17 .venv/bin/python benchmarks/monitor_bridge.py [--seconds 10] [--rate 1000]
    ROS_DOMAIN_ID=17 .venv/bin/python benchmarks/monitor_bridge.py --demo [--seconds 10]

This process publishes sensor_msgs/JointState from a wall timer, each stamped with the wall
clock, and a 4-value std_msgs/Float64MultiArray on effort_controller/commands with each (the
demo's two 1 kHz streams); the monitor runs as its own process (its entry point, serving /joint_states and the other
default topics); a Foxglove protocol client in this process subscribes and decodes each message.
Latency: the client's receive time minus the stamp (publish -> DDS -> monitor -> WebSocket ->
client, one machine). CPU: the monitor process's user + system time over the window, with no
client and with one client subscribed.

``--demo``: the monitor of ``motor-ident run valkyrie_arm --real-time --processes --monitor``
instead (the demo's nodes and rates: 1 kHz states and commands, the identifier's outputs at each
refit, /diagnostics); CPU as above and messages per second per topic (stamps are simulated time
there, so no latency).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.ros.monitor.foxglove_client import FoxgloveClient
from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS

PORT = 8797


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process [s] (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def demo(seconds: float) -> None:
    """CPU of the monitor process of a real-time demo run, without and with a client on every channel."""
    import signal
    import tempfile

    from motor_ident.scenario.monitor import MONITOR_TOPICS

    out = tempfile.mkdtemp(prefix="monitor_bench_")
    command = [str(Path(sys.executable).parent / "motor-ident"), "run", "valkyrie_arm", "--real-time", "--processes"]
    command += ["--monitor", "--monitor-port", str(PORT), "--duration", f"{3 * seconds + 60:g}", "--out-dir", out]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with FoxgloveClient(f"ws://127.0.0.1:{PORT}", timeout=120.0) as client:
            client.wait_for(list(MONITOR_TOPICS), 120.0)
            pid = next(
                int(p.name)
                for p in Path("/proc").iterdir()
                if p.name.isdigit()
                and any(a.endswith(b"/monitor") for a in (p / "cmdline").read_bytes().split(b"\0")[:2])
                and int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == run.pid
            )
            start = cpu_seconds(pid)
            time.sleep(seconds)
            idle = (cpu_seconds(pid) - start) / seconds
            topics = sorted(client.by_topic())
            client.subscribe(topics)
            counts = dict.fromkeys(topics, 0)
            start, begin = cpu_seconds(pid), time.monotonic()
            while time.monotonic() - begin < seconds:
                message = client.receive(0.1)
                if message is not None:
                    counts[message.topic] += 1
            busy = (cpu_seconds(pid) - start) / seconds
    finally:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
    print(f"real-time valkyrie_arm run, {seconds:g} s windows; monitor process CPU (share of one core):")
    print(f"  no client: {100 * idle:.1f} %   one client on every channel: {100 * busy:.1f} %")
    print("  messages/s to the client: " + ", ".join(f"{t} {n / seconds:.0f}" for t, n in counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--demo", action="store_true", help="the monitor of a real-time demo run instead")
    args = parser.parse_args()
    if args.demo:
        demo(args.seconds)
        return
    monitor = subprocess.Popen(
        [str(Path(sys.executable).parent / "monitor"), "--ros-args", "-p", f"port:={PORT}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rclpy.init()
    node = rclpy.create_node("monitor_bench_robot")
    pub = node.create_publisher(JointState, "joint_states", STATE_QOS)
    commands = node.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
    command = Float64MultiArray(data=[0.0] * 4)
    msg = JointState(name=["a", "b", "c", "d"], position=[0.0] * 4, velocity=[0.0] * 4, effort=[0.0] * 4)

    published = [0]

    def publish() -> None:
        published[0] += 1
        now = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        pub.publish(msg)
        commands.publish(command)

    node.create_timer(1.0 / args.rate, publish)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinning = threading.Event()
    spinning.set()
    thread = threading.Thread(target=lambda: [executor.spin_once(0.05) for _ in iter(spinning.is_set, False)])
    thread.start()
    try:
        with FoxgloveClient(f"ws://127.0.0.1:{PORT}", timeout=60.0) as client:
            client.wait_for(["/joint_states", "/effort_controller/commands"], 30.0)
            time.sleep(1.0)  # DDS matched, steady state
            start = cpu_seconds(monitor.pid)
            time.sleep(args.seconds)
            idle = (cpu_seconds(monitor.pid) - start) / args.seconds
            client.subscribe(["/joint_states", "/effort_controller/commands"])
            latencies = []
            start, begin, sent = cpu_seconds(monitor.pid), time.monotonic(), published[0]
            while time.monotonic() - begin < args.seconds:
                message = client.receive(0.1)
                if message is not None and message.topic == "/joint_states":
                    state = deserialize_message(message.data, JointState)
                    stamp = state.header.stamp.sec * 1_000_000_000 + state.header.stamp.nanosec
                    latencies.append((message.received_ns - stamp) * 1e-6)
            busy = (cpu_seconds(monitor.pid) - start) / args.seconds
            sent = published[0] - sent
    finally:
        spinning.clear()
        thread.join()
        monitor.send_signal(2)
        monitor.wait(timeout=10)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()
    lat = np.asarray(latencies)
    print(f"joint states + commands at {args.rate:g} Hz for {args.seconds:g} s; monitor CPU (share of one core):")
    print(f"  no client: {100 * idle:.1f} %   one client subscribed: {100 * busy:.1f} %")
    print(
        f"  joint states published {sent}, received by the client {lat.size}; latency stamp -> client "
        f"p50 {np.percentile(lat, 50):.2f} ms, p99 {np.percentile(lat, 99):.2f} ms, max {lat.max():.2f} ms"
    )


if __name__ == "__main__":
    main()
