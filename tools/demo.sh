#!/usr/bin/env bash
# First command of the README: set up .venv, then run motor_ident's main job, the simulated-robot demo.
# The robot is simulated by MuJoCo, independently of the estimator's model; --engine pinocchio runs the
# exact plant instead. Arguments go to motor-ident demo.
# DDS stays on this machine unless the caller has already chosen a discovery range.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
mkdir -p out
.venv/bin/motor-ident demo "$@"
