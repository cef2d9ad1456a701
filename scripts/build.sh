#!/usr/bin/env bash
# Builds the package with catkin in .build/ws (a workspace whose src/netloop links back to
# this repository). Incremental: a second run only rebuilds what changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ws="$root/.build/ws"
mkdir -p "$ws/src"
[ -L "$ws/src/netloop" ] || ln -sfn ../../.. "$ws/src/netloop"
if [ -f /opt/ros/noetic/setup.sh ]; then . /opt/ros/noetic/setup.sh; fi
export PATH="/usr/bin:$PATH"   # Debian's catkin tools run with /usr/bin/python3
cd "$ws"
catkin_make -j"$(nproc)" -DPYTHON_EXECUTABLE="$root/.venv/bin/python" -DCATKIN_ENABLE_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$root/.build/build.log" 2>&1 || {
  tail -40 "$root/.build/build.log" >&2
  echo "build: catkin_make failed; full log in .build/build.log" >&2
  exit 1
}
echo "build: ok (devel space: $ws/devel)"
