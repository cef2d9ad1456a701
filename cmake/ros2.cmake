# ROS 2's middlewares (issue 25): libnetloop_ros2 = the CDR conversion, ROS 2 names, QoS profiles
# and the middleware registry, plus one backend per middleware library found at build time
# (Debian: cyclonedds-dev -> cyclonedds, libfastrtps-dev + libfastcdr-dev -> fastdds, a plug-in;
# zenoh is added by cmake/zenoh.cmake, rmw_fastrtps_cpp by cmake/ros2_rmw.cmake, a plug-in). A
# backend registers itself from its own .cpp (src/ros2/registry.h), so the library is SHARED;
# availableMiddlewares() lists what this build has, plug-ins included.
find_package(CycloneDDS QUIET)
find_package(fastcdr QUIET)
find_package(fastrtps QUIET)

add_library(netloop_ros2 SHARED
  src/ros2/cdr_definition.cpp
  src/ros2/cdr_encode.cpp
  src/ros2/cdr_decode.cpp
  src/ros2/names.cpp
  src/ros2/zenoh_tokens.cpp
  src/ros2/qos.cpp
  src/ros2/factory.cpp)
target_include_directories(netloop_ros2 PUBLIC ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(netloop_ros2 pthread)
set(NETLOOP_ROS2_MIDDLEWARES "")

if(TARGET CycloneDDS::ddsc)
  target_sources(netloop_ros2 PRIVATE src/ros2/cyclonedds.cpp src/ros2/cyclonedds_sertype.cpp
    src/ros2/cyclonedds_endpoints.cpp)
  target_link_libraries(netloop_ros2 CycloneDDS::ddsc)
  list(APPEND NETLOOP_ROS2_MIDDLEWARES cyclonedds)
  target_compile_definitions(netloop_ros2 PUBLIC NETLOOP_ROS2_HAVE_CYCLONEDDS=1)
else()
  message(STATUS "netloop: Cyclone DDS not found (Debian: cyclonedds-dev): no cyclonedds middleware")
endif()

if(TARGET fastrtps AND TARGET fastcdr)
  # A plug-in loaded only when asked for (src/ros2/factory.cpp): Fast DDS 2.9's C++ symbols are
  # also those of the rmw_fastrtps_cpp middleware's Fast DDS 2.14 (cmake/ros2_rmw.cmake).
  add_library(netloop_ros2_mw_fastdds MODULE src/ros2/fastdds.cpp)
  target_link_libraries(netloop_ros2_mw_fastdds netloop_ros2 fastrtps fastcdr)
  set_target_properties(netloop_ros2_mw_fastdds PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CATKIN_DEVEL_PREFIX}/lib)
  install(TARGETS netloop_ros2_mw_fastdds LIBRARY DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION})
  list(APPEND NETLOOP_ROS2_MIDDLEWARES fastdds)
  target_compile_definitions(netloop_ros2 PUBLIC NETLOOP_ROS2_HAVE_FASTDDS=1)
else()
  message(STATUS "netloop: Fast DDS not found (Debian: libfastrtps-dev libfastcdr-dev): no fastdds middleware")
endif()

string(REPLACE ";" "," _netloop_ros2_list "${NETLOOP_ROS2_MIDDLEWARES}")
target_compile_definitions(netloop_ros2 PRIVATE NETLOOP_ROS2_BUILT_WITH="${_netloop_ros2_list}")
message(STATUS "netloop: ROS 2 middlewares built in netloop_ros2: ${_netloop_ros2_list}")

install(TARGETS netloop_ros2
  ARCHIVE DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION}
  LIBRARY DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION})

# The gtests of test/cpp/test_ros2_*.cpp join the package's C++ test binary (every middleware
# the build has; a test for a middleware missing from the build skips itself).
if(TARGET netloop_cpp_tests)
  file(GLOB NETLOOP_ROS2_TESTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/test/cpp/test_ros2_*.cpp)
  target_sources(netloop_cpp_tests PRIVATE ${NETLOOP_ROS2_TESTS})
  target_link_libraries(netloop_cpp_tests netloop_ros2 ${catkin_LIBRARIES})
  add_dependencies(netloop_cpp_tests ${PROJECT_NAME}_generate_messages_cpp)
  # ROS 2's IDL of a few types compiled by Cyclone's idlc (cyclonedds-tools): an independent
  # type support for test_ros2_interop.cpp.
  find_program(NETLOOP_IDLC idlc)
  if(TARGET CycloneDDS::ddsc AND NETLOOP_IDLC AND COMMAND idlc_generate)
    idlc_generate(TARGET netloop_ros2_interop_idl FILES ${PROJECT_SOURCE_DIR}/test/cpp/ros2_idl/netloop_ros2_interop.idl
      DEFAULT_EXTENSIBILITY final)
    target_link_libraries(netloop_cpp_tests netloop_ros2_interop_idl)
    target_compile_definitions(netloop_cpp_tests PRIVATE NETLOOP_ROS2_INTEROP_IDL=1)
  endif()
endif()
