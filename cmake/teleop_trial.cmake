# The scripted teleop trial (roscpp, so its odometry subscription can use UDPROS). Built on a
# robot too (not in NETLOOP_OPERATOR_PARTS): the car experiment's local baseline runs it on the car.
# nav_msgs / geometry_msgs are header-only message packages found with roscpp's include path
# (Debian ships no nav_msgsConfig.cmake, so they are not find_package()d here).
add_executable(teleop_trial controllers/teleop_trial.cpp)
target_link_libraries(teleop_trial netloop_core ${catkin_LIBRARIES})
add_dependencies(teleop_trial ${PROJECT_NAME}_generate_messages_cpp)
install(TARGETS teleop_trial RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
