# Relay transports: nimbro-like UDP/TCP topic relays and the Pound priority relay
# (src/relays/), on a ROS-free wire library, one file per job (src/relays/wire/: formats,
# datagrams, reassembly, stream frames, type announcements, compression, priority queue,
# pacing) that the gtest below and the libFuzzer target in test/fuzz/ exercise
# (test/fuzz/run_fuzz.sh builds that one with clang from src/relays/wire/*.cpp;
# test/test_transport_fuzz.py runs it for a bounded time). Needs zlib (Debian: zlib1g-dev).
find_package(ZLIB REQUIRED)

add_library(netloop_relay_wire
  src/relays/wire/format.cpp
  src/relays/wire/packet.cpp
  src/relays/wire/reassembly.cpp
  src/relays/wire/stream_frame.cpp
  src/relays/wire/type_info.cpp
  src/relays/wire/compression.cpp
  src/relays/wire/priority_queue.cpp
  src/relays/wire/pacer.cpp)
target_include_directories(netloop_relay_wire PUBLIC ${PROJECT_SOURCE_DIR}/src/relays)
target_link_libraries(netloop_relay_wire ZLIB::ZLIB)

# The ROS side the relays share: parameters, sockets, republishing, statistics
# (netloop/RelayStats), the UDP receive loop, the priority relay's hosts, backpressure
# (SIOCOUTQ) and per-datagram DSCP.
add_library(netloop_relay_ros src/relays/relay_ros.cpp src/relays/relay_stats.cpp src/relays/udp_receive_loop.cpp
  src/relays/relay_hosts.cpp src/relays/backpressure.cpp src/relays/dscp_send.cpp)
target_link_libraries(netloop_relay_ros netloop_relay_wire netloop_core ${catkin_LIBRARIES} pthread)
add_dependencies(netloop_relay_ros ${PROJECT_NAME}_generate_messages_cpp)

install(TARGETS netloop_relay_wire netloop_relay_ros
  ARCHIVE DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION}
  LIBRARY DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION})

# nimbro_topic_transport's scheme, one node per role (as upstream's udp_sender, udp_receiver,
# tcp_sender, tcp_receiver), on what the roles share: a node's life and statistics, the senders'
# and the receivers' common parts.
add_library(netloop_nimbro_relay src/relays/nimbro_role.cpp src/relays/nimbro_sender.cpp
  src/relays/nimbro_receiver.cpp)
target_link_libraries(netloop_nimbro_relay netloop_relay_ros netloop_relay_wire netloop_core ${catkin_LIBRARIES}
  pthread)
add_dependencies(netloop_nimbro_relay ${PROJECT_NAME}_generate_messages_cpp)
install(TARGETS netloop_nimbro_relay
  ARCHIVE DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION}
  LIBRARY DESTINATION ${CATKIN_PACKAGE_LIB_DESTINATION})

foreach(node nimbro_udp_sender nimbro_tcp_sender nimbro_udp_receiver nimbro_tcp_receiver priority_relay)
  add_executable(${node} src/relays/${node}.cpp)
  if(node MATCHES "^nimbro_")
    target_link_libraries(${node} netloop_nimbro_relay)
  endif()
  target_link_libraries(${node} netloop_relay_ros netloop_relay_wire netloop_core ${catkin_LIBRARIES} pthread)
  add_dependencies(${node} ${PROJECT_NAME}_generate_messages_cpp)
  install(TARGETS ${node} RUNTIME DESTINATION ${CATKIN_PACKAGE_BIN_DESTINATION})
endforeach()

# The wire library's gtest joins the package's C++ test binary (run by `make test-cpp`).
if(TARGET netloop_cpp_tests)
  target_sources(netloop_cpp_tests PRIVATE src/relays/test_relay_wire.cpp)
  target_link_libraries(netloop_cpp_tests netloop_relay_wire)
endif()
