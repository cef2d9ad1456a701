# Embedded simulator and teleoperation's tools: the Python nodes in nodes/ (the operator's; the
# teleop trial, which a robot runs too, is cmake/teleop_trial.cmake).

# Listed (not globbed) so that adding a node changes this file, which makes catkin_make
# re-run CMake and create the node's devel-space relay.
catkin_install_python(PROGRAMS
  nodes/sim_node.py
  nodes/gazebo_bridge.py
  nodes/keyboard_teleop.py
  DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
