"""Stop every shipped launch file with Ctrl-C, again and again, beside busy loops (the numbers in docs/faults.md).

Each round is one pytest session of ``tests/ros/test_launch_files.py::test_launch_runs_publishes_and_stops_cleanly``
(every launch case once: the nodes start, messages flow, SIGINT to launch's process group as a
terminal's Ctrl-C sends it, or to launch alone for some cases; every node must exit 0 before
launch escalates); ``--busy`` processes spin a core each meanwhile. At the end: runs, node
stops, the slowest node's exit after SIGINT, launch escalations (SIGTERM / SIGKILL) and failed runs.

    .venv/bin/python tools/stop_under_load.py --rounds 3 --busy 2
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEST = "tests/ros/test_launch_files.py::test_launch_runs_publishes_and_stops_cleanly"
MEASURED = re.compile(r"^(?P<case>[a-z_]+(?:-[a-z_]+)*): (?P<values>\{.*\})$", re.MULTILINE)
ESCALATION = re.compile(r"sending signal '(SIGTERM|SIGKILL)'")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="pytest sessions, each runs every launch case once")
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the runs")
    args = parser.parse_args()
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "FASTDDS_BUILTIN_TRANSPORTS": "SHM"}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    node_stops: list[tuple[float, str, str]] = []
    runs = failed = 0
    escalations: dict[str, int] = {"SIGTERM": 0, "SIGKILL": 0}
    try:
        for round_ in range(1, args.rounds + 1):
            session = subprocess.run(
                [sys.executable, "-m", "pytest", TEST, "-s", "-q", "-p", "no:cacheprovider"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
            )
            out = session.stdout
            measured = [(m["case"], ast.literal_eval(m["values"])) for m in MEASURED.finditer(out)]
            for case, values in measured:
                node_stops += [(seconds, node, case) for node, seconds in values["nodes_s"].items()]
            for signal_name in ESCALATION.findall(out):
                escalations[signal_name] += 1
            passed = re.search(r"(\d+) passed", out)
            failures = re.search(r"(\d+) failed", out)
            runs += int(passed[1]) if passed else 0
            runs += int(failures[1]) if failures else 0
            failed += int(failures[1]) if failures else 0
            slowest = max((s for s, _, _ in node_stops), default=float("nan"))
            print(
                f"round {round_}: {len(measured)} runs measured, {failures[1] if failures else 0} failed; "
                f"slowest node exit so far {slowest:.2f} s",
                flush=True,
            )
            if failures:
                print(out[-4000:], flush=True)
    finally:
        for process in busy:
            process.terminate()
            process.wait()
    worst = max(node_stops, default=(float("nan"), "-", "-"))
    print(f"runs: {runs} ({failed} failed), node stops: {len(node_stops)}, busy loops: {args.busy}")
    print(f"slowest node exit after SIGINT: {worst[0]:.2f} s ({worst[1]}, {worst[2]})")
    print(f"launch escalations: SIGTERM {escalations['SIGTERM']}, SIGKILL {escalations['SIGKILL']}")
    return 1 if failed or any(escalations.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
