"""``identify --floating-base`` and ``synth --floating-base``: a robot standing on its feet.

The robot config needs a ``floating_base:`` section (`motor_ident.io.floating_base_config`); the
recording is a `motor_ident.io.floating_record` NPZ (joint encoders, base IMU, a wrench per foot).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from motor_ident.commands.common import floats, write_json


def cmd_synth_floating(args: argparse.Namespace) -> int:
    """Simulate the robot standing and balancing (MuJoCo, or pinocchio alone with ``--plant rigid``); write the
    record and the truth."""
    from pathlib import Path

    from motor_ident.errors import ConfigError
    from motor_ident.io.bags.floating import write_floating_bag
    from motor_ident.io.floating_record import save_floating_record
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.humanoid_common import HumanoidSimConfig
    from motor_ident.sim.standing import simulate_standing

    suffix = Path(args.out).suffix.lower()
    if suffix not in ("", ".npz"):
        raise ConfigError(
            f"--out {args.out}: expected an .npz file or a bag directory (no suffix) with --floating-base"
        )
    config = load_robot_config(args.robot)
    sim = HumanoidSimConfig(
        plant=args.plant,
        duration=args.duration,
        rate_hz=args.rate or 1000.0,
        seed=args.seed,
        mass_seed=args.mass_seed,
        single_support_phases=args.single_support,
    )
    run = simulate_standing(config, sim)
    if suffix:
        save_floating_record(args.out, run.record)
    else:  # what the robot's drivers publish: `motor-ident play` replays it to the floating_identifier node
        fb = config.floating_base
        assert fb is not None  # simulate_standing refused a config without one
        write_floating_bag(args.out, run.record, sensor_frames=fb.sensor_frames, imu_frame=fb.imu_frame)
    floating = config.build_floating_base()
    mass_true, mass_nominal = float(run.theta_true[0::10].sum()), floating.total_mass
    print(
        f"{run.record.t.size} samples of {config.name} standing ({sim.rate_hz:g} Hz, {sim.plant} plant) written to "
        f"{args.out}; "
        f"true mass {mass_true:.3f} kg (URDF {mass_nominal:.3f} kg)"
    )
    cone = run.friction
    fb = config.floating_base
    assert fb is not None
    print(
        f"contact check (soles {'welded' if sim.plant == 'mujoco' else 'fixed'} in the simulation; would real feet "
        "hold the same wrenches?): "
        f"{100 * cone['inside_friction_cone']:.1f} % of samples inside the friction cone "
        f"(mu = {fb.friction_coefficient:g}), smallest normal force {cone['min_normal_force']:.1f} N"
        + (
            f", CoP at least {1000 * cone['cop_margin']:.0f} mm inside the sole {100 * cone['cop_inside_sole']:.1f} %, "
            f"both {100 * cone['holdable']:.1f} % (not counting feet under 5 % of the load: "
            f"{100 * cone['holdable_loaded']:.1f} %)"
            if "cop_inside_sole" in cone
            else " (no foot_size in the config: the centre of pressure is not checked)"
        )
    )
    write_json(
        args.json,
        {
            "robot": config.name,
            "out": str(args.out),
            "n_samples": int(run.record.t.size),
            "seed": args.seed,
            "mass_seed": args.mass_seed,
            "plant": sim.plant,
            "true_total_mass": mass_true,
            "nominal_total_mass": mass_nominal,
            "bodies": list(floating.body_names),
            "true_masses": floats(run.theta_true[0::10]),
            "nominal_masses": floats(floating.inertial_parameters()[0::10]),
            "theta_true": floats(run.theta_true),
            "contact_check": cone,
            "single_support_phases": sim.single_support_phases,
            "lifted_fraction": floats(1.0 - run.contact.mean(axis=0)),
        },
    )
    return 0


def _record(config: Any, path: str, args: argparse.Namespace) -> Any:
    """A floating-base recording, NPZ or bag (`motor_ident.io.floating_record.FloatingBaseRecord`)."""
    from motor_ident.commands.data_options import is_bag
    from motor_ident.io.bags.floating import read_floating_bag
    from motor_ident.io.floating_record import load_floating_record

    if is_bag(path):
        given = dict(item.split("=", 1) for item in args.foot_wrench_topic)
        return read_floating_bag(
            path,
            joints=config.joints,
            imu_topic=args.imu_topic,
            wrench_topics={c.name: given.get(c.name, f"/{c.name}/wrench") for c in config.floating_base.contacts},
            joint_states_topic=args.joint_states_topic,
        )
    return load_floating_record(path)


def record_samples(regressor: Any, config: Any, record: Any, *, rows: str = "base", source: str = "the record") -> Any:
    """Regressor samples of a `motor_ident.io.floating_record.FloatingBaseRecord` (joints reordered to the
    config's; ``source`` names it in errors).

    Raises:
        DataError: a joint or contact of the config is missing, or ``rows = "all"`` without joint torques.
    """
    from motor_ident.core.floating_base.samples import floating_samples
    from motor_ident.errors import DataError

    missing = [j for j in config.joints if j not in record.joint_names]
    if missing:
        raise DataError(f"{source}: joints {missing} of robot {config.name!r} are not in the recording")
    order = [record.joint_names.index(j) for j in config.joints]
    contacts = [c.name for c in config.floating_base.contacts]
    if list(record.contact_names) != contacts:
        raise DataError(f"{source}: contacts {list(record.contact_names)}; robot {config.name!r} has {contacts}")
    if rows == "all" and record.tau is None:
        raise DataError(f"{source} holds no joint torques: identify from the base rows (--rows base)")
    return floating_samples(
        regressor,
        record.t,
        record.q[:, order],
        record.imu_quaternion,
        record.imu_gyro,
        record.wrench,
        imu_frame=config.floating_base.imu_frame,
        sole_frames=config.floating_base.sole_frames,
        tau=None if record.tau is None else record.tau[:, order],
        base_position=record.base_position,
    )


def orientation_corrected(regressor: Any, config: Any, record: Any, samples: Any, result: Any) -> tuple[Any, Any]:
    """``result`` with the IMU's orientation noise taken out of its mass and CoM (SIMEX:
    `motor_ident.core.floating_base.errors_in_variables`): refits on ``record`` with more orientation noise,
    each through `record_samples` as ``samples`` were made. Returns the corrected result and the correction."""
    from dataclasses import replace

    from motor_ident.core.floating_base.errors_in_variables import (
        corrected_identification,
        mass_and_com,
        simex_correction,
    )

    theta0 = regressor.floating.inertial_parameters()

    def estimate(quaternion: np.ndarray) -> np.ndarray:
        noisier = record_samples(regressor, config, replace(record, imu_quaternion=quaternion), rows=result.rows)
        return mass_and_com(regressor, result, noisier, samples.Q[0], theta0)

    naive = mass_and_com(regressor, result, samples, samples.Q[0], theta0)
    correction = simex_correction(estimate, record.t, record.imu_quaternion, record.imu_gyro, naive)
    return corrected_identification(result, correction), correction


def _foot_first_moments(floating: Any, base: Any, soles: tuple[str, ...]) -> dict[str, str]:
    """Per sole's body: how the data determine its first moments (``alone``, ``combination``, ``no``) per axis."""
    model = floating.model
    words = {"identifiable": "alone", "combination": "combination", "unidentifiable": "no"}
    classes = base.classes()
    out = {}
    for sole in soles:
        joint = model.names[model.frames[model.getFrameId(sole)].parentJoint]
        body = floating.body_names[0 if joint == "root_joint" else 1 + floating.robot.joint_names.index(joint)]
        k = floating.body_names.index(body)
        out[body] = ", ".join(words[classes[10 * k + i]] for i in (1, 2, 3))
    return out


def _wrench_validation(
    regressor: Any, base: Any, theta: np.ndarray, theta_nominal: np.ndarray, samples: Any, path: str
) -> dict[str, Any]:
    """Held-out total contact wrench (`motor_ident.core.floating_base.validation`): printed, and its JSON."""
    from motor_ident.core.floating_base.validation import heldout_wrench

    held = heldout_wrench(regressor, base, theta, theta_nominal, samples.Q, samples.V, samples.A, samples.F)
    mean = {
        name: float(np.mean(getattr(held, name).nrmse)) for name in ("identified", "determined", "nominal", "floor")
    }
    print(
        f"validation on {path} ({held.n_samples} samples, base motion reconstructed as in training): total contact "
        f"wrench NRMSE (mean of fx fy fz tx ty tz) identified {mean['identified']:.4f} (its base parameters, the "
        f"rest the URDF's: {mean['determined']:.4f}), nominal {mean['nominal']:.4f}"
    )
    print(
        f"  of which the states and sensors (the base parameters refitted on these samples): {mean['floor']:.4f}; "
        f"the parameters' share above it: identified {np.mean(held.parameter_nrmse):.4f}, "
        f"nominal {np.mean(held.nominal_parameter_nrmse):.4f}"
    )
    return held.summary()


def _write_urdf(path: str, config: Any, regressor: Any, result: Any) -> dict[str, Any]:
    """``--urdf-out``: the physically valid links nearest to the URDF's that reproduce the identified base
    parameters within their 95 % region (`motor_ident.core.floating_base.export`), whatever the method;
    prints the per-link table and returns the JSON summary."""
    from motor_ident.core.floating_base.export import METRIC, link_lengths, nearest_links
    from motor_ident.core.floating_base.identification import floating_constraints
    from motor_ident.io.floating_urdf import export_floating_urdf

    floating = regressor.floating
    near = nearest_links(
        floating_constraints(regressor),
        result.base.projection,
        result.unconstrained,
        result.covariance_at_least_white(),
        floating.inertial_parameters(),
        lengths=link_lengths(floating),
        relative_spread=config.floating_base.urdf_mass_uncertainty,
    )
    print(f"URDF links: the physically valid set nearest to the nominal URDF ({METRIC}: {near.distance:.4g})")
    print(
        f"  its base parameters are {near.mahalanobis:.3g} standard units from the identified ones "
        f"(95 % region: {near.radius:.3g})"
    )
    print(f"  {'link':<24}{'nominal kg':>12}{'exported kg':>13}{'+- std':>9}{'CoM shift mm':>14}  the data")
    for row in zip(floating.body_names, near.mass_nominal, near.mass, near.mass_std, near.com_shift, near.mass_class):
        print("  {:<24}{:12.4g}{:13.4g}{:9.2g}{:14.4g}  {}".format(*row[:4], 1e3 * row[4], row[5]))
    print(f"  {'total':<24}{near.mass_nominal.sum():12.4g}{near.mass.sum():13.4g}")
    if near.widened > 1.0:
        print(
            f"  (no physically valid set comes within the base parameters' stated uncertainty: the data hold errors "
            f"beyond it, and the export widened their covariance {near.widened:.3g} times)"
        )
    written = export_floating_urdf(path, config, near.theta)
    print(
        f"URDF with these links written to {written.path} (reloaded by pinocchio: base wrenches within "
        f"{written.max_torque_error:.2g} of these parameters')"
    )
    links = {
        "metric": METRIC,
        "distance": near.distance,
        "mahalanobis": near.mahalanobis,
        "radius_95": near.radius,
        "covariance_widened": near.widened,
        "names": list(floating.body_names),
        "mass_nominal": floats(near.mass_nominal),
        "mass": floats(near.mass),
        "mass_std": floats(near.mass_std),
        "mass_class": list(near.mass_class),
        "com_shift_m": floats(near.com_shift),
    }
    return {"path": str(written.path), "max_wrench_error": written.max_torque_error, "links": links}


def cmd_identify_floating(args: argparse.Namespace) -> int:
    """Identify a standing robot's inertial parameters from its feet's wrenches (and joint torques)."""
    from motor_ident.core.floating_base.identification import (
        WEAK_COM_STD,
        compare_row_sets,
        determined_masses,
        identify_floating_base,
        nominal_mass_and_com,
        structural_base_parameters,
        weakly_determined,
        worse_than_nominal,
    )
    from motor_ident.core.floating_base.model import FloatingBaseRegressor
    from motor_ident.errors import ConfigError
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config(args.robot)
    if config.floating_base is None:
        raise ConfigError(f"--floating-base: robot {config.name!r} has no floating_base section (see config/icub.yaml)")
    if args.method not in ("ols", "wls", "sdp", "log_cholesky"):
        raise ConfigError(f"--floating-base takes --method ols, wls, sdp or log_cholesky, not {args.method!r}")
    floating = config.build_floating_base()
    regressor = FloatingBaseRegressor(floating)
    record = _record(config, args.data, args)
    samples = record_samples(regressor, config, record, rows=args.rows, source=args.data)
    free = compare_row_sets(structural_base_parameters(regressor, "base"), structural_base_parameters(regressor, "all"))
    print(free.summary())
    soles = config.floating_base.sole_frames
    supports = [tuple(soles[c] for c in feet) for feet in samples.supports()]
    counts = {
        feet: int(np.sum(np.all(samples.contact == np.isin(np.arange(len(soles)), feet), axis=1)))
        for feet in samples.supports()
    }
    print(
        "feet on the ground in the data (schedule or F/T force threshold): "
        + ", ".join(f"{' + '.join(s)} {n} samples" for s, n in zip(supports, counts.values()))
    )
    base = structural_base_parameters(regressor, args.rows, supports=supports, standing=samples.Q[0])
    free_rows = structural_base_parameters(regressor, args.rows)
    lost = [
        n
        for n, a, b in zip(base.names, free_rows.classes(), base.classes())
        if a != "unidentifiable" and b == "unidentifiable"
    ]
    print(
        f"with these contacts: {base.n_base} base parameters ({free_rows.n_base - base.n_base} fewer than free "
        f"motion); not determined ({len(lost)}): {', '.join(lost) or '-'}"
    )
    feet = _foot_first_moments(floating, base, soles)
    print("feet's first moments [kg m] (mx, my, mz) determined: " + "; ".join(f"{b}: {v}" for b, v in feet.items()))
    theta0 = floating.inertial_parameters()
    result = identify_floating_base(
        regressor,
        samples.Q,
        samples.V,
        samples.A,
        samples.F,
        rows=args.rows,
        method=args.method,
        validate_fraction=args.validate or 0.0,  # unset: no held-out part
        base=base,
        alpha=args.alpha if args.method in ("sdp", "log_cholesky") and args.alpha < 1.0 else 1.0,
        estimate_tilt=args.imu_tilt == "estimate",
    )
    correction = None
    if args.orientation_noise == "correct":
        result, correction = orientation_corrected(regressor, config, record, samples, result)
        print(
            "IMU orientation's white noise (its increments against the gyro's) [mrad]: "
            + ", ".join(f"{a} {1000 * v:.3f}" for a, v in zip("xyz", correction.noise))
            + f"; its bias taken off the mass and CoM ({correction.refits} refits with more of it, extrapolated to "
            f"none, SIMEX; --orientation-noise ignore: not): total mass {1000 * correction.correction[0]:+.2f} g, "
            "CoM "
            + ", ".join(
                f"{a} {1000 * v:+.2f} +- {1000 * e:.2f}"
                for a, v, e in zip("xyz", correction.correction[1:], correction.std[1:])
            )
            + " mm"
        )
    mass, com = result.mass, result.com
    if result.tilt is not None:
        tilt = result.tilt
        print(
            "base orientation's constant tilt (estimated with the parameters; --imu-tilt trust: none) [mrad]: "
            + ", ".join(f"{a} {1000 * v:+.2f} +- {1000 * e:.2f}" for a, v, e in zip("xy", tilt.value, tilt.std))
        )
    print(
        f"total mass {float(mass.value):.4f} +- {float(mass.std):.4f} kg (URDF {floating.total_mass:.4f} kg)"
        + ("" if bool(np.all(mass.identifiable)) else " [not determined by the data]")
    )
    axes = "xyz"
    weak = weakly_determined(com)
    com_text = ", ".join(
        f"{axes[i]} {1000 * com.value[i]:.1f} +- {1000 * com.std[i]:.2f}"
        + (" [weakly determined]" if weak[i] else "")
        + ("" if com.identifiable[i] else " [not determined]")
        for i in range(3)
    )
    print(f"centre of mass at the first sample, world frame [mm]: {com_text}")
    print(
        "  (+- : standard deviations from the fit's residuals, their correlation included (sandwich covariance, "
        "at least that of the residuals' spectrum taken as coloured noise); "
        f"[weakly determined]: above {1000 * WEAK_COM_STD:g} mm, the data see that axis only through small motions "
        "and small systematic sensor errors move it by several standard deviations: trust the URDF's more; "
        "[not determined]: that axis needs parameters these contacts cannot determine (the standing feet's), "
        "the URDF's values are used)"
    )
    spread = config.floating_base.urdf_mass_uncertainty
    urdf_mass, urdf_com = nominal_mass_and_com(regressor, samples.Q[0], theta0, relative_spread=spread)
    prefer_mass = bool(worse_than_nominal(mass, urdf_mass)) or not bool(np.all(mass.identifiable))
    prefer_com = worse_than_nominal(com, urdf_com) | ~com.identifiable
    print(
        f"the URDF's own uncertainty (floating_base.urdf_mass_uncertainty: each link's mass, first and second "
        f"moments +-{100 * spread:g} % of its scale, lengths of at least 0.3 m): total mass "
        f"+- {float(urdf_mass.std):.3f} kg, CoM "
        + ", ".join(f"{axes[i]} +- {1000 * urdf_com.std[i]:.2f}" for i in range(3))
        + " mm"
    )
    worse = (["total mass"] if prefer_mass else []) + [f"CoM {axes[i]}" for i in range(3) if prefer_com[i]]
    if worse:
        print(
            f"  determined worse by these data than by the URDF (or not at all): {', '.join(worse)}: use the URDF's "
            + ", ".join(
                ([f"total mass {float(urdf_mass.value):.3f} kg"] if prefer_mass else [])
                + [f"CoM {axes[i]} {1000 * urdf_com.value[i]:.1f} mm" for i in range(3) if prefer_com[i]]
            )
        )
    alone = determined_masses(base)
    named = [
        f"{b} {m:.3f} kg (URDF {m0:.3f})"
        for b, m, m0, ok in zip(floating.body_names, result.theta[0::10], theta0[0::10], alone)
        if ok
    ]
    print(
        f"link masses determined alone by these data ({len(named)} of {alone.size}): {', '.join(named) or 'none'}"
        + ("" if len(named) == alone.size else "; the others only inside combinations (the estimator's choice)")
    )
    print(
        f"fit on {result.n_train} samples: condition number {result.fit.condition_number:.3g}, NRMSE per row "
        + ", ".join(f"{n} {v:.4f}" for n, v in zip(result.row_names, result.fit.nrmse))
    )
    payload: dict[str, Any] = {
        "robot": config.name,
        "data": str(args.data),
        "rows": args.rows,
        "method": args.method,
        "n_base": base.n_base,
        "n_base_free_motion": free_rows.n_base,
        "base_rows_vs_all_rows": {
            "n_base_rows": free.n_base_rows,
            "n_all_rows": free.n_all_rows,
            "only_with_joint_rows": list(free.only_with_joint_rows),
        },
        "supports": [list(x) for x in supports],
        "support_samples": list(counts.values()),
        "not_determined_in_stance": lost,
        "feet_first_moments_determined": feet,
        "total_mass": float(mass.value),
        "total_mass_std": float(mass.std),
        "nominal_total_mass": floating.total_mass,
        "total_mass_std_white": float(result.mass_white.std),
        "com": floats(com.value),
        "com_std": floats(com.std),
        "com_std_white": floats(result.com_white.std),
        "com_determined": [bool(x) for x in com.identifiable],
        "com_weakly_determined": [bool(x) for x in weak],
        "com_configuration": floats(samples.Q[0]),
        "condition_number": result.fit.condition_number,
        "nrmse": floats(result.fit.nrmse),
        "bodies": list(floating.body_names),
        "masses": floats(result.theta[0::10]),
        "masses_determined": [bool(x) for x in alone],
        "theta": floats(result.theta),
        "min_pseudo_inertia_eigenvalue": float(result.min_eigenvalue.min()),
        "urdf_mass_uncertainty": spread,
        "nominal_total_mass_std": float(urdf_mass.std),
        "nominal_com": floats(urdf_com.value),
        "nominal_com_std": floats(urdf_com.std),
        "prefer_nominal": {"total_mass": prefer_mass, "com": [bool(x) for x in prefer_com]},
        "imu_tilt": None if result.tilt is None else floats(result.tilt.value),
        "imu_tilt_std": None if result.tilt is None else floats(result.tilt.std),
        "orientation_noise": None if correction is None else floats(correction.noise),
        "orientation_noise_correction": None
        if correction is None
        else {
            "total_mass": float(correction.correction[0]),
            "com": floats(correction.correction[1:]),
            "total_mass_std": float(correction.std[0]),
            "com_std": floats(correction.std[1:]),
            "refits": correction.refits,
        },
    }
    if result.heldout is not None:
        payload["heldout_nrmse"] = floats(result.heldout.nrmse)
    if args.validate_on:
        held = record_samples(regressor, config, _record(config, args.validate_on, args), source=args.validate_on)
        payload["validation"] = _wrench_validation(regressor, base, result.theta, theta0, held, args.validate_on)
    if args.urdf_out:
        payload["urdf"] = _write_urdf(args.urdf_out, config, regressor, result)
    elif np.any(result.theta[0::10] < 0.0):
        negative = [b for b, m in zip(floating.body_names, result.theta[0::10]) if m < 0.0]
        print(
            f"note: the {args.method} parameters give {len(negative)} link(s) a negative mass ({', '.join(negative)}): "
            "only their combinations are determined; --urdf-out writes physically valid links nearest to the URDF"
        )
    write_json(args.json, payload)
    return 0
