"""Liu et al. 2023, eq. 11-16 and Table 2: the weighted block condition number against the plain one.

Table 2 prints the condition number of the regression matrix for a trajectory optimised by the
plain condition number (its row "WLS": 189.4) and by the block criterion of eq. 14 (its row
"Ours": 162.2). Both on the friction-free matrix Gamma* (section 3: "this paper uses an
observation matrix for exciting trajectory that does not have the frictional force part").

Why ``motor-ident excite --criterion block`` reported a higher condition number than
``--criterion cond`` (44.6 against 30.4): ``cond`` minimises the condition number of ALL base
columns, friction included, while ``block`` (as eq. 11-14) drops the friction columns; the number
``excite`` printed was the one over all columns, the very matrix ``cond`` had minimised. On the
same matrix the comparison is fair only when ``cond`` also drops the friction columns
(`ExcitationConfig.rigid_only`). Then ``cond`` minimises exactly the number Table 2 prints, and the
block criterion (a sum of that number and the blocks' own, eq. 14) can come out lower only where
the optimiser stops short of the minimum: Table 2's ordering is a property of the search
(Liu et al. use a pattern search with random restarts), not of the criteria. This module runs
all three designs with the same limits (Table 1), harmonics and budget, so the rows show which
of these holds for our optimiser.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.excitation.criteria import Criterion
from motor_ident.core.excitation.design import ExcitationConfig, ExcitationProblem
from motor_ident.core.excitation.limits import ExcitationLimits
from motor_ident.core.excitation.optimise import design_excitation
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.papers.reproduction import row

PAPER_TABLE2 = {"cond": 189.4012, "block": 162.2440}  # Table 2: "WLS" and "Ours"
# Table 1: joint ranges [deg] (+- about the centre), velocity limits [deg/s], acceleration limit [deg/s^2]
TABLE1_POSITION_DEG = (120.0, 90.0, 60.0, 120.0, 120.0, 120.0)
TABLE1_VELOCITY_DEG = (100.0, 60.0, 60.0, 80.0, 80.0, 80.0)
TABLE1_ACCELERATION_DEG = 120.0
# the three designs: name -> (criterion, rigid_only)
DESIGNS = {
    "cond": (Criterion.COND, False),  # what `motor-ident excite --criterion cond` minimises: all base columns
    "cond_rigid": (Criterion.COND, True),  # Table 2's "WLS": the friction-free matrix
    "block": (Criterion.BLOCK, False),  # Table 2's "Ours": eq. 14 (friction-free by construction)
}


@dataclass(frozen=True)
class Table2Settings:
    """The excitation designs' settings (the paper: 5 harmonics, 66 coefficients for 6 joints).

    Attributes:
        harmonics, base_frequency: the Fourier series (eq. 15) [-, Hz].
        samples: criterion samples per period.
        starts, max_iterations: random starts and SLSQP iterations of each start (the same for
            every criterion; ``motor-ident reproduce liu --starts`` sets ``starts``).
        block_weights: (w_alpha, w_beta, w_gamma) of eq. 14 (the paper gives no formula: 1, 1, 1).
    """

    harmonics: int = 5
    base_frequency: float = 0.1
    samples: int = 50
    starts: int = 4
    max_iterations: int = 40
    block_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)


def table1_limits(q_center: ArrayLike, *, velocity_cap: float = np.inf) -> ExcitationLimits:
    """Liu et al. 2023, Table 1 limits about ``q_center`` (n,) [rad], speeds at most ``velocity_cap`` [rad/s]."""
    centre = np.asarray(q_center, dtype=float)
    span = np.radians(TABLE1_POSITION_DEG)
    return ExcitationLimits(
        position_lower=centre - span,
        position_upper=centre + span,
        velocity=np.minimum(np.radians(TABLE1_VELOCITY_DEG), velocity_cap),
        acceleration=np.full(centre.size, np.radians(TABLE1_ACCELERATION_DEG)),
    )


def design_table2(
    regressor: Regressor, limits: ExcitationLimits, settings: Table2Settings, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """The three designs of `DESIGNS` under ``limits`` (`table1_limits`): trajectory, every criterion, CPU time.

    Returns ``{name: {"trajectory", "criteria" (`ExcitationProblem.all_criteria`), "cpu_s", "evaluations"}}``
    and, under ``"heldout"``, a random rest-to-rest trajectory (a `FourierTrajectory`) filling the same
    limits (seed + 1000).
    """
    base = structural_base_parameters(regressor)
    out: dict[str, Any] = {}
    for name, (criterion, rigid_only) in DESIGNS.items():
        cpu = time.process_time()
        problem = ExcitationProblem(
            regressor,
            base,
            limits,
            ExcitationConfig(
                criterion=criterion,
                harmonics=settings.harmonics,
                base_frequency=settings.base_frequency,
                samples=settings.samples,
                starts=settings.starts,
                seed=seed,
                max_iterations=settings.max_iterations,
                block_weights=settings.block_weights,
                rigid_only=rigid_only,
            ),
        )
        result = design_excitation(problem)
        out[name] = {
            "trajectory": result.trajectory,
            "criteria": problem.all_criteria(result.trajectory),
            "cpu_s": time.process_time() - cpu,
            "evaluations": result.evaluations,
        }
    out["heldout"] = problem.random_start(np.random.default_rng(seed + 1000), fill=1.0)
    return out


def table2_rows(designs: dict[str, dict[str, Any]], settings: Table2Settings) -> list[dict[str, Any]]:
    """Table 2 beside ours: the fair comparison (same matrix) and the two that are not."""
    paper = {
        "rmse_wls": PAPER_TABLE2["cond"],
        "rmse_ours": PAPER_TABLE2["block"],
        "reduction_pct": 100.0 * (1.0 - PAPER_TABLE2["block"] / PAPER_TABLE2["cond"]),
    }
    budget = (
        f"{settings.starts} starts x {settings.max_iterations} SLSQP iterations each, "
        f"{settings.harmonics} harmonics, Table 1 limits"
    )

    def ours(plain: str, key: str) -> dict[str, float]:
        c, b = designs[plain]["criteria"][key], designs["block"]["criteria"][key]
        return {"rmse_wls": c, "rmse_ours": b, "reduction_pct": 100.0 * (1.0 - b / c)}

    fair = ours("cond_rigid", "condition_number_rigid")
    lower = fair["rmse_ours"] < fair["rmse_wls"]
    return [
        row(
            "Table 2: cond of the friction-free regressor, cond-optimised ('WLS') vs block-optimised ('Ours')",
            "paper",
            paper=paper,
            ours=fair,
            reproduced=bool(lower),
            required=True,  # Table 2: "the condition number ... with the method used in this paper is the smallest"
            criterion=f"needs block < cond on the same matrix; {budget}; cond minimises this very number, so "
            + (
                "block's lower value is the cond search stopping short of its minimum"
                if lower
                else "block cannot beat it unless the search stops short"
            ),
        ),
        row(
            "Table 2 as `excite` compared it: all base columns (friction too), cond vs block",
            "paper",
            paper=paper,
            ours=ours("cond", "condition_number"),
            criterion="reported: cond minimised this matrix, block never saw its friction columns (why excite "
            "printed block above cond)",
        ),
        row(
            "Table 2, friction-free regressor, cond over ALL columns (excite's cond) vs block",
            "paper",
            paper=paper,
            ours=ours("cond", "condition_number_rigid"),
            criterion="reported: block wins here because cond optimised another matrix, not by its criterion",
        ),
    ]
