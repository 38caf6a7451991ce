#!/usr/bin/env bash
# Second command of the README: set up .venv, then run the whole test suite.
# Extra arguments go to pytest (e.g. tools/test.sh -k friction).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Keep DDS discovery on this machine; tests/conftest.py also picks a ROS_DOMAIN_ID per session.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
exec .venv/bin/python -m pytest "$@"
