"""Liu et al. 2023, Table 4 and eq. 21-22 beside ours: the rows of `motor_ident.papers.liu.reproduce`.

Table 4 is compared per joint on the plant with the drive loss switched off (mu = 0: the rows that
decide) and on (reported, labelled: the loss is a function chosen of the GMR's own inputs), and
loop 2 by OLS / WLS / GLS.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from motor_ident.papers.reproduction import row

PAPER_RMSE_WLS = (2.3376, 2.1278, 1.5395, 0.3361, 0.7101, 0.2578)  # Table 4 [N m]
PAPER_RMSE_OURS = (1.9594, 1.7345, 1.1609, 0.3027, 0.5852, 0.2096)  # Table 4 [N m]

# what the simulated arm leaves unmodelled, by drive loss setting (the GMR's inputs are [delta, delta_rate, qd])
MATCHED = (
    "drive loss on: mu |tau_j| tanh(v_m / v_s) with tau_j = K delta + D delta_rate and v_m = qd + delta_rate, a "
    "function CHOSEN of the GMR's own inputs"
)
UNMATCHED = (
    "drive loss off (mu = 0): what is left is rotor damping on v_m and rotor inertia on the deformation's "
    "acceleration (not a GMR input), not chosen to match the GMR"
)


def table4_rows(
    result: dict[str, Any], paper_reduction: list[float], *, matched: bool, required: bool
) -> list[dict[str, Any]]:
    """Table 4 beside ours per joint, on the plant with (``matched``) or without the drive loss."""
    rmse, joints = result["rmse"], result["joints"]
    label = "mu on, matched to GMR" if matched else "mu = 0"
    plant = MATCHED if matched else UNMATCHED
    rows = []
    for j, joint in enumerate(joints):
        fair = 100.0 * (1.0 - rmse["ours_gmr"][j] / rmse["wls_directional"][j])
        cap = 100.0 * (1.0 - result["torque_noise_std"] / rmse["wls_directional"][j])  # no model beats the noise
        paper = {"rmse_wls": PAPER_RMSE_WLS[j], "rmse_ours": PAPER_RMSE_OURS[j], "reduction_pct": paper_reduction[j]}
        rows.append(
            row(
                f"joint {j + 1} ({joint}), {label}: held-out RMSE, ours (GMR) vs plain WLS WITH the directional "
                "friction",
                "paper",
                paper=paper,
                ours={
                    "rmse_wls": float(rmse["wls_directional"][j]),
                    "rmse_ours": float(rmse["ours_gmr"][j]),
                    "reduction_pct": float(fair),
                },
                reproduced=bool(fair >= 20.0),
                required=required,
                criterion=f"{fair:.1f} % (needs >= 20 %, the paper's 'more than 20 %'; the "
                f"{result['torque_noise_std']:g} N m torque noise caps it at {cap:.0f} %"
                + ("" if required else "; reported: " + plant)
                + ")",
            )
        )
        if matched:
            plain = 100.0 * (1.0 - rmse["ours_gmr"][j] / rmse["wls"][j])
            rows.append(
                row(
                    f"joint {j + 1} ({joint}), {label}: held-out RMSE, ours (GMR) vs plain WLS with Coulomb + "
                    "viscous friction",
                    "paper",
                    paper=paper,
                    ours={
                        "rmse_wls": float(rmse["wls"][j]),
                        "rmse_ours": float(rmse["ours_gmr"][j]),
                        "reduction_pct": float(plain),
                    },
                    reproduced=bool(plain >= 20.0),
                    criterion=f"reported (a baseline without the plant's friction model): {plain:.1f} %",
                )
            )
    for j, joint in enumerate(joints):
        gmr, loops = float(rmse["ours_gmr"][j]), float(rmse["loops_1_2"][j])
        rbf = float(rmse["ours_rbf"][j]) if "ours_rbf" in rmse else None
        rows.append(
            row(
                f"joint {j + 1} ({joint}), {label}: held-out RMSE, GMR (loop 3) vs loops 1-2 alone",
                "ours",
                ours={"rmse_wls": loops, "rmse_ours": gmr, "reduction_pct": 100.0 * (1.0 - gmr / loops)},
                reproduced=gmr < loops,
                criterion=f"GMR {gmr:.4f} vs loops 1-2 {loops:.4f} N m (GMR lower: its own contribution; our "
                "ablation, the paper prints no such number)"
                + ("" if rbf is None else f"; RBF {rbf:.4f}")
                + ("" if required else "; reported: " + plant),
            )
        )
    return rows


def estimator_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Loops 1-2 with OLS, WLS (eq. 19-21) and GLS (eq. 21-22) in loop 2: held-out RMSE per joint."""
    rmse, joints = result["rmse"], result["joints"]
    omega = result["gls_noise_covariance"]
    std = np.sqrt(np.diag(omega))
    correlation = omega / np.outer(std, std)
    largest = float(np.max(np.abs(correlation - np.eye(std.size))))
    rows = []
    for j, joint in enumerate(joints):
        o, w, g = (float(rmse[f"loops_1_2_{m}"][j]) for m in ("ols", "wls", "gls"))
        rows.append(
            row(
                f"joint {j + 1} ({joint}): held-out RMSE of loops 1-2, loop 2 by WLS (eq. 21) vs GLS (eq. 22)",
                "paper",
                ours={"rmse_wls": w, "rmse_ours": g, "reduction_pct": 100.0 * (1.0 - g / w)},
                criterion=f"reported (the paper prints no number for eq. 22): OLS {o:.4f}, WLS {w:.4f}, GLS {g:.4f} "
                f"N m; residual std {std[j]:.3g} N m, largest cross-joint correlation {largest:.2f}",
            )
        )
    return rows
