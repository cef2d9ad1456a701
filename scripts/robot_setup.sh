#!/usr/bin/env bash
# Installs what a robot needs and is missing (`make robot` runs it, then scripts/build.sh --robot);
# a second run installs nothing. Only what runs on a robot: ROS 1's roscpp, rospy and roslaunch
# with the message packages the nodes use, a C++ compiler and CMake for the loop, flow and relay
# nodes, the robot-side Python's PyYAML, and the car's libraries (I2C, GPIO, the USB camera).
# No ns-3, ROS 2 middlewares, Rust, simulator, plotting or test tools.
#   - Raspberry Pi OS bookworm / Debian 12: Debian's ROS 1 packages.
#   - Ubuntu 20.04 with ROS Noetic in /opt/ros/noetic: Noetic's packages (ros-noetic-*) instead.
#   - .venv: a light virtual environment made from /usr/bin/python3 with --system-site-packages
#     (apt's packages stay visible); it holds only the car libraries of requirements-robot.txt that
#     apt does not provide (none on Debian 12). The robot's nodes run with its Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

common=(build-essential cmake zlib1g-dev python3-venv python3-yaml python3-numpy procps)
# What the robot's nodes need at run time besides: rosbag (a LIDAR flow's `rosbag play`),
# topic_tools' relay (the `udp` transport's relays of the teleop loop), nav_msgs' and geometry_msgs'
# headers (the teleop trial, the car experiment's local baseline, is built there).
ros_debian=(catkin libroscpp-dev ros-message-generation ros-message-runtime libstd-msgs-dev ros-std-msgs libsensor-msgs-dev
  libgeometry-msgs-dev libnav-msgs-dev libtopic-tools-dev topic-tools python3-rosbag python3-rospy python3-roslaunch
  python3-rosmaster python3-std-msgs python3-sensor-msgs python3-geometry-msgs python3-nav-msgs python3-catkin-pkg)
ros_noetic=(ros-noetic-ros-core ros-noetic-message-generation ros-noetic-message-runtime ros-noetic-std-msgs
  ros-noetic-sensor-msgs ros-noetic-geometry-msgs ros-noetic-nav-msgs ros-noetic-topic-tools ros-noetic-rosbag)
# The car (car_driver/hardware.py): smbus2 for the PCA9685, lgpio or gpiozero for the motor pins,
# i2c-tools to see the board. Installed where apt has them; a Python library apt lacks comes from
# requirements-robot.txt into .venv. The USB camera needs OpenCV, whose Debian package brings
# about 1.4 GB of libraries (GDAL, VTK, Qt): only with CAMERA=1 (`make robot CAMERA=1`).
# Pillow encodes the camera's JPEG where OpenCV is not installed (the fake camera, CAMERA=0).
car=(python3-smbus2 python3-lgpio python3-gpiozero i2c-tools python3-pil)
[ "${CAMERA:-0}" = 1 ] && car+=(python3-opencv)

if [ -f /opt/ros/noetic/setup.sh ]; then
  echo "robot_setup: ROS Noetic found in /opt/ros/noetic; using its packages instead of Debian's ROS packages"
  wanted=("${common[@]}" "${ros_noetic[@]}")
else
  wanted=("${common[@]}" "${ros_debian[@]}")
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
known() { apt-cache show "$1" >/dev/null 2>&1; }
missing=()
for pkg in "${wanted[@]}"; do installed "$pkg" || missing+=("$pkg"); done
optional=()   # the car's packages not installed yet: only those this system's apt has
for pkg in "${car[@]}"; do installed "$pkg" || optional+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ] || [ ${#optional[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO=sudo; else SUDO=none; fi
  else SUDO=""; fi
  # apt's lists are read (and fetched when something required is missing, or none are there yet)
  if [ ${#missing[@]} -gt 0 ] || ! known apt; then
    if [ "$SUDO" = none ]; then
      echo "robot_setup: these packages are missing and installing them needs root: ${missing[*]} ${optional[*]}" >&2
      exit 1
    fi
    $SUDO apt-get update -q
  fi
  for pkg in "${optional[@]}"; do
    if known "$pkg"; then missing+=("$pkg"); else echo "robot_setup: apt has no $pkg here (skipped)"; fi
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$SUDO" = none ]; then
    echo "robot_setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  echo "robot_setup: installing packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  echo "robot_setup: creating $venv from /usr/bin/python3 (with system site-packages)"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# requirements-robot.txt: a line whose module is importable (from apt) is left out; the others are
# installed with their hashes checked (--require-hashes: a file PyPI serves that differs from the
# one pinned is refused) and no dependency but those listed (--no-deps)
want=()
while read -r line; do
  spec=${line%%#*}; spec=$(sed 's/^[[:space:]]*//; s/[[:space:]]*$//' <<<"$spec")
  [ -n "$spec" ] || continue
  name=${spec%%[=[:space:]]*}
  module=$(sed -n 's/.*#[[:space:]]*\([A-Za-z0-9_]*\):.*/\1/p' <<<"$line")
  "$venv/bin/python" -c "import ${module:-$name}" 2>/dev/null || want+=("$spec")
done < requirements-robot.txt
if [ ${#want[@]} -gt 0 ]; then
  echo "robot_setup: installing into $venv from PyPI (hashes checked): ${want[*]%% *}"
  wanted=$(mktemp)
  printf '%s\n' "${want[@]}" > "$wanted"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes --no-deps -r "$wanted" ||
    { rm -f "$wanted"; exit 1; }
  rm -f "$wanted"
fi
echo "robot_setup: all dependencies present"
