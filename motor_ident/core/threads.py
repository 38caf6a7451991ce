"""Process settings of the real-time path: BLAS / OpenMP thread pools capped to one thread, and
the objects built at start frozen out of the garbage collector's passes.

Every ``motor-ident`` command (`motor_ident.cli.main`) and every node process
(`motor_ident.ros.runtime.common.run_node`) calls `limit_blas_threads` once at start; a node process
calls `settle_heap` once its node is built (a managed node: after each configure).
"""

from __future__ import annotations

import gc
import os

# Environment variables that size the BLAS / OpenMP thread pools of libraries loaded later.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def limit_blas_threads() -> None:
    """Run numpy / scipy linear algebra on one thread in this process and the processes it starts.

    The matrices motor_ident factors are small (a regressor row block, a p x p normal matrix, a
    window of a few hundred rows, an SDP of a few bodies): a multi-threaded BLAS gains nothing
    there, and on a few cores shared with 1 kHz nodes its idle-spinning worker threads steal the
    cores. Pools already loaded are capped with threadpoolctl; the environment variables cap those
    loaded later (scipy's own OpenBLAS, cvxpy's solvers) and those of child processes.
    """
    from threadpoolctl import threadpool_limits  # optional dependency (comes with scikit-learn)

    for variable in THREAD_VARIABLES:
        os.environ[variable] = "1"
    threadpool_limits(limits=1)


def settle_heap() -> None:
    """Collect once, then freeze every object alive out of the garbage collector's passes.

    A node process holds ~90,000 objects once built (the robot model, pinocchio, rclpy, numpy,
    the modules); a full collection walks all of them: 50-110 ms of CPU for the feedforward
    process on this project's machine, i.e. 50-110 missed cycles at 1 kHz whenever Python
    decides to run one. Frozen (``gc.freeze``), they are never walked again and a full pass costs
    what was allocated since (well under a millisecond). Objects frozen are never freed by the
    cycle collector (plain reference counting still frees them): call this when the process's
    long-lived state is built, not per message.
    """
    gc.collect()
    gc.freeze()
