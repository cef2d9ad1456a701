#!/usr/bin/env bash
# Builds the package with catkin_make. Incremental: a second run only rebuilds what changed.
#
#   scripts/build.sh                                 devel space in .build/ws (what `make build` runs)
#   scripts/build.sh --robot                         a robot's build (what `make robot` runs): only the
#                                                    nodes that run on a robot (-DNETLOOP_ROBOT_ONLY=ON),
#                                                    no Zenoh shim, in the same .build/ws
#   scripts/build.sh --install PREFIX [--workspace DIR] [--log FILE]
#                                                    also `catkin_make install` into PREFIX, building
#                                                    in DIR (default .build/install-ws)
#
# A workspace is a folder whose src/netloop links back to this repository; its build log is
# build.log beside it (.build/build.log for the default one) or FILE, with the Zenoh shim's
# zenoh-build.log beside that. ccache finds the objects of one workspace for another only when both
# are as deep inside the checkout (.build/<name>): the compiler's paths are relative to its folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ws="$root/.build/ws"
prefix=""
robot=OFF
log=""
usage() { echo "usage: scripts/build.sh [--robot] [--install PREFIX] [--workspace DIR] [--log FILE]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --install) [ $# -ge 2 ] || usage; prefix=$(realpath -m "$2"); shift 2 ;;
    --workspace) [ $# -ge 2 ] || usage; ws=$(realpath -m "$2"); shift 2 ;;
    --log) [ $# -ge 2 ] || usage; log=$(realpath -m "$2"); shift 2 ;;
    --robot) robot=ON; shift ;;
    *) echo "build: unknown argument '$1'" >&2; usage ;;
  esac
done
if [ -n "$prefix" ] && [ "$ws" = "$root/.build/ws" ]; then ws="$root/.build/install-ws"; fi
log=${log:-"$(dirname "$ws")/build.log"}
mkdir -p "$ws/src"
[ -L "$ws/src/netloop" ] || ln -sfn "$root" "$ws/src/netloop"
# The Zenoh shim (src/zenoh_shim, Rust, over the zenoh crate): cmake/zenoh.cmake links it into
# libnetloop_ros2 when it is built. Zenoh 1.10 needs Rust >= 1.75 (Debian 12: cargo-web; rustup's
# ~/.cargo/bin is preferred when present). Without it the build goes on without the zenoh middleware.
zenoh_log="$(dirname "$log")/zenoh-build.log"
# Cargo builds in this checkout's .build/zenoh-target. A per-user cache ($NETLOOP_ZENOH_TARGET_DIR,
# default ~/.cache/netloop/zenoh-target) seeds it, so that a fresh clone on a machine that built the
# shim once compiles only the shim itself (about a minute), not the zenoh crates (some 15 minutes on
# 2 cores). One target directory shared by clones would link whichever clone's shim compiled last:
# cargo decides freshness by the modification times of the files the last compile read, wherever
# they were, so the seed's own shim is always compiled again.
zenoh_cache=$(realpath -m "${NETLOOP_ZENOH_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/netloop/zenoh-target}")
zenoh_target="$root/.build/zenoh-target"
seed_zenoh_target() {
  if [ -d "$zenoh_target/release" ] || [ ! -d "$zenoh_cache/release" ]; then return 0; fi
  rm -rf "$zenoh_target.seed"
  flock "$zenoh_cache.lock" cp -a "$zenoh_cache" "$zenoh_target.seed"
  rm -rf "$zenoh_target.seed"/release/.fingerprint/netloop_zenoh_shim-* "$zenoh_target.seed"/release/libnetloop_zenoh_shim.a
  mv "$zenoh_target.seed" "$zenoh_target"
}
keep_zenoh_cache() {   # the first build on a machine seeds the cache for the clones after it
  [ -d "$zenoh_cache/release" ] && return 0
  mkdir -p "$(dirname "$zenoh_cache")"
  flock "$zenoh_cache.lock" sh -c '[ -d "$2/release" ] || { cp -a "$1" "$2.tmp" && mv "$2.tmp" "$2"; }' keep \
    "$zenoh_target" "$zenoh_cache"
}
zenoh_lib="$zenoh_target/release/libnetloop_zenoh_shim.a"
cargo_bin=""
for c in "$HOME/.cargo/bin/cargo" "$(command -v cargo || true)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then cargo_bin=$c; break; fi
done
cargo_minor=$([ -n "$cargo_bin" ] && "$cargo_bin" --version 2>/dev/null | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p' || true)
# What this build is meant to give libnetloop_ros2 (the tests fail when one is missing, see
# src/netloop/build_record.py): the DDS middlewares whose packages `make setup` installs, zenoh
# when a cargo that can build it is here, rmw_fastrtps_cpp where a ROS 2 environment is (the
# environment itself: test_ros2_environment).
expected=()
if [ "$robot" = ON ]; then
  :   # a robot's build has no ROS 2 middlewares: no Zenoh shim
else
  expected=(cyclonedds fastdds)
  if [ -z "$cargo_bin" ]; then
    echo "build: warning: cargo not found: building without the zenoh middleware (needs Rust >= 1.75; Debian 12: apt-get install cargo-web)" >&2
  elif [ -z "$cargo_minor" ] || [ "$cargo_minor" -lt 75 ]; then
    echo "build: warning: $("$cargo_bin" --version) is older than the 1.75 zenoh needs: building without the zenoh middleware" >&2
  else
    expected+=(zenoh)
    seed_zenoh_target
    [ -d "$zenoh_target/release/deps" ] ||
      echo "build: building the Zenoh shim with cargo (the first time on a machine: about 15 minutes on 2 cores; log: $zenoh_log)"
    if PATH="$(dirname "$cargo_bin"):$PATH" CARGO_TARGET_DIR="$zenoh_target" \
        "$cargo_bin" build --release --locked --manifest-path "$root/src/zenoh_shim/Cargo.toml" > "$zenoh_log" 2>&1; then
      keep_zenoh_cache
    else
      tail -20 "$zenoh_log" >&2
      rm -f "$zenoh_lib"   # no stale shim: cmake then builds without zenoh
      echo "build: error: cargo failed to build the Zenoh shim (full log in $zenoh_log): building without the zenoh middleware; the tests will fail" >&2
    fi
  fi
fi
# cmake links the shim when it is given one: a changed argument makes catkin_make configure again,
# so a shim that failed to build after an earlier success is left out, not a missing file.
[ -f "$zenoh_lib" ] && [ "$robot" = OFF ] || zenoh_lib=""
# ccache, where installed (make setup installs it), keeps compiled objects in a per-user cache
# shared by every clone, like the Zenoh shim's cache: paths under this checkout are
# hashed relative to it, so another clone, or another workspace inside .build/, reuses them.
launcher=()
if command -v ccache >/dev/null 2>&1 && [ -z "${NETLOOP_NO_CCACHE:-}" ]; then
  export CCACHE_DIR="${NETLOOP_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/netloop/ccache}"
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# netloop's ROS 2 interface package (ros2_interfaces/: netloop/msg/LoopSample by rosidl) into each
# ROS 2 environment scripts/setup.sh made (.venv-ros2-<distro>), built in the workspace's
# build-ros2-<distro>; catkin_make then builds the rcl nodes' plug-in against the same environments.
# A robot's build has none; without an environment the build goes on without ROS 2 itself.
ros2_prefixes=()
if [ "$robot" = OFF ]; then
  for rvenv in "$root"/.venv-ros2-*; do
    [ -x "$rvenv/bin/python" ] || continue
    distro=${rvenv##*/.venv-ros2-}
    rbuild="$ws/build-ros2-$distro"
    rlog="$(dirname "$log")/ros2-interfaces-$distro.log"
    if ! { cmake -S "$root/ros2_interfaces" -B "$rbuild" -DROS2_PREFIX="$rvenv" "${launcher[@]}" &&
           cmake --build "$rbuild" --target install -j"$(nproc)"; } > "$rlog" 2>&1; then
      tail -30 "$rlog" >&2
      echo "build: netloop's ROS 2 interface package for $distro failed; full log in $rlog" >&2
      exit 1
    fi
    ros2_prefixes+=("$rvenv")
  done
  [ ${#ros2_prefixes[@]} -gt 0 ] ||
    echo "build: warning: no ROS 2 environment (.venv-ros2-*, made by scripts/setup.sh): building without the rmw_fastrtps_cpp transport" >&2
fi
[ ${#ros2_prefixes[@]} -eq 0 ] || expected+=(rmw_fastrtps_cpp)   # the rcl nodes' plug-in
printf '%s\n' "# the ROS 2 middlewares scripts/build.sh meant libnetloop_ros2 to have (src/netloop/build_record.py)" \
  "${expected[@]}" > "$ws/expected_middlewares.txt"
if [ -f /opt/ros/noetic/setup.sh ]; then . /opt/ros/noetic/setup.sh; fi
export PATH="/usr/bin:$PATH"   # Debian's catkin tools run with /usr/bin/python3
cd "$ws"
python="$root/.venv/bin/python"
[ -x "$python" ] || python=/usr/bin/python3
args=(-j"$(nproc)" -DPYTHON_EXECUTABLE="$python" -DCATKIN_ENABLE_TESTING=OFF -DNETLOOP_ROBOT_ONLY="$robot"
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETLOOP_ZENOH_SHIM_LIB="$zenoh_lib")
args+=("${launcher[@]}" -DNETLOOP_ROS2_PREFIXES="$(IFS=';'; echo "${ros2_prefixes[*]}")")
[ -n "$prefix" ] && args+=(-DCMAKE_INSTALL_PREFIX="$prefix" install)
catkin_make "${args[@]}" > "$log" 2>&1 || {
  tail -40 "$log" >&2
  echo "build: catkin_make failed; full log in $log" >&2
  exit 1
}
echo "build: ok ($([ "$robot" = ON ] && echo "robot build, ")devel space: $ws/devel${prefix:+; install space: $prefix})"
