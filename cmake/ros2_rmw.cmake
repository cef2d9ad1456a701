# Real ROS 2 as a middleware (issue 36): the plug-in libnetloop_ros2_mw_rmw_fastrtps_cpp.so, the
# nodes as rcl nodes of the ROS 2 environment scripts/setup.sh installs (.venv-ros2-<distro>:
# PyPI's ros-<distro>-* wheels, rcl and rmw_fastrtps_cpp with Fast DDS 2.14). scripts/build.sh
# passes those environments as NETLOOP_ROS2_PREFIXES; the first (Jazzy) is used. A plug-in,
# loaded by name only when a node asks for it (src/ros2/factory.cpp), never in the same process
# as the fastdds backend's Fast DDS 2.9. Without an environment: no rmw_fastrtps_cpp middleware.
set(NETLOOP_ROS2_PREFIXES "" CACHE STRING "ROS 2 environments (scripts/setup.sh's .venv-ros2-<distro>), ;-separated")
list(LENGTH NETLOOP_ROS2_PREFIXES _netloop_ros2_n)
if(NOT TARGET netloop_ros2)
  message(STATUS "netloop: no netloop_ros2 library: no rmw_fastrtps_cpp middleware")
elseif(_netloop_ros2_n EQUAL 0)
  message(STATUS "netloop: no ROS 2 environment (NETLOOP_ROS2_PREFIXES; scripts/setup.sh makes it): no rmw_fastrtps_cpp middleware")
else()
  list(GET NETLOOP_ROS2_PREFIXES 0 _ros2)
  if(NOT EXISTS "${_ros2}/lib/librcl.so")
    message(FATAL_ERROR "netloop: ${_ros2} has no lib/librcl.so: not a ROS 2 environment (run scripts/setup.sh)")
  endif()
  # The wheels' headers: include/<package>/<package>/... (and include/<name>/ for Fast DDS's own).
  file(GLOB _ros2_includes LIST_DIRECTORIES true "${_ros2}/include/*")
  list(FILTER _ros2_includes EXCLUDE REGEX "/(fastcdr|fastrtps|fastdds|python3\\.[0-9]+|std_msgs|sensor_msgs|geometry_msgs|netloop)$")
  # Where the wheels' libraries and their bundled dependencies are (site-packages/ros_*.libs).
  file(GLOB _ros2_bundled LIST_DIRECTORIES true "${_ros2}/lib/python3.*/site-packages/ros_*.libs")
  # The wheels' librcl.so needs their messages' Python support libraries, whose Python C API
  # symbols the interpreter provides under rclpy: outside Python, libpython (never initialised)
  # provides them. The environment's Python version names it.
  file(GLOB _ros2_site LIST_DIRECTORIES true "${_ros2}/lib/python3.*")
  list(GET _ros2_site 0 _ros2_site)
  get_filename_component(_ros2_python "${_ros2_site}" NAME)
  find_library(NETLOOP_ROS2_LIBPYTHON NAMES ${_ros2_python} lib${_ros2_python}.so.1.0)
  if(NOT NETLOOP_ROS2_LIBPYTHON)
    message(FATAL_ERROR "netloop: lib${_ros2_python}.so not found (Debian: lib${_ros2_python}-dev), which rcl's wheels need")
  endif()
  add_library(netloop_ros2_mw_rmw_fastrtps_cpp MODULE src/ros2/rcl.cpp)
  target_include_directories(netloop_ros2_mw_rmw_fastrtps_cpp PRIVATE ${PROJECT_SOURCE_DIR}/src/ros2 ${_ros2_includes})
  target_compile_definitions(netloop_ros2_mw_rmw_fastrtps_cpp PRIVATE NETLOOP_ROS2_PREFIX="${_ros2}")
  target_link_directories(netloop_ros2_mw_rmw_fastrtps_cpp PRIVATE "${_ros2}/lib")
  target_link_libraries(netloop_ros2_mw_rmw_fastrtps_cpp netloop_ros2 rcl rmw rcutils rosidl_runtime_c
    -Wl,--no-as-needed ${NETLOOP_ROS2_LIBPYTHON} -Wl,--as-needed dl pthread)
  # DT_RPATH (not RUNPATH): it also serves the libraries these load (rcl's rmw and type supports).
  string(REPLACE ";" ":" _ros2_rpath "${_ros2}/lib;${_ros2_bundled}")
  target_link_options(netloop_ros2_mw_rmw_fastrtps_cpp PRIVATE "LINKER:--disable-new-dtags")
  set_target_properties(netloop_ros2_mw_rmw_fastrtps_cpp PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CATKIN_DEVEL_PREFIX}/lib
    BUILD_RPATH "${_ros2_rpath}" INSTALL_RPATH "${_ros2_rpath}")
  # Tells the C++ tests this build has the plug-in (test_ros2_cdr.cpp's registry order).
  target_compile_definitions(netloop_ros2 PUBLIC NETLOOP_ROS2_HAVE_RMW_FASTRTPS_CPP=1)
  install(TARGETS netloop_ros2_mw_rmw_fastrtps_cpp LIBRARY DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION})
  message(STATUS "netloop: rmw_fastrtps_cpp middleware (rcl of ${_ros2})")
endif()
