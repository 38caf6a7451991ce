"""Check that motor_ident's standard deviations cover reality (the numbers in docs/real-logs.md and docs/fleets.md).

Three checks, each on synthetic data with a known truth:

- ``gains FIRST LAST``: drive gains of ``ur5_currents`` from an unloaded and a 2.5 kg run (20 s,
  100 Hz) whose currents hold what the model lacks (a Stribeck bump of 20 % of each joint's
  Coulomb level, AR(1) 0.9 current noise); prints per seed the z-scores, and at the end the
  fraction of 95 % intervals covering the true gains.
- ``base RHO RUNS``: base parameters of ``valkyrie_arm`` (8 s, 200 Hz) with white torque noise plus
  AR(1) noise of correlation RHO and equal variance; fraction of errors beyond 1.96 std.
- ``fleet ROBOTS DAYS SEEDS [RHO]``: stationary simulated fleets (`motor_ident.fleet.simulate`),
  each recording identified as the fleet worker does, the drift test's z-scores; RHO > 0 adds
  AR(1) torque noise (std 0.05 N m) to every recording first. SEEDS: comma-separated.

    .venv/bin/python tools/uncertainty_check.py gains 0 50
    .venv/bin/python tools/uncertainty_check.py base 0.95 30
    .venv/bin/python tools/uncertainty_check.py fleet 3 5 0,1,2,3,4,5,6,7,8,9
    .venv/bin/python tools/uncertainty_check.py floating icub s0 s1 s2 s3 --method wls sdp
    .venv/bin/python tools/uncertainty_check.py online icub s0 s1 s2 s3 s4

- ``floating ROBOT NAME...``: ``identify --floating-base`` on ``NAME.npz`` recordings of ``synth
  --floating-base`` (``--json NAME.json`` holds the truth): per record and method, the errors of
  the total mass and the CoM x, y, z (at the first sample) beside their std, residual-based and
  white-noise, and how often |error| <= 1.96 std.
- ``online ROBOT NAME...``: the same records fed sample by sample to the ``floating_identifier``
  node's core (`OnlineFloatingBase`, default settings): per refit the errors of the total mass and
  the CoM x, y, z (at the refit's last sample) beside the published (residual-based) and the
  white-noise std, the CPU of the refit, and per refit index how often |error| <= 1.96 std.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace

import numpy as np

from motor_ident.core.threads import limit_blas_threads


def ar1(rng: np.random.Generator, shape: tuple[int, ...], rho: float, std: float) -> np.ndarray:
    """AR(1) noise along axis 0 with correlation ``rho`` and stationary standard deviation ``std``."""
    e = rng.standard_normal(shape) * std * np.sqrt(1.0 - rho**2)
    for k in range(1, shape[0]):
        e[k] += rho * e[k - 1]
    return e


def check_gains(first: int, last: int) -> None:
    """Coverage of the drive gains' 95 % intervals under model mismatch."""
    from motor_ident.core.estimation.drive_gains import CurrentRun, identify_drive_gains, payload_attachment
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import source_record

    config = load_robot_config("ur5_currents")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    joint, _ = payload_attachment(regressor.robot, "")
    coulomb = np.array([4.0, 4.0, 3.0, 1.0, 1.0, 1.0])
    hits = []
    for seed in range(first, last):
        runs, truth = [], np.zeros(0)
        for mass in (0.0, 2.5):
            made = source_record(config, payload_mass=mass, duration=20.0, rate_hz=100.0, seed=seed)
            r = made.record
            assert r.qd is not None and r.qdd is not None and r.current is not None
            assert made.true_drive_gains is not None
            truth = made.true_drive_gains
            rng = np.random.default_rng((seed, 99, int(10 * mass)))
            bump = 0.2 * np.sign(r.qd) * np.exp(-((r.qd / 0.1) ** 2)) * coulomb
            noise = ar1(rng, r.current.shape, 0.9, 0.01 / np.sqrt(1.0 - 0.81))
            runs.append(CurrentRun(r.q, r.qd, r.qdd, r.current + bump / truth + noise))
        fit = identify_drive_gains(
            regressor, base, config.build_transmission(), runs[0], runs[1], payload_mass=2.5, payload_joint=joint
        )
        z = (fit.gains - truth) / fit.gains_std
        hits.append(np.abs(z) < 1.959964)
        flags = ["" if d.determined else "flagged" for d in fit.determination]
        print(f"seed {seed}: z = {np.round(z, 2).tolist()} {flags}", flush=True)
    covered = np.array(hits)
    print(f"95 % intervals covering the true gain: {covered.mean():.3f} ({covered.sum()} of {covered.size})")
    print(f"per motor: {np.round(covered.mean(axis=0), 2).tolist()}")


def check_base(rho: float, runs: int) -> None:
    """Fraction of base-parameter errors beyond 1.96 std with white + AR(1) torque noise."""
    from motor_ident.core.estimation.identification import identify, structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    z = []
    for seed in range(runs):
        record, _ = excitation_record(regressor, theta, duration=8.0, rate_hz=200.0, noise_std=0.0, seed=seed)
        assert record.qd is not None and record.qdd is not None
        rng = np.random.default_rng(seed + 1000)
        tau = record.tau + ar1(rng, record.tau.shape, rho, 0.05) + 0.05 * rng.standard_normal(record.tau.shape)
        fit = identify(regressor, record.q, record.qd, record.qdd, tau, base=base).fit
        z.append((fit.theta - base.to_base(theta)) / fit.std)
    all_z = np.concatenate(z)
    print(f"AR(1) {rho}: {all_z.size} errors, fraction beyond 1.96 std = {np.mean(np.abs(all_z) > 1.96):.3f}")


def check_fleet(robots: int, days: int, seeds: list[int], rho: float) -> None:
    """Fraction of drift z-scores beyond 1.96 on stationary simulated fleets."""
    import pandas as pd

    from motor_ident.fleet.drift import DriftSettings, long_table, z_scores
    from motor_ident.fleet.recordings import find_recordings
    from motor_ident.fleet.simulate import FleetSpec, simulate_fleet
    from motor_ident.fleet.worker import IdentifySettings, identify_recording
    from motor_ident.io.data import load_record, save_record
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config("valkyrie_arm")
    z = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            simulate_fleet(config, tmp, FleetSpec(robots=robots, days=days, drifts=False, seed=seed))
            recordings = find_recordings([tmp], robot_config="valkyrie_arm", robot_map=None)
            if rho > 0.0:
                for k, recording in enumerate(recordings):
                    record = load_record(recording.path)
                    noise = ar1(np.random.default_rng((seed, k)), record.tau.shape, rho, 0.05)
                    save_record(recording.path, replace(record, tau=record.tau + noise))
                recordings = find_recordings([tmp], robot_config="valkyrie_arm", robot_map=None)
            rows = pd.DataFrame([identify_recording(r, IdentifySettings()) for r in recordings])
        seed_z = z_scores(long_table(rows), DriftSettings())["z"].to_numpy()
        z.append(seed_z)
        print(
            f"seed {seed}: {seed_z.size} tests, fraction |z| > 1.96 = {np.mean(np.abs(seed_z) > 1.96):.4f}", flush=True
        )
    all_z = np.concatenate(z)
    print(f"all: {all_z.size} tests, fraction |z| > 1.96 = {np.mean(np.abs(all_z) > 1.96):.4f}")


def check_floating(robot: str, records: list[str], methods: list[str]) -> None:
    """Total mass and CoM of ``identify --floating-base`` against synth's truth, per record and method."""
    import json
    from pathlib import Path

    import pinocchio as pin

    from motor_ident import cli
    from motor_ident.io.robot_config import load_robot_config

    floating = load_robot_config(robot).build_floating_base()
    labels = ("mass", "com x", "com y", "com z")
    hits: dict[tuple[str, str, str], list[bool]] = {}
    print(f"{'record':>10} {'method':>6}  " + "  ".join(f"{x:>26}" for x in labels))
    for name in records:
        truth = json.loads(Path(f"{name}.json").read_text())
        true_model = floating.with_inertial_parameters(np.asarray(truth["theta_true"])).model
        for method in methods:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "fit.json"
                argv = ["identify", f"{name}.npz", "--robot", robot, "--floating-base", "--method", method]
                if cli.main([*argv, "--json", str(out)]) != 0:
                    raise SystemExit(f"identify failed on {name}")
                fit = json.loads(out.read_text())
            com_true = pin.centerOfMass(true_model, true_model.createData(), np.asarray(fit["com_configuration"]))
            error = np.array([fit["total_mass"] - truth["true_total_mass"], *(np.asarray(fit["com"]) - com_true)])
            cells = []
            for kind, std in (
                ("sandwich", [fit["total_mass_std"], *fit["com_std"]]),
                ("white", [fit["total_mass_std_white"], *fit["com_std_white"]]),
            ):
                for label, e, s in zip(labels, error, std):
                    hits.setdefault((method, kind, label), []).append(bool(abs(e) <= 1.96 * s))
            scale = np.full(4, 1000.0)  # g, mm
            for i, _ in enumerate(labels):
                sand = [fit["total_mass_std"], *fit["com_std"]][i]
                white = [fit["total_mass_std_white"], *fit["com_std_white"]][i]
                cells.append(
                    f"{scale[i] * error[i]:+8.3f} ({scale[i] * sand:6.3f} / {scale[i] * white:6.3f})"
                    + ("" if i == 0 or fit["com_determined"][i - 1] else "*")
                )
            print(f"{Path(name).name:>10} {method:>6}  " + "  ".join(f"{c:>26}" for c in cells))
    print("error (std sandwich / std white) in g and mm; * = [nominal feet]: the data do not determine that axis")
    for (method, kind, label), ok in sorted(hits.items()):
        print(f"{method:>6} {kind:>8} {label:>6}: |error| <= 1.96 std in {sum(ok)} of {len(ok)}")


def check_online(robot: str, records: list[str]) -> None:
    """Total mass and CoM of the ``floating_identifier`` node's core (default settings) at every refit."""
    import json
    from pathlib import Path

    from motor_ident.core.floating_base.identification import centre_of_mass, structural_base_parameters
    from motor_ident.core.floating_base.model import FloatingBaseRegressor
    from motor_ident.core.floating_base.online import FloatingOnlineConfig, OnlineFloatingBase
    from motor_ident.io.floating_record import load_floating_record
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config(robot)
    floating = config.floating_base
    if floating is None:
        raise SystemExit(f"{robot}: no floating_base section")
    regressor = FloatingBaseRegressor(config.build_floating_base())
    standing = np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], floating.posture(config.joints)])
    base = structural_base_parameters(regressor, stance=floating.sole_frames, standing=standing)
    zero = np.zeros((base.n_base, base.n_base))
    hits: dict[tuple[int, str], list[bool]] = {}
    cpu: list[float] = []
    print("per refit: error (std residual-based / std white) in g and mm, CPU of the refit")
    for name in records:
        record = load_floating_record(f"{name}.npz")
        theta_true = np.asarray(json.loads(Path(f"{name}.json").read_text())["theta_true"])
        settings = FloatingOnlineConfig(rate_hz=float(1.0 / np.median(np.diff(record.t))))
        core = OnlineFloatingBase.from_config(
            regressor, base, settings, imu_frame=floating.imu_frame, sole_frames=floating.sole_frames
        )
        refit = 0
        for k in range(record.t.size):
            sample = (record.q[k], record.imu_quaternion[k], record.imu_gyro[k], record.wrench[k])
            if not core.add_sample(record.t[k], *sample) or core.estimate is None:
                continue
            e = core.estimate
            com_true = centre_of_mass(regressor, e.q_reference, base, zero, theta_true).value
            error = 1e3 * np.array([float(e.mass.value) - theta_true[0::10].sum(), *(e.com.value - com_true)])
            std = 1e3 * np.array([e.mass.std, *e.com.std])
            white = 1e3 * np.array([e.mass_white.std, *e.com_white.std])
            for kind, s in (("residual", std), ("white", white)):
                for i, label in enumerate(("mass", "com x", "com y", "com z")):
                    hits.setdefault((refit, f"{kind} {label}"), []).append(bool(abs(error[i]) <= 1.96 * s[i]))
            cpu.append(1e3 * e.cpu_s)
            cells = "  ".join(f"{x:+8.3f} ({a:7.3f} / {b:6.3f})" for x, a, b in zip(error, std, white))
            print(f"{Path(name).name:>8} t {e.t:5.1f} s  {cells}  {cpu[-1]:4.0f} ms")
            refit += 1
    for refit in sorted({r for r, _ in hits}):
        counts = "  ".join(
            f"{kind} {sum(hits[(refit, kind)])}/{len(hits[(refit, kind)])}"
            for kind in (f"{k} {x}" for k in ("residual", "white") for x in ("mass", "com x", "com y", "com z"))
        )
        print(f"refit {refit + 1}: |error| <= 1.96 std  {counts}")
    print(f"CPU per refit: median {np.median(cpu):.0f} ms, {min(cpu):.0f}-{max(cpu):.0f} ms")


def main() -> None:
    """Parse the check and run it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    gains = sub.add_parser("gains")
    gains.add_argument("first", type=int)
    gains.add_argument("last", type=int)
    base = sub.add_parser("base")
    base.add_argument("rho", type=float)
    base.add_argument("runs", type=int)
    fleet = sub.add_parser("fleet")
    fleet.add_argument("robots", type=int)
    fleet.add_argument("days", type=int)
    fleet.add_argument("seeds")
    fleet.add_argument("rho", type=float, nargs="?", default=0.0)
    floating = sub.add_parser("floating")
    floating.add_argument("robot")
    floating.add_argument("records", nargs="+", help="<name> of <name>.npz and <name>.json (synth --json)")
    floating.add_argument("--method", nargs="+", default=["wls"], help="identify --method (wls, sdp, ...)")
    online = sub.add_parser("online")
    online.add_argument("robot")
    online.add_argument("records", nargs="+", help="<name> of <name>.npz and <name>.json (synth --json)")
    args = parser.parse_args()
    limit_blas_threads()
    if args.check == "gains":
        check_gains(args.first, args.last)
    elif args.check == "base":
        check_base(args.rho, args.runs)
    elif args.check == "floating":
        check_floating(args.robot, args.records, args.method)
    elif args.check == "online":
        check_online(args.robot, args.records)
    else:
        check_fleet(args.robots, args.days, [int(s) for s in args.seeds.split(",")], args.rho)


if __name__ == "__main__":
    main()
