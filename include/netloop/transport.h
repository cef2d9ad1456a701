// The standard ROS transports a subscriber of this package can ask for, by name.
//
//   tcp          TCPROS, Nagle's algorithm left on (ROS's default)
//   tcp_nodelay  TCPROS with TCP_NODELAY (the publisher sets it because the subscriber asks)
//   udp          UDPROS (roscpp only), datagrams of at most `max_datagram` bytes
#pragma once

#include <ros/transport_hints.h>

#include <string>

namespace netloop {

enum class Transport { Tcp, TcpNoDelay, Udp };

/// Parses a transport name; throws std::invalid_argument listing the allowed names.
Transport parseTransport(const std::string& name);

/// The canonical name of a transport ("tcp", "tcp_nodelay", "udp").
std::string transportName(Transport t);

/// Transport hints that request exactly this transport (no fallback to another one).
ros::TransportHints transportHints(Transport t, int max_datagram = 1400);

}  // namespace netloop
