"""Do the floating-base standard deviations cover the errors? Total mass and whole-body CoM of
`identify --floating-base` on simulated recordings, against the simulator's truth.

    for s in 0 1 2 3; do
      motor-ident synth --robot icub --floating-base --duration 15 --seed $s --mass-seed $s \\
          --out s$s.npz --json s$s.json
    done
    python benchmarks/floating_coverage.py icub s0 s1 s2 s3 [--method wls sdp]

Each name stands for ``<name>.npz`` (the recording) and ``<name>.json`` (synth's truth). Per
record and method it prints the errors of the total mass and of the CoM x, y, z (at the first
sample's configuration) in standard deviations, with the residual-based (sandwich) covariance and
with the white-noise one, then how often |error| <= 1.96 std over all records.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np


def main() -> None:
    """Identify every record with every method; print the table and the coverage counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot")
    parser.add_argument("records", nargs="+", help="<name> of <name>.npz and <name>.json (synth --json)")
    parser.add_argument("--method", nargs="+", default=["wls"], help="identify --method (wls, sdp, ...)")
    args = parser.parse_args()

    import pinocchio as pin

    from motor_ident import cli
    from motor_ident.core.threads import limit_blas_threads
    from motor_ident.io.robot_config import load_robot_config

    limit_blas_threads()
    floating = load_robot_config(args.robot).build_floating_base()
    labels = ("mass", "com x", "com y", "com z")
    hits: dict[tuple[str, str, str], list[bool]] = {}
    print(f"{'record':>10} {'method':>6}  " + "  ".join(f"{x:>26}" for x in labels))
    for name in args.records:
        truth = json.loads(Path(f"{name}.json").read_text())
        true_model = floating.with_inertial_parameters(np.asarray(truth["theta_true"])).model
        for method in args.method:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "fit.json"
                argv = ["identify", f"{name}.npz", "--robot", args.robot, "--floating-base", "--method", method]
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
            scale = np.array([1.0, 1000.0, 1000.0, 1000.0])  # kg, mm
            for i, _ in enumerate(labels):
                sand = [fit["total_mass_std"], *fit["com_std"]][i]
                white = [fit["total_mass_std_white"], *fit["com_std_white"]][i]
                cells.append(
                    f"{scale[i] * error[i]:+8.3f} ({scale[i] * sand:6.3f} / {scale[i] * white:6.3f})"
                    + ("" if i == 0 or fit["com_determined"][i - 1] else "*")
                )
            print(f"{Path(name).name:>10} {method:>6}  " + "  ".join(f"{c:>26}" for c in cells))
    print("error (std sandwich / std white) in kg and mm; * = [nominal feet]: the data do not determine that axis")
    for (method, kind, label), ok in sorted(hits.items()):
        print(f"{method:>6} {kind:>8} {label:>6}: |error| <= 1.96 std in {sum(ok)} of {len(ok)}")


if __name__ == "__main__":
    main()
