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
"$PYTHON" - <<'PY' || { echo "motor_ident needs Python >= 3.11" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

extras="pinocchio,test,ros,monitor"
venv_args=()
if [ -n "${ROS_DISTRO:-}" ] && "$PYTHON" -c 'import rclpy' 2>/dev/null; then
  echo "setup: using the sourced ROS 2 ($ROS_DISTRO) for rclpy and messages"
  venv_args+=(--system-site-packages)
  extras="pinocchio,test,monitor"
fi

stamp=.venv/.motor_ident-installed
want="$(cat setup.py requirements/lock.txt | sha256sum | cut -c1-16) $extras"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # a .venv left half-made (setup interrupted while creating it) has no pip: make it again
  if [ -d .venv ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then rm -rf .venv; fi
  [ -d .venv ] || "$PYTHON" -m venv "${venv_args[@]}" .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -c requirements/lock.txt -e ".[$extras]" rosbags example-robot-data
  echo "$want" > "$stamp"
  echo "setup: .venv ready ($(.venv/bin/python -c 'import motor_ident; print("motor_ident", motor_ident.__version__)'))"
fi

# launch, launch_ros and ros2launch are not on PyPI. Where their sources sit beside this checkout
# (../shared/ros2_launch, see its README), install them with colcon, so that the tests run the
# launch files the way `ros2 launch` does (tests/ros/test_launch_files.py skips them otherwise).
# A sourced ROS 2 that provides them is used as it is. Never fails the setup.
launch_src=../shared/ros2_launch
launch_stamp=.venv/.ros2-launch-installed
if [ -d "$launch_src" ] && ! { [ -n "${ROS_DISTRO:-}" ] && .venv/bin/python -c 'import launch_ros, ros2launch' 2>/dev/null; }; then
  launch_want="$(cat "$launch_src"/*/setup.py | sha256sum | cut -c1-16)"
  if [ ! -f "$launch_stamp" ] || [ "$(cat "$launch_stamp")" != "$launch_want" ]; then
    # pip builds in the source tree: build from a copy (the shared folder may be read-only)
    launch_tmp="$(mktemp -d)"
    packages=(launch launch_xml launch_yaml launch_ros ros2launch composition_interfaces_stub)
    for package in "${packages[@]}"; do
      cp -r "$launch_src/$package" "$launch_tmp/"
      rm -rf "$launch_tmp/$package/build" "$launch_tmp/$package"/*.egg-info
    done
    if {
      .venv/bin/python -m pip install --quiet osrf-pycommon colcon-core colcon-ros colcon-python-setup-py \
        colcon-library-path colcon-recursive-crawl colcon-package-information &&
        .venv/bin/python -m pip install --quiet --no-deps "${packages[@]/#/$launch_tmp/}"
    } >"$launch_tmp/pip.log" 2>&1; then
      echo "$launch_want" > "$launch_stamp"
      echo "setup: launch, launch_ros, ros2launch and colcon installed from $launch_src"
    else
      tail -n 20 "$launch_tmp/pip.log" >&2
      echo "note: could not install launch from $launch_src; the launch file tests will be skipped" >&2
    fi
    rm -rf "$launch_tmp"
  fi
fi
