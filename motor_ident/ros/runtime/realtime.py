"""A 1 kHz node process's claim on its computer: real-time priority, locked memory, pinned CPUs.

`claim` applies a node's `motor_ident.scenario.nodes.RealtimeSettings` once its node is built
(`motor_ident.ros.runtime.common.run_node`, before the loop starts), as ros2_control's controller
manager does for its update loop:

- ``thread_priority`` > 0: every thread of the process then alive runs at SCHED_FIFO with that
  priority, the main thread (it spins the executor that runs the 1 kHz callbacks) and the
  middleware's threads (they receive each sample and wake the executor: at normal priority they
  would wait behind the computer's other work, and the loop with them). Threads started later
  inherit it from the thread that starts them. The stop listener runs one priority higher, and
  so do the watchdog and its C timer (`motor_ident.ros.runtime.shutdown`): a real-time thread that spins
  (a callback stuck in a loop) never gives its core to a thread of its own priority, and the
  watchdog must still end the process. The loop itself never spins: ``spin_once`` blocks with a
  timeout.
- ``lock_memory``: ``mlockall(MCL_CURRENT | MCL_FUTURE)``: no page of the process is swapped out or
  faulted in lazily while the loop runs.
- ``cpu_affinity``: every thread of the process runs only on those CPUs (``[-1]``: any), e.g. a core
  kept free of other work with ``isolcpus`` or a cpuset.

What the system does not permit is not an error: the node runs without it and says once what is
missing (``ulimit -r`` / ``rtprio``, CAP_SYS_NICE, ``ulimit -l`` / ``memlock`` in
/etc/security/limits.conf, ``LimitRTPRIO=`` / ``LimitMEMLOCK=`` for a systemd service). A CPU id the
process may not use is a configuration error. What a robot computer needs: docs/performance.md.

Only the standard library is used (``os``, ``ctypes``): Linux only; elsewhere each setting asked
for is reported as unavailable.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from motor_ident.errors import ConfigError
from motor_ident.ros.runtime import shutdown
from motor_ident.scenario.nodes import RealtimeSettings

MCL_CURRENT, MCL_FUTURE = 1, 2  # sys/mman.h
ANY_CPU = (-1,)
"""``cpu_affinity`` that leaves the process on every CPU it may use."""
PRIORITY_PERMISSION = (
    "allow it with `ulimit -r 99` (rtprio in /etc/security/limits.conf, LimitRTPRIO= for a systemd "
    "service) or the CAP_SYS_NICE capability"
)
MEMLOCK_PERMISSION = (
    "raise the locked-memory limit with `ulimit -l unlimited` (memlock in /etc/security/limits.conf, "
    "LimitMEMLOCK= for a systemd service) or grant CAP_IPC_LOCK"
)


def process_threads() -> list[int]:
    """The kernel ids of this process's threads (Linux: /proc/self/task)."""
    try:
        return sorted(int(name) for name in os.listdir("/proc/self/task"))
    except OSError:
        return [threading.get_native_id()]


def set_priority(priority: int) -> str:
    """SCHED_FIFO at ``priority`` (0: normal scheduling again) for every thread of the process,
    one priority higher for the stop listener; "" when done, else why not.

    The watchdog `motor_ident.ros.runtime.shutdown` starts later is raised above ``priority`` too."""
    if not hasattr(os, "sched_setscheduler"):
        return f"thread_priority = {priority}: no SCHED_FIFO on {sys.platform}: running at normal priority"
    stop = shutdown.installed()  # a node process's (a command measuring nodes has none)
    above = min(priority + 1, 99) if priority > 0 else 0
    if stop is not None:
        stop.watchdog_priority = above
    listener = {t.native_id for t in threading.enumerate() if t.name == shutdown.LISTENER_NAME}
    for tid in process_threads():
        own = above if tid in listener else priority
        policy, param = (os.SCHED_FIFO, os.sched_param(own)) if own > 0 else (os.SCHED_OTHER, os.sched_param(0))
        try:
            os.sched_setscheduler(tid, policy, param)
        except ProcessLookupError:  # the thread ended meanwhile
            continue
        except PermissionError:
            if stop is not None:
                stop.watchdog_priority = 0
            return (
                f"thread_priority = {priority}: SCHED_FIFO not permitted (no real-time priority limit, no "
                f"CAP_SYS_NICE): running at normal priority; {PRIORITY_PERMISSION}"
            )
    return ""


def lock_memory() -> str:
    """``mlockall(MCL_CURRENT | MCL_FUTURE)``; "" when done, else why not."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = int(libc.mlockall(MCL_CURRENT | MCL_FUTURE)) != 0
    except (OSError, AttributeError):
        return f"lock_memory: no mlockall on {sys.platform}: memory not locked"
    if failed:
        reason = os.strerror(ctypes.get_errno())
        return f"lock_memory: mlockall failed ({reason}): memory not locked; {MEMLOCK_PERMISSION}"
    return ""


def set_affinity(cpus: tuple[int, ...]) -> None:
    """Every thread of the process on ``cpus`` only (`ANY_CPU`: leave it as it is).

    Raises:
        ConfigError: ``-1`` among other ids, or a CPU this process may not use (naming those it may).
    """
    if tuple(cpus) == ANY_CPU:
        return
    allowed = os.sched_getaffinity(0)
    wanted = set(cpus)
    if -1 in wanted or not wanted <= allowed:
        raise ConfigError(
            f"cpu_affinity = {list(cpus)}: expected [-1] (any) or ids of CPUs this process may use: {sorted(allowed)}"
        )
    for tid in process_threads():
        try:
            os.sched_setaffinity(tid, wanted)
        except ProcessLookupError:
            continue


def requested(settings: RealtimeSettings | None) -> bool:
    """Whether ``settings`` ask for anything (a priority, locked memory or CPUs)."""
    return settings is not None and settings != RealtimeSettings()


def claim_for(node: object) -> list[str]:
    """`claim` with the real-time settings of ``node`` (its ``settings.realtime``), if it has them."""
    settings = getattr(getattr(node, "settings", None), "realtime", None)
    return claim(settings) if isinstance(settings, RealtimeSettings) else []


def claim(settings: RealtimeSettings) -> list[str]:
    """Apply ``settings`` to this process (affinity, locked memory, priority); the warnings for
    what the system did not permit, one line each.

    Raises:
        ConfigError: a ``cpu_affinity`` this process cannot have.
    """
    set_affinity(settings.cpu_affinity)
    warnings = [lock_memory()] if settings.lock_memory else []
    if settings.thread_priority > 0:
        warnings.append(set_priority(settings.thread_priority))
    return [warning for warning in warnings if warning]
