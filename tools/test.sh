#!/usr/bin/env bash
# Second command of the README: set up .venv, then run the whole test suite.
# Extra arguments go to pytest (e.g. tools/test.sh -k friction).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# The HTML report test opens the page in headless Chromium: install the Debian packages when they
# are missing and we may (root with apt-get); otherwise that one test is skipped and says why.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; }; } ||
    echo "note: could not install chromium; the report rendering test will be skipped" >&2
fi
# Keep DDS discovery on this machine; tests/conftest.py also picks a ROS_DOMAIN_ID per session.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# Fast DDS shared-memory files that killed processes left in /dev/shm (Fast DDS's own cleaner: it
# removes only segments no running process holds). Never fails the run.
if [ -f .venv/tools/fastdds/fastdds.py ]; then
  timeout 60 .venv/bin/python .venv/tools/fastdds/fastdds.py shm clean >/dev/null 2>&1 || true
fi
exec .venv/bin/python -m pytest "$@"
