#!/usr/bin/env bash
# Installs what netloop needs and is missing; a second run installs nothing.
#   - Debian packages (ROS1 from Debian 12, ns-3, build tools) with apt, only those missing.
#     On a machine with ROS Noetic in /opt/ros/noetic, Debian's ROS packages are skipped.
#   - .venv: a virtual environment made from /usr/bin/python3 with --system-site-packages
#     (Debian's rospy lives there), with the pinned PyPI packages of requirements.txt,
#     reinstalled only when requirements.txt changes.
#   - .venv-ros2-<distro>: ROS 2 (PyPI's ros-<distro>-* wheels: rclpy, rcl, rmw_fastrtps_cpp) for
#     each distribution of NETLOOP_ROS2_DISTROS (default: jazzy; kilted also where it has a
#     requirements-ros2-kilted.txt), from requirements-ros2-<distro>.txt, made from
#     /usr/bin/python3 WITHOUT Debian's site-packages (ROS 2's message packages share ROS 1's
#     names). The wheels exist for x86_64 CPython 3.11/3.12 only: elsewhere it is left out, said
#     so, and the rmw_fastrtps_cpp transport is refused naming why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

ros_debian=(ros-core-dev ros-base-dev python3-rospy python3-roslaunch python3-rosbag python3-rostest
  python3-rosgraph python3-rospkg python3-topic-tools topic-tools libroscpp-dev catkin rosbash
  libstd-msgs-dev ros-std-msgs python3-std-msgs libsensor-msgs-dev python3-sensor-msgs libgeometry-msgs-dev
  python3-geometry-msgs python3-nav-msgs python3-tf2-msgs python3-cv-bridge
  rviz ros-robot-state-publisher joint-state-publisher python3-visualization-msgs)
common=(build-essential cmake libgtest-dev python3-venv python3-dev iproute2 iptables procps xvfb liburdfdom-tools
  ns3 libns3-dev libgsl-dev openssh-server openssh-client rsync faketime ignition-tools libsdformat-dev ruby python3-tk imagemagick x11-utils zlib1g-dev clang-14 libclang-rt-14-dev
  cyclonedds-dev cyclonedds-tools libfastrtps-dev libfastcdr-dev fastddsgen ccache)

# Zenoh (src/zenoh_shim, the zenoh crate) needs Rust >= 1.75. Debian 12's cargo is 1.63; its
# cargo-web (bookworm main and security) is recent, so it is installed where no cargo >= 1.75 is
# on this machine (rustup's ~/.cargo/bin counts). Without it the build goes on without zenoh.
cargo_ok() {
  local c v
  for c in "$HOME/.cargo/bin/cargo" "$(command -v cargo || true)"; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    v=$("$c" --version 2>/dev/null | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p')
    [ -n "$v" ] && [ "$v" -ge 75 ] && return 0
  done
  return 1
}
# GNU parallel: the lab-machines recipe of docs/shards.md (docs/shards/parallel_ssh.sh) and its test.
common+=(parallel)

if ! cargo_ok && grep -qs 'VERSION_CODENAME=bookworm' /etc/os-release; then common+=(cargo-web); fi

if [ -f /opt/ros/noetic/setup.sh ]; then
  echo "setup: ROS Noetic found in /opt/ros/noetic; using it instead of Debian's ROS packages"
  wanted=("${common[@]}")
else
  wanted=("${common[@]}" "${ros_debian[@]}")
fi

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO=sudo; else
      echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
      exit 1
    fi
  else SUDO=""; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv from /usr/bin/python3 (with system site-packages)"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
want_hash=$(sha256sum requirements.txt | cut -d' ' -f1)
have_hash=$(cat "$venv/.requirements.sha256" 2>/dev/null || true)
if [ "$want_hash" != "$have_hash" ]; then
  echo "setup: installing pinned PyPI packages into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r requirements.txt
  echo "$want_hash" > "$venv/.requirements.sha256"
fi
# `netloop` on the PATH of an activated venv (. .venv/bin/activate): a link to bin/netloop
ln -sfn ../../bin/netloop "$venv/bin/netloop"

# ROS 2 from PyPI, one environment per distribution (about 250 MB and 15-70 s each).
ros2_wheels_fit() {
  [ "$(uname -m)" = x86_64 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 11), (3, 12)))'
}
for distro in ${NETLOOP_ROS2_DISTROS:-jazzy}; do
  req="requirements-ros2-$distro.txt"
  if [ ! -f "$req" ]; then
    echo "setup: no $req: ROS 2 '$distro' is not a distribution netloop pins (it has: $(ls requirements-ros2-*.txt | sed 's/requirements-ros2-//; s/\.txt//' | tr '\n' ' '))" >&2
    exit 1
  fi
  if ! ros2_wheels_fit; then
    echo "setup: warning: ROS 2 $distro's wheels are for x86_64 CPython 3.11/3.12; this is $(uname -m) with $(/usr/bin/python3 --version): no ROS 2 environment, so no rmw_fastrtps_cpp transport (netloop's own cyclonedds/fastdds/zenoh nodes remain)" >&2
    continue
  fi
  rvenv=".venv-ros2-$distro"
  if [ ! -x "$rvenv/bin/python" ]; then
    echo "setup: creating $rvenv from /usr/bin/python3 (ROS 2 $distro, without system site-packages)"
    /usr/bin/python3 -m venv "$rvenv"
  fi
  want_hash=$(sha256sum "$req" | cut -d' ' -f1)
  have_hash=$(cat "$rvenv/.requirements.sha256" 2>/dev/null || true)
  if [ "$want_hash" != "$have_hash" ]; then
    echo "setup: installing ROS 2 $distro's pinned wheels into $rvenv (about 250 MB)"
    env -u PYTHONPATH "$rvenv/bin/pip" install -q --disable-pip-version-check -r "$req"
    echo "$want_hash" > "$rvenv/.requirements.sha256"
  fi
done
echo "setup: all dependencies present"
