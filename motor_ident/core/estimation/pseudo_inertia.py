"""Pseudo-inertia matrices and the log-Cholesky parametrisation of one body's inertia."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


# ---------------------------------------------------------------------------------------------
# Pseudo-inertia and log-Cholesky parameters of one body
# ---------------------------------------------------------------------------------------------


def pseudo_inertia(phi: ArrayLike) -> FloatArray:
    """Pseudo-inertia J = [[0.5 tr(I) 1 - I, h], [h', m]] of inertial parameters.

    Args:
        phi: ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` about the joint frame
            [kg, kg m, kg m^2], shape (..., 10).

    Returns:
        J, shape (..., 4, 4) [kg m^2 | kg m | kg].
    """
    phi = np.asarray(phi, dtype=float)
    if phi.shape[-1:] != (10,):
        raise ConfigError(f"inertial parameters have shape {phi.shape}: expected (..., 10)")
    m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = np.moveaxis(phi, -1, 0)
    J = np.zeros((*phi.shape[:-1], 4, 4))
    half_trace = 0.5 * (ixx + iyy + izz)
    J[..., 0, 0] = half_trace - ixx
    J[..., 1, 1] = half_trace - iyy
    J[..., 2, 2] = half_trace - izz
    for (i, k), value in (((0, 1), -ixy), ((0, 2), -ixz), ((1, 2), -iyz), ((0, 3), mx), ((1, 3), my), ((2, 3), mz)):
        J[..., i, k] = J[..., k, i] = value
    J[..., 3, 3] = m
    return J


def inertial_from_pseudo_inertia(J: ArrayLike) -> FloatArray:
    """Inverse of `pseudo_inertia`: J (..., 4, 4) -> ``[m, mx, ..., Izz]`` (..., 10)."""
    J = np.asarray(J, dtype=float)
    sigma = J[..., :3, :3]
    trace = np.trace(sigma, axis1=-2, axis2=-1)
    inertia = trace[..., None, None] * np.eye(3) - sigma
    return np.stack(
        [
            J[..., 3, 3],
            J[..., 0, 3],
            J[..., 1, 3],
            J[..., 2, 3],
            inertia[..., 0, 0],
            inertia[..., 0, 1],
            inertia[..., 1, 1],
            inertia[..., 0, 2],
            inertia[..., 1, 2],
            inertia[..., 2, 2],
        ],
        axis=-1,
    )


"""E_k of shape (10, 4, 4) with ``pseudo_inertia(phi) = sum_k phi_k E_k`` (J is linear in phi)."""


def log_cholesky_to_inertial(eta: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Inertial parameters of log-Cholesky parameters, and the Jacobian (pinocchio).

    Args:
        eta: ``[alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3]``, shape (10,): J = U U' with
            U = exp(alpha) [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]],
            so m = exp(2 alpha) [kg] and the centre of mass is t [m].

    Returns:
        phi (10,) in pinocchio's order, and d phi / d eta (10, 10).
    """
    params = pin.LogCholeskyParameters(np.asarray(eta, dtype=float))
    return np.asarray(params.toDynamicParameters()), np.asarray(params.calculateJacobian())


def inertial_to_log_cholesky(phi: ArrayLike) -> FloatArray:
    """Log-Cholesky parameters (10,) of inertial parameters phi (10,) with a positive definite J.

    J = U U' with U upper triangular is the lower Cholesky factor of J with rows and columns
    reversed. Pinocchio has the forward map only; this is its inverse (round trip tested).

    Raises:
        EstimationError: the pseudo-inertia is not positive definite.
    """
    J = pseudo_inertia(phi)
    try:
        L = np.linalg.cholesky(J[::-1, ::-1])
    except np.linalg.LinAlgError:
        raise EstimationError(
            f"pseudo-inertia of {np.round(np.asarray(phi, dtype=float), 6).tolist()} is not positive definite "
            f"(smallest eigenvalue {np.linalg.eigvalsh(J)[0]:.3g}): no log-Cholesky parameters exist"
        ) from None
    U = L[::-1, ::-1]
    scale = U[3, 3]
    d = np.log(np.diag(U)[:3] / scale)
    return np.array(
        [np.log(scale), *d, U[0, 1] / scale, U[1, 2] / scale, U[0, 2] / scale, *(U[:3, 3] / scale)], dtype=float
    )
