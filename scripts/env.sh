# Sourced by bin/netloop and the Makefile: the ROS environment of this package.
# ROS Noetic (/opt/ros/noetic) is sourced when installed; Debian's ROS packages need nothing.
# Then the package's catkin devel space, so roslaunch/rosrun find `netloop`.
_netloop_root=$(cd "$(dirname "${BASH_SOURCE:-$0}")/.." 2>/dev/null && pwd)
[ -n "${NETLOOP_ROOT:-}" ] && _netloop_root=$NETLOOP_ROOT
if [ -f /opt/ros/noetic/setup.sh ] && [ -z "${ROS_DISTRO:-}" ]; then
  . /opt/ros/noetic/setup.sh
fi
# NETLOOP_WORKSPACE: a user's catkin workspace holding netloop (a hosts file's `workspace:`), its
# devel space, else its install space, instead of this checkout's .build/ws.
if [ -n "${NETLOOP_WORKSPACE:-}" ] && [ -f "$NETLOOP_WORKSPACE/devel/setup.sh" ]; then
  _CATKIN_SETUP_DIR="$NETLOOP_WORKSPACE/devel" . "$NETLOOP_WORKSPACE/devel/setup.sh"
elif [ -n "${NETLOOP_WORKSPACE:-}" ] && [ -f "$NETLOOP_WORKSPACE/install/setup.sh" ]; then
  _CATKIN_SETUP_DIR="$NETLOOP_WORKSPACE/install" . "$NETLOOP_WORKSPACE/install/setup.sh"
elif [ -f "$_netloop_root/.build/ws/devel/setup.sh" ]; then
  _CATKIN_SETUP_DIR="$_netloop_root/.build/ws/devel" . "$_netloop_root/.build/ws/devel/setup.sh"
fi
export PATH="/usr/bin:$PATH"
export PYTHONPATH="$_netloop_root/src${PYTHONPATH:+:$PYTHONPATH}"
unset _netloop_root
