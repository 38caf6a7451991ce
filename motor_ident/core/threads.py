"""BLAS / OpenMP thread pools of this process and the processes it starts, capped to one thread.

Every ``motor-ident`` command (`motor_ident.cli.main`) and every node process
(`motor_ident.ros.common.run_node`) calls `limit_blas_threads` once at start.
"""

from __future__ import annotations

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
