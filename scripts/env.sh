# Sourced by bin/netloop and the Makefile: the ROS environment of this package.
# ROS Noetic (/opt/ros/noetic) is sourced when installed; Debian's ROS packages need nothing.
# Then the package's catkin devel space, so roslaunch/rosrun find `netloop`.
_netloop_root=$(cd "$(dirname "${BASH_SOURCE:-$0}")/.." 2>/dev/null && pwd)
[ -n "${NETLOOP_ROOT:-}" ] && _netloop_root=$NETLOOP_ROOT
if [ -f /opt/ros/noetic/setup.sh ] && [ -z "${ROS_DISTRO:-}" ]; then
  . /opt/ros/noetic/setup.sh
fi
if [ -f "$_netloop_root/.build/ws/devel/setup.sh" ]; then
  _CATKIN_SETUP_DIR="$_netloop_root/.build/ws/devel" . "$_netloop_root/.build/ws/devel/setup.sh"
fi
export PATH="/usr/bin:$PATH"
export PYTHONPATH="$_netloop_root/src${PYTHONPATH:+:$PYTHONPATH}"
unset _netloop_root
