#include "netloop/transport.h"

#include <stdexcept>

namespace netloop {

Transport parseTransport(const std::string& name) {
  if (name == "tcp") return Transport::Tcp;
  if (name == "tcp_nodelay") return Transport::TcpNoDelay;
  if (name == "udp") return Transport::Udp;
  throw std::invalid_argument("unknown transport '" + name + "'; allowed: tcp, tcp_nodelay, udp");
}

std::string transportName(Transport t) {
  switch (t) {
    case Transport::Tcp: return "tcp";
    case Transport::TcpNoDelay: return "tcp_nodelay";
    case Transport::Udp: return "udp";
  }
  return "?";
}

ros::TransportHints transportHints(Transport t, int max_datagram) {
  switch (t) {
    case Transport::Tcp: return ros::TransportHints().tcp();
    case Transport::TcpNoDelay: return ros::TransportHints().tcp().tcpNoDelay();
    case Transport::Udp: return ros::TransportHints().unreliable().maxDatagramSize(max_datagram);
  }
  throw std::invalid_argument("bad transport");
}

}  // namespace netloop
