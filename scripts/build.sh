#!/usr/bin/env bash
# Builds the package with catkin_make. Incremental: a second run only rebuilds what changed.
#
#   scripts/build.sh                                 devel space in .build/ws (what `make build` runs)
#   scripts/build.sh --install PREFIX [--workspace DIR]
#                                                    also `catkin_make install` into PREFIX, building
#                                                    in DIR (default .build/install-ws)
#
# A workspace is a folder whose src/netloop links back to this repository; its build log is
# build.log beside it (.build/build.log for the default one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ws="$root/.build/ws"
prefix=""
usage() { echo "usage: scripts/build.sh [--install PREFIX] [--workspace DIR]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --install) [ $# -ge 2 ] || usage; prefix=$(realpath -m "$2"); shift 2 ;;
    --workspace) [ $# -ge 2 ] || usage; ws=$(realpath -m "$2"); shift 2 ;;
    *) echo "build: unknown argument '$1'" >&2; usage ;;
  esac
done
if [ -n "$prefix" ] && [ "$ws" = "$root/.build/ws" ]; then ws="$root/.build/install-ws"; fi
log="$(dirname "$ws")/build.log"
mkdir -p "$ws/src"
[ -L "$ws/src/netloop" ] || ln -sfn "$root" "$ws/src/netloop"
if [ -f /opt/ros/noetic/setup.sh ]; then . /opt/ros/noetic/setup.sh; fi
export PATH="/usr/bin:$PATH"   # Debian's catkin tools run with /usr/bin/python3
cd "$ws"
args=(-j"$(nproc)" -DPYTHON_EXECUTABLE="$root/.venv/bin/python" -DCATKIN_ENABLE_TESTING=OFF
      -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ -n "$prefix" ] && args+=(-DCMAKE_INSTALL_PREFIX="$prefix" install)
catkin_make "${args[@]}" > "$log" 2>&1 || {
  tail -40 "$log" >&2
  echo "build: catkin_make failed; full log in $log" >&2
  exit 1
}
echo "build: ok (devel space: $ws/devel${prefix:+; install space: $prefix})"
