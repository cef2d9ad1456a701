# netloop_wifi_link: the ns-3 802.11a/g/n link emulator of the testbed (src/ns3/, main in
# wifi_link.cc), used by the link profiles of type ns3_wifi (wifi6, wifi6_2hop, wifi6_ap, wifi_g54, wifi_n_mcs7, ...). Built only when ns-3 3.37
# is installed (Debian 12: ns3 libns3-dev libgsl-dev); without it the other profiles work.
#
# The parts without ns-3 (options, control input, lag and stalls, the statistics lines, the
# DSCP -> 802.11 user priority mapping) are the library netloop_wifi_logic, built always: its
# gtests (test/cpp/test_wifi_link.cpp, test_user_priority.cpp) join the package's C++ test binary.
add_library(netloop_wifi_logic STATIC
  src/ns3/wifi_options.cc src/ns3/control_input.cc src/ns3/lag_tracker.cc src/ns3/wifi_stats.cc
  src/ns3/user_priority.cc src/ns3/nfqueue.cc src/ns3/nic_queue.cc)
target_include_directories(netloop_wifi_logic PUBLIC ${PROJECT_SOURCE_DIR}/src/ns3)
if(TARGET netloop_cpp_tests)
  target_sources(netloop_cpp_tests PRIVATE test/cpp/test_wifi_link.cpp test/cpp/test_user_priority.cpp
    test/cpp/test_wifi_gate.cpp)
  target_link_libraries(netloop_cpp_tests netloop_wifi_logic)
endif()

find_package(ns3 3.37 QUIET)
if(ns3_FOUND)
  add_executable(netloop_wifi_link
    src/ns3/wifi_link.cc src/ns3/wifi_channel.cc src/ns3/wifi_topology.cc src/ns3/node_traces.cc
    src/ns3/background_traffic.cc src/ns3/link_monitor.cc
    src/ns3/station_presence.cc src/ns3/qos_classifier.cc src/ns3/host_nic.cc)
  target_link_libraries(netloop_wifi_link netloop_wifi_logic
    ns3::libwifi ns3::libtap-bridge ns3::libinternet ns3::libmobility ns3::libnetwork ns3::libcore)
  # The program replaces libc's execlp for ns-3's TapBridge (see wifi_link.cc's header): keep the
  # symbol exported from the executable.
  set_target_properties(netloop_wifi_link PROPERTIES
    ENABLE_EXPORTS ON
    RUNTIME_OUTPUT_DIRECTORY ${CATKIN_DEVEL_PREFIX}/lib/${PROJECT_NAME})
  # Debian installs the tap-creator helper here; the path compiled into libns3 is wrong.
  find_program(NETLOOP_TAP_CREATOR ns3.37-tap-creator
    PATHS /usr/libexec/ns3 /usr/lib/ns3 /usr/local/libexec/ns3 NO_DEFAULT_PATH)
  if(NETLOOP_TAP_CREATOR)
    target_compile_definitions(netloop_wifi_link PRIVATE
      NETLOOP_TAP_CREATOR_DEFAULT="${NETLOOP_TAP_CREATOR}")
  endif()
  install(TARGETS netloop_wifi_link RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
else()
  message(STATUS "ns-3 3.37 not found: netloop_wifi_link (the ns3_wifi link profiles) "
                 "is not built; install ns3 libns3-dev libgsl-dev")
endif()
