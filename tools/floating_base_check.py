"""Check floating-base identification against the simulator's truth (the numbers in docs/floating-base.md).

Per seed s: simulate the robot standing (``synth --floating-base``'s simulator, masses drawn with
``mass_seed = s``), a training recording (seed s) and a held-out one (seed s + 100) of ``--duration``
seconds, with the default sensor noise; then, as ``identify --floating-base`` does: ``wls`` with the
IMU's orientation trusted, ``wls`` and ``sdp`` (``--alpha 0.9``) with the base tilt estimated, the
same two with the orientation noise's bias taken off their mass and CoM (``wls_simex``, ``sdp_simex``:
`motor_ident.core.floating_base.errors_in_variables`, the default of ``identify``), and the exported
links (``--urdf-out``). Prints one JSON line per seed: CoM and total-mass errors
against the truth with their std and 95 % coverage, the URDF's, the per-link mass errors of the
export and of the URDF, and the held-out wrench NRMSE on the reconstructed states (as the tool
sees them) and on the true ones (the simulator's noise-free record with its base pose), then a
summary over the seeds.

    .venv/bin/python tools/floating_base_check.py icub 0 1 2 3 4 --duration 12
    .venv/bin/python tools/floating_base_check.py romeo 0 1 2 3 4 --plant rigid --noise-off orientation_noise

``--plant rigid`` computes the robot with pinocchio alone (`motor_ident.sim.rigid_humanoid`);
``--noise-off`` zeroes sensor errors one at a time to find which one moves an estimate.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from motor_ident.core.threads import limit_blas_threads
from motor_ident.schema import specs
from motor_ident.sim.humanoid_common import PLANTS, HumanoidSimConfig


def check_seed(
    robot: str, seed: int, duration: float, plant: str = "mujoco", noise_off: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Simulate, identify and compare one seed (module docstring)."""
    from motor_ident.commands.floating_base import orientation_corrected, record_samples
    from motor_ident.core.floating_base.errors_in_variables import corrected_identification
    from motor_ident.core.floating_base.export import link_lengths, nearest_links
    from motor_ident.core.floating_base.identification import (
        centre_of_mass,
        floating_constraints,
        identify_floating_base,
        nominal_mass_and_com,
        structural_base_parameters,
        worse_than_nominal,
    )
    from motor_ident.core.floating_base.model import FloatingBaseRegressor
    from motor_ident.core.floating_base.validation import heldout_wrench
    from motor_ident.errors import EstimationError
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.standing import simulate_standing

    config = load_robot_config(robot)
    assert config.floating_base is not None, f"robot {robot!r} has no floating_base section"
    start = time.perf_counter()
    train, test = (
        simulate_standing(
            config,
            HumanoidSimConfig(
                plant=plant, duration=duration, seed=s, mass_seed=seed, **{name: 0.0 for name in noise_off}
            ),
        )
        for s in (seed, seed + 100)
    )
    out: dict[str, Any] = {"robot": robot, "plant": plant, "seed": seed, "noise_off": list(noise_off)}
    out["simulation_s"] = time.perf_counter() - start
    regressor = FloatingBaseRegressor(config.build_floating_base())
    theta0, theta_true = regressor.floating.inertial_parameters(), train.theta_true
    samples = record_samples(regressor, config, train.record)
    soles = config.floating_base.sole_frames
    supports = [tuple(soles[c] for c in feet) for feet in samples.supports()]
    base = structural_base_parameters(regressor, "base", supports=supports, standing=samples.Q[0])
    held, held_true = record_samples(regressor, config, test.record), record_samples(regressor, config, test.clean)
    com_true = centre_of_mass(regressor, samples.Q[0], base, np.eye(base.n_base), theta_true).value
    mass_true = float(theta_true[0::10].sum())
    spread = config.floating_base.urdf_mass_uncertainty
    urdf_mass, urdf_com = nominal_mass_and_com(regressor, samples.Q[0], theta0, relative_spread=spread)

    def link_errors(masses: np.ndarray) -> dict[str, float]:
        relative = np.abs(masses / theta_true[0::10] - 1.0)
        return {"median": float(np.median(relative)), "max": float(relative.max())}

    def heldout(theta: np.ndarray) -> dict[str, Any]:
        scores = {}
        for label, s in (("tool", held), ("true", held_true)):
            h = heldout_wrench(regressor, base, theta, theta0, s.Q, s.V, s.A, s.F)
            scores[label] = {k: getattr(h, k).nrmse.tolist() for k in ("identified", "determined", "nominal", "floor")}
        return scores

    out["urdf"] = {
        "com_error_mm": (1000 * (urdf_com.value - com_true)).tolist(),
        "com_std_mm": (1000 * urdf_com.std).tolist(),
        "mass_error_g": 1000 * (float(urdf_mass.value) - mass_true),
        "link_mass_error": link_errors(theta0[0::10]),
    }
    wls = None
    variants = (("wls_trusted", "wls", False), ("wls", "wls", True), ("sdp", "sdp", True))
    correction, fits = None, {}
    simulated_noise = HumanoidSimConfig().orientation_noise
    for name, method, tilt in (*variants, ("wls_simex", "wls", True), ("sdp_simex", "sdp", True)):
        start = time.perf_counter()
        result = fits.get(name.removesuffix("_simex")) or identify_floating_base(
            regressor, samples.Q, samples.V, samples.A, samples.F, method=method, base=base,
            alpha=0.9 if method == "sdp" else 1.0, estimate_tilt=tilt,
        )  # fmt: skip
        fits[name] = result
        if name.endswith("_simex"):  # the orientation-noise correction, computed once (its refits are WLS)
            if correction is None:
                simex_start = time.perf_counter()
                result, correction = orientation_corrected(regressor, config, train.record, samples, result)
                out["simex"] = {
                    "noise_mrad": (1000 * correction.noise).tolist(),
                    "noise_simulated_mrad": 0.0 if "orientation_noise" in noise_off else 1000 * simulated_noise,
                    "correction_mm_g": [1000 * x for x in correction.correction],
                    "correction_std_mm_g": [1000 * x for x in correction.std],
                    "extrapolant_difference_mm_g": [1000 * x for x in correction.extrapolant_difference],
                    "means_mm_g": (1000 * correction.means).tolist(),
                    "simex_s": time.perf_counter() - simex_start,
                }
            else:
                result = corrected_identification(result, correction)
        error = result.com.value - com_true
        out[name] = {
            "fit_s": time.perf_counter() - start,
            "com_error_mm": (1000 * error).tolist(),
            "com_std_mm": (1000 * result.com.std).tolist(),
            "com_covered": (np.abs(error) <= 1.96 * result.com.std).tolist(),
            "mass_error_g": 1000 * (float(result.mass.value) - mass_true),
            "mass_std_g": 1000 * float(result.mass.std),
            "tilt_mrad": None if result.tilt is None else (1000 * result.tilt.value).tolist(),
            "prefer_urdf_com": worse_than_nominal(result.com, urdf_com).tolist(),
            "link_mass_error": link_errors(result.theta[0::10]),
            "negative_masses": int(np.sum(result.theta[0::10] < 0.0)),
            "heldout": None if name.endswith("_simex") else heldout(result.theta),  # the same parameters
        }
        wls = result if name == "wls" else wls
    assert wls is not None
    start = time.perf_counter()
    try:
        near = nearest_links(
            floating_constraints(regressor),
            base.projection,
            wls.unconstrained,
            wls.covariance_at_least_white(),
            theta0,
            lengths=link_lengths(regressor.floating),
            relative_spread=spread,
        )
    except EstimationError as exc:  # e.g. a covariance of noise-free wrenches (--noise-off)
        out["export"] = {"error": str(exc)}
        return out
    closer = np.abs(near.mass - theta_true[0::10]) < np.abs(theta0[0::10] - theta_true[0::10])
    out["export"] = {
        "solve_s": time.perf_counter() - start,
        "widened": near.widened,
        "link_mass_error": link_errors(near.mass),
        "closer_than_urdf": int(closer.sum()),
        "links": int(closer.size),
        "smallest_mass": float(near.mass.min()),
        "mass_drift_g": 1000 * (float(near.mass.sum()) - float(wls.mass.value)),
        "heldout": heldout(near.theta),
    }
    return out


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the seeds: coverage counts, error ranges, and how the held-out metrics rank wls and sdp."""
    out: dict[str, Any] = {"seeds": len(results)}
    for name in ("wls_trusted", "wls", "sdp", "wls_simex", "sdp_simex"):
        rows = [r[name] for r in results]
        out[name] = {
            "com_covered": np.sum([r["com_covered"] for r in rows], axis=0).tolist(),
            "com_z_error_mm": [min(r["com_error_mm"][2] for r in rows), max(r["com_error_mm"][2] for r in rows)],
            "com_z_std_mm": [min(r["com_std_mm"][2] for r in rows), max(r["com_std_mm"][2] for r in rows)],
            "com_xy_error_mm_max": max(max(abs(x) for x in r["com_error_mm"][:2]) for r in rows),
            "link_mass_error_median": [r["link_mass_error"]["median"] for r in rows],
        }
    for metric in ("identified", "determined"):
        for label in ("tool", "true"):
            sdp_wins = sum(
                np.mean(r["sdp"]["heldout"][label][metric]) < np.mean(r["wls"]["heldout"][label][metric])
                for r in results
            )
            out[f"sdp_beats_wls_{metric}_{label}"] = int(sdp_wins)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robot", help="a robot config with a floating_base section (icub, talos)")
    parser.add_argument("seeds", nargs="+", type=int)
    parser.add_argument("--duration", type=float, default=12.0, help="seconds per recording")
    parser.add_argument(
        "--plant", choices=PLANTS, default="mujoco", help="the simulator (HumanoidSimConfig.plant; default mujoco)"
    )
    parser.add_argument(
        "--noise-off",
        nargs="+",
        default=[],
        choices=[name for name in specs(HumanoidSimConfig) if name.endswith(("_noise", "_bias"))],
        metavar="SETTING",
        help="sensor noise or bias settings of HumanoidSimConfig set to 0 (e.g. orientation_noise)",
    )
    args = parser.parse_args()
    limit_blas_threads()
    results = []
    for seed in args.seeds:
        results.append(check_seed(args.robot, seed, args.duration, args.plant, tuple(args.noise_off)))
        print(json.dumps(results[-1]), flush=True)
    print(json.dumps({"summary": summary(results)}))


if __name__ == "__main__":
    main()
