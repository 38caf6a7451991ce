#!/usr/bin/env bash
# Create (or update) the local virtual environment .venv with motor_ident and everything it needs.
#
#   tools/setup.sh            runtime + test dependencies
#
# Pinned versions come from requirements/lock.txt. Where a sourced ROS 2 already provides rclpy
# (ROS_DISTRO set and `python3 -c 'import rclpy'` works), the venv sees the system packages and the
# ROS 2 wheels from PyPI are not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" - <<'PY' || { echo "motor_ident needs Python >= 3.10" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

extras="pinocchio,test,ros"
venv_args=()
if [ -n "${ROS_DISTRO:-}" ] && "$PYTHON" -c 'import rclpy' 2>/dev/null; then
  echo "setup: using the sourced ROS 2 ($ROS_DISTRO) for rclpy and messages"
  venv_args+=(--system-site-packages)
  extras="pinocchio,test"
fi

stamp=.venv/.motor_ident-installed
want="$(cat setup.py requirements/lock.txt | sha256sum | cut -c1-16) $extras"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0  # up to date
fi
[ -d .venv ] || "$PYTHON" -m venv "${venv_args[@]}" .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c requirements/lock.txt -e ".[$extras]" rosbags example-robot-data
echo "$want" > "$stamp"
echo "setup: .venv ready ($(.venv/bin/python -c 'import motor_ident; print("motor_ident", motor_ident.__version__)'))"
