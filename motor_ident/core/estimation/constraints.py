"""Physical-validity constraints on inertial parameters and their violations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionKind
from motor_ident.core.estimation.pseudo_inertia import pseudo_inertia
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
"""Cap on the log-Cholesky solver's evaluations. Rich data converge well within it (valkyrie_arm,
30 s: ~2 s); on poor data the solver crawls along nearly degenerate bodies, and scipy's default
(100 per variable, ~7400) took 14 s for no better held-out torque (1.09 N m vs 0.93 at the cap)."""

_NONNEGATIVE_FRICTION: dict[FrictionKind, tuple[str, ...]] = {
    FrictionKind.NONE: (),
    FrictionKind.COULOMB_VISCOUS: ("fc", "fv"),
    FrictionKind.STRIBECK: ("fc", "fv", "static_pos", "static_neg"),
    FrictionKind.ARCTAN: ("tau_s", "tau_v"),
    FrictionKind.DIRECTIONAL: ("kc_pos", "kc_neg"),
}


# ---------------------------------------------------------------------------------------------
# The constraint set of a robot
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PhysicalConstraints:
    """What a physically valid full parameter vector theta (p,) of a `Regressor` satisfies.

    Attributes:
        names: names of the p parameters.
        body_names: one per body, length b (= joints).
        inertial: slice of the 10 b inertial parameters in theta (body k at 10 k .. 10 k + 10).
        nonnegative: indices of theta constrained >= 0 (reflected inertias, friction by sign).
        mass_bounds: (b, 2) lower and upper mass per body [kg]; 0 and inf when unbounded.
        com_lower, com_upper: (b, 3) box of each centre of mass in its joint frame [m]; +-inf
            when unbounded.
    """

    names: tuple[str, ...]
    body_names: tuple[str, ...]
    inertial: slice
    nonnegative: IntArray
    mass_bounds: FloatArray
    com_lower: FloatArray
    com_upper: FloatArray

    @property
    def n_bodies(self) -> int:
        """Number of bodies b."""
        return len(self.body_names)

    @property
    def n_parameters(self) -> int:
        """Length p of theta."""
        return len(self.names)

    def body_parameters(self, theta: ArrayLike) -> FloatArray:
        """Inertial parameters per body, shape (b, 10), of a full theta (p,)."""
        theta = np.asarray(theta, dtype=float)
        return theta[self.inertial].reshape(self.n_bodies, 10)


def physical_constraints(
    regressor: Regressor,
    *,
    mass_bounds: Sequence[tuple[float, float]] | None = None,
    com_boxes: Sequence[tuple[ArrayLike, ArrayLike]] | None = None,
) -> PhysicalConstraints:
    """The physical constraints of a regressor's full parameter vector.

    Args:
        regressor: defines the layout (``layout.inertial``, ``.reflected_inertia``, ``.friction``).
        mass_bounds: per body (lower, upper) [kg]; None = [0, inf).
        com_boxes: per body (lower (3,), upper (3,)) for the centre of mass in the joint frame [m];
            None = unbounded.

    Raises:
        ConfigError: wrong number of bounds, or a lower bound above its upper bound.
    """
    layout = regressor.layout
    bodies = tuple(regressor.robot.body_names)
    b = len(bodies)
    nonnegative = list(range(layout.reflected_inertia.start, layout.reflected_inertia.stop))
    for shape, cols in zip(regressor.friction, layout.friction):
        signed = _NONNEGATIVE_FRICTION[shape.kind]
        nonnegative += [cols.start + k for k, name in enumerate(shape.names) if name in signed]
    nonnegative += list(range(layout.motor_inertia.start, layout.motor_inertia.stop))
    if regressor.motor_drives is not None:
        for shape, cols in zip(regressor.motor_drives.friction, layout.motor_friction):
            signed = _NONNEGATIVE_FRICTION[shape.kind]
            nonnegative += [cols.start + k for k, name in enumerate(shape.names) if name in signed]
    masses = np.tile([0.0, np.inf], (b, 1))
    if mass_bounds is not None:
        if len(mass_bounds) != b:
            raise ConfigError(f"mass_bounds: {len(mass_bounds)} pairs for {b} bodies {list(bodies)}")
        masses = np.array(mass_bounds, dtype=float).reshape(b, 2)
        bad = np.flatnonzero(~(masses[:, 0] <= masses[:, 1]) | (masses[:, 0] < 0.0))
        if bad.size:
            k = int(bad[0])
            raise ConfigError(f"mass_bounds of {bodies[k]} = {masses[k].tolist()}: expected 0 <= lower <= upper [kg]")
    lower, upper = np.full((b, 3), -np.inf), np.full((b, 3), np.inf)
    if com_boxes is not None:
        if len(com_boxes) != b:
            raise ConfigError(f"com_boxes: {len(com_boxes)} boxes for {b} bodies {list(bodies)}")
        for k, (lo, hi) in enumerate(com_boxes):
            lower[k], upper[k] = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
            if not np.all(lower[k] <= upper[k]):
                raise ConfigError(
                    f"com_boxes of {bodies[k]}: lower {lower[k].tolist()} is not below upper {upper[k].tolist()} [m]"
                )
    return PhysicalConstraints(
        names=tuple(regressor.names),
        body_names=bodies,
        inertial=layout.inertial,
        nonnegative=np.asarray(sorted(nonnegative), dtype=np.int64),
        mass_bounds=masses,
        com_lower=lower,
        com_upper=upper,
    )


def boxes_around(
    constraints: PhysicalConstraints, theta_nominal: ArrayLike, *, mass_factor: float = 2.0, com_margin: float = 0.1
) -> PhysicalConstraints:
    """The same constraints with bounds around a nominal model.

    Each mass lies in [m_0 / mass_factor, m_0 mass_factor] and each centre of mass within
    ``com_margin`` [m] of the nominal one, per axis (bodies of nominal mass 0 stay unbounded).
    """
    if not mass_factor >= 1.0 or not com_margin >= 0.0:
        raise ConfigError(f"mass_factor = {mass_factor!r}, com_margin = {com_margin!r}: expected >= 1 and >= 0")
    phi = constraints.body_parameters(theta_nominal)
    m = phi[:, 0]
    has_mass = m > 0.0
    com = np.where(has_mass[:, None], phi[:, 1:4] / np.where(has_mass, m, 1.0)[:, None], 0.0)
    masses = np.where(has_mass[:, None], np.stack([m / mass_factor, m * mass_factor], axis=1), [0.0, np.inf])
    lower = np.where(has_mass[:, None], com - com_margin, -np.inf)
    upper = np.where(has_mass[:, None], com + com_margin, np.inf)
    return replace(constraints, mass_bounds=masses, com_lower=lower, com_upper=upper)


def violations(theta: ArrayLike, constraints: PhysicalConstraints, *, tolerance: float = 1e-9) -> list[str]:
    """Every physical constraint a full parameter vector violates, as readable messages.

    O(b) 4 x 4 eigenvalue problems plus sign and bound checks: cheap enough for every refit.

    Args:
        theta: full parameters (p,).
        constraints: from `physical_constraints`.
        tolerance: slack [SI units of each quantity] below which a violation is ignored.

    Returns:
        Messages such as ``link upper_arm_link: pseudo-inertia has eigenvalue -0.03``; empty when valid.
    """
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (constraints.n_parameters,):
        raise ConfigError(f"theta has shape {theta.shape}: expected ({constraints.n_parameters},)")
    out: list[str] = []
    phi = constraints.body_parameters(theta)
    eig = np.linalg.eigvalsh(pseudo_inertia(phi))[:, 0]
    for k, body in enumerate(constraints.body_names):
        m = phi[k, 0]
        if eig[k] < -tolerance:
            out.append(f"link {body}: pseudo-inertia has eigenvalue {eig[k]:.3g}")
        lo, hi = constraints.mass_bounds[k]
        if m < lo - tolerance or m > hi + tolerance:
            out.append(f"link {body}: mass {m:.4g} kg outside [{lo:.4g}, {hi:.4g}]")
        if m > 0.0 and (np.isfinite(constraints.com_lower[k]).any() or np.isfinite(constraints.com_upper[k]).any()):
            com = phi[k, 1:4] / m
            outside = (com < constraints.com_lower[k] - tolerance) | (com > constraints.com_upper[k] + tolerance)
            if outside.any():
                out.append(f"link {body}: centre of mass {np.round(com, 4).tolist()} m outside its box")
    for i in constraints.nonnegative:
        if theta[i] < -tolerance:
            out.append(f"{constraints.names[i]} = {theta[i]:.3g} < 0")
    return out


def min_pseudo_inertia_eigenvalues(theta: ArrayLike, constraints: PhysicalConstraints) -> FloatArray:
    """Smallest eigenvalue of each body's pseudo-inertia, shape (b,) (>= 0 for a physical body)."""
    eigenvalues = np.linalg.eigvalsh(pseudo_inertia(constraints.body_parameters(theta)))[:, 0]
    return eigenvalues.astype(float)


def _unit_bodies(constraints: PhysicalConstraints) -> FloatArray:
    """A valid start without a nominal model: 1 kg bodies with 0.01 kg m^2 inertia at the origin."""
    theta = np.zeros(constraints.n_parameters)
    theta[constraints.inertial] = np.tile([1.0, 0, 0, 0, 0.01, 0, 0.01, 0, 0, 0.01], constraints.n_bodies)
    return theta
