# Embedded simulator and teleoperation: the scripted teleop trial (roscpp, so its
# odometry subscription can use UDPROS) and the Python nodes in nodes/.
# nav_msgs / geometry_msgs are header-only message packages found with roscpp's include path
# (Debian ships no nav_msgsConfig.cmake, so they are not find_package()d here).
add_executable(teleop_trial controllers/teleop_trial.cpp)
target_link_libraries(teleop_trial netloop_core ${catkin_LIBRARIES})
add_dependencies(teleop_trial ${PROJECT_NAME}_generate_messages_cpp)
install(TARGETS teleop_trial RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})

# Listed (not globbed) so that adding a node changes this file, which makes catkin_make
# re-run CMake and create the node's devel-space relay.
catkin_install_python(PROGRAMS
  nodes/sim_node.py
  nodes/gazebo_bridge.py
  nodes/keyboard_teleop.py
  DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
