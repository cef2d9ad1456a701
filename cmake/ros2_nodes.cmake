# The nodes on ROS 2's middlewares (include/netloop/ros2/endpoint.h): netloop_ros2_nodes holds
# Endpoints, what rlc_plant, loop_controller, flow_source and flow_sink use for their crossing
# topics. Built always; with the library netloop_ros2 (cmake/ros2.cmake, where Cyclone DDS /
# Fast DDS / Zenoh are found) it is compiled with NETLOOP_HAVE_ROS2 and the nodes speak the
# middlewares this build has (`netloop_ros2_info` lists them); without it the nodes are
# roscpp only and refuse a ~middleware as a configuration error. The bridge (ros2_bridge)
# and netloop_ros2_info exist only with netloop_ros2.
add_library(netloop_ros2_nodes STATIC src/ros2/endpoint.cpp src/ros2/stage_trace.cpp)
set_target_properties(netloop_ros2_nodes PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_dependencies(netloop_ros2_nodes ${PROJECT_NAME}_generate_messages_cpp)
target_link_libraries(netloop_ros2_nodes netloop_core ${catkin_LIBRARIES} pthread)
if(TARGET netloop_ros2)
  target_compile_definitions(netloop_ros2_nodes PUBLIC NETLOOP_HAVE_ROS2)
  target_link_libraries(netloop_ros2_nodes netloop_ros2)
endif()

foreach(node rlc_plant loop_controller flow_source flow_sink)
  target_link_libraries(${node} netloop_ros2_nodes)
endforeach()

if(TARGET netloop_ros2 AND EXISTS ${PROJECT_SOURCE_DIR}/src/relays/ros2_bridge.cpp)
  # One bridge per host: ROS 1 topics <-> the middleware (src/relays/ros2_bridge.cpp).
  add_executable(ros2_bridge src/relays/ros2_bridge.cpp)
  target_link_libraries(ros2_bridge netloop_ros2_nodes netloop_relay_ros netloop_relay_wire netloop_core
    ${catkin_LIBRARIES} pthread)
  add_dependencies(ros2_bridge ${PROJECT_NAME}_generate_messages_cpp)
  install(TARGETS ros2_bridge RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
endif()
if(TARGET netloop_ros2)
  # One participant of a middleware, its samples back, and the libraries it mapped
  # (test/test_ros2_rmw_isolation.py: Fast DDS 2.9 and 2.14 never in one process).
  add_executable(ros2_mw_probe test/cpp/ros2_mw_probe.cpp)
  target_link_libraries(ros2_mw_probe netloop_ros2)
  # Prints the middlewares of this build, one per line (what the nodes accept as ~middleware).
  add_executable(netloop_ros2_info src/tools/netloop_ros2_info.cpp)
  target_link_libraries(netloop_ros2_info netloop_ros2)
  install(TARGETS netloop_ros2_info RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
  # A middleware's round trip through netloop's participant, each direction timed (make bench).
  add_executable(ros2_pingpong src/tools/ros2_pingpong.cpp)
  target_link_libraries(ros2_pingpong netloop_ros2)
else()
  message(STATUS "netloop: no netloop_ros2 library: the nodes are roscpp only, no ros2_bridge")
endif()

# The gtest of the nodes' endpoint plumbing (no ROS master needed) joins the package's C++ tests.
if(TARGET netloop_cpp_tests)
  target_sources(netloop_cpp_tests PRIVATE test/cpp/test_endpoint.cpp test/cpp/test_stage_trace.cpp)
  target_link_libraries(netloop_cpp_tests netloop_ros2_nodes)
endif()
