# The zenoh middleware of libnetloop_ros2 (issue 25): src/ros2/zenoh.cpp over netloop's C shim,
# src/zenoh_shim, a Rust static library over the `zenoh` crate (Eclipse Zenoh 1.10). cargo builds
# the shim before catkin_make (scripts/build.sh: `cargo build --release` in .build/zenoh-target)
# and gives its path, or none when cargo failed; this part only links what it is given. Zenoh 1.10
# needs Rust >= 1.75 (rustup's toolchain, Debian 12's cargo-web; Debian 12's rustc 1.63 is too old):
# without the shim the build has no zenoh middleware, availableMiddlewares() does not list it and
# the Python side refuses `zenoh`.
set(NETLOOP_ZENOH_SHIM_LIB "${PROJECT_SOURCE_DIR}/.build/zenoh-target/release/libnetloop_zenoh_shim.a"
    CACHE FILEPATH "netloop's Zenoh shim (cargo build --release in src/zenoh_shim)")

if(NOT TARGET netloop_ros2)
  message(STATUS "netloop: no netloop_ros2 library: no zenoh middleware")
elseif(NOT NETLOOP_ZENOH_SHIM_LIB)
  message(WARNING "netloop: no Zenoh shim given (scripts/build.sh gives it once cargo has built it): "
                  "libnetloop_ros2 has no zenoh middleware")
elseif(NOT EXISTS "${NETLOOP_ZENOH_SHIM_LIB}")
  # Configure again once cargo has put the library there (the folder changes then).
  get_filename_component(_netloop_zenoh_dir "${NETLOOP_ZENOH_SHIM_LIB}" DIRECTORY)
  file(MAKE_DIRECTORY "${_netloop_zenoh_dir}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_netloop_zenoh_dir}")
  message(WARNING "netloop: the Zenoh shim is not built (${NETLOOP_ZENOH_SHIM_LIB} is missing; scripts/build.sh "
                  "builds it with cargo, Rust >= 1.75): libnetloop_ros2 has no zenoh middleware")
else()
  target_sources(netloop_ros2 PRIVATE src/ros2/zenoh.cpp)
  target_include_directories(netloop_ros2 PRIVATE ${PROJECT_SOURCE_DIR}/src/zenoh_shim ${PROJECT_SOURCE_DIR}/src/ros2)
  # The Rust runtime's system libraries; the shim's symbols stay inside libnetloop_ros2.so.
  target_link_libraries(netloop_ros2 "${NETLOOP_ZENOH_SHIM_LIB}" pthread dl m)
  target_link_options(netloop_ros2 PRIVATE "LINKER:--exclude-libs,libnetloop_zenoh_shim.a")
  target_compile_definitions(netloop_ros2 PUBLIC NETLOOP_ROS2_HAVE_ZENOH=1)
  message(STATUS "netloop: zenoh middleware built in netloop_ros2 (shim: ${NETLOOP_ZENOH_SHIM_LIB})")

  # A small publisher for the test that an independent Zenoh peer (the eclipse-zenoh Python
  # package) receives what netloop publishes (test/test_ros2_zenoh_peer.py).
  add_executable(ros2_zenoh_pub test/cpp/ros2_zenoh_pub.cpp)
  target_link_libraries(ros2_zenoh_pub netloop_ros2)
  set_target_properties(ros2_zenoh_pub PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CATKIN_DEVEL_PREFIX}/lib/${PROJECT_NAME})
endif()
