#include "netloop/socket_marking.h"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "netloop/loop_node.h"
#include "netloop/process_sockets.h"

namespace netloop {

int dscpFromName(const std::string& name) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  static const std::map<std::string, int> kNamed = {{"EF", 46}, {"VA", 44}};
  if (auto it = kNamed.find(up); it != kNamed.end()) return it->second;
  if (up.size() == 3 && up.compare(0, 2, "CS") == 0 && up[2] >= '0' && up[2] <= '7') return (up[2] - '0') << 3;
  if (up.size() == 4 && up.compare(0, 2, "AF") == 0 && up[2] >= '1' && up[2] <= '4' && up[3] >= '1' &&
      up[3] <= '3') {
    return ((up[2] - '0') << 3) | ((up[3] - '0') << 1);
  }
  if (!up.empty() && up.size() <= 2 && std::all_of(up.begin(), up.end(), ::isdigit)) {
    const int v = std::atoi(up.c_str());
    return v <= 63 ? v : -1;
  }
  return -1;
}

int socketPriorityFor(int dscp) {
  if (dscp >= 48) return 7;
  if (dscp >= 40) return 6;
  return dscp >> 3;
}

namespace {

/// Sets the traffic class and priority of one IP socket; false when a setsockopt failed.
bool markSocket(int fd, int domain, int dscp) {
  const int tos = dscp << 2, priority = socketPriorityFor(dscp);
  const int rc = domain == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos)
                                   : setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
  // after IP_TOS, which on older kernels also sets the priority from the TOS
  return rc == 0 && setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof priority) == 0;
}

}  // namespace

MarkCount markProcessSockets(int dscp) {
  MarkCount count;
  forEachIpSocket([&](int fd, int domain) { ++(markSocket(fd, domain, dscp) ? count.marked : count.failed); });
  return count;
}

int requireDscp(const ros::NodeHandle& pnh) {
  XmlRpc::XmlRpcValue raw;
  if (!pnh.getParam("dscp", raw)) return -1;
  const bool is_text = raw.getType() == XmlRpc::XmlRpcValue::TypeString;
  const std::string text = is_text ? static_cast<std::string>(raw) : "";
  if (is_text && (text.empty() || text == "none")) return -1;
  const int dscp = raw.getType() == XmlRpc::XmlRpcValue::TypeInt ? static_cast<int>(raw)
                   : is_text                                      ? dscpFromName(text)
                                                                  : -1;
  if (dscp < 0 || dscp > 63) {
    exitWithConfigError("parameter " + pnh.resolveName("dscp") +
                        " must be none, an integer 0..63 or a name (EF, VA, CS0..CS7, AF11..AF43)");
  }
  return dscp;
}

SocketMarking::SocketMarking(ros::NodeHandle& nh, int dscp, double period) : dscp_(dscp) {
  if (dscp_ < 0) return;
  markNow();
  timer_ = nh.createSteadyTimer(ros::WallDuration(period), [this](const ros::SteadyTimerEvent&) { markNow(); });
}

void SocketMarking::markNow() {
  if (dscp_ < 0) return;
  const MarkCount c = markProcessSockets(dscp_);
  if (c.failed > 0 && !warned_) {
    warned_ = true;
    ROS_WARN("%s: %d of %d sockets could not be marked with DSCP %d / priority %d (SO_PRIORITY above 6 needs "
             "CAP_NET_ADMIN)", ros::this_node::getName().c_str(), c.failed, c.marked + c.failed, dscp_,
             socketPriorityFor(dscp_));
  }
}

}  // namespace netloop
