// Marking a node's own sockets with a DSCP, without changing ROS.
//
// roscpp opens its TCPROS / UDPROS sockets itself and offers no hook to set their options,
// so a node marks what it owns: every IPv4 (and IPv6) socket of the process, found by walking
// /proc/self/fd, gets IP_TOS = dscp << 2 (IPV6_TCLASS for IPv6) and the socket priority
// SO_PRIORITY of socketPriorityFor(dscp). Connections made later are marked by the next
// pass of a timer (SocketMarking: at once, then every `period`, 0.2 s by default), so the
// first packets of a connection (handshake, header exchange) may leave unmarked.
//
// What the marks do: the testbed hosts' htb serves EF, CS6 and CS7 first (a strict-priority
// band, src/netloop/testbed/links.py); a Linux Wi-Fi NIC (mac80211) picks the 802.11e access
// category from the DSCP (EF -> AC_VO); a pfifo_fast qdisc picks its band from SO_PRIORITY.
#pragma once

#include <ros/ros.h>

#include <string>

namespace netloop {

/// The DSCP of a name: EF, CS0..CS7, AF11..AF43, VA (case-insensitive), or a number 0..63;
/// -1 when it is none of these.
int dscpFromName(const std::string& name);

/// The SO_PRIORITY a marked socket gets: 6 (TC_PRIO_INTERACTIVE) for EF, VA and CS5, 7
/// (TC_PRIO_CONTROL) for CS6 and CS7, else the class (dscp >> 3, e.g. 4 for AF41).
int socketPriorityFor(int dscp);

/// What one marking pass did.
struct MarkCount {
  int marked = 0;  // IP sockets whose IP_TOS / IPV6_TCLASS and SO_PRIORITY were set
  int failed = 0;  // IP sockets where a setsockopt failed (e.g. SO_PRIORITY 7 without CAP_NET_ADMIN)
};

/// Marks every IP socket the process holds now with `dscp` (0..63).
MarkCount markProcessSockets(int dscp);

/// The private parameter ~dscp: absent, "" or "none" -> -1 (no marking); an integer 0..63
/// or a name of dscpFromName; exits the node with a message naming the parameter otherwise.
int requireDscp(const ros::NodeHandle& pnh);

/// Marks the process's sockets with `dscp` at construction and every `period` seconds after
/// (nothing when dscp < 0). Runs on the node's global callback queue.
class SocketMarking {
 public:
  SocketMarking(ros::NodeHandle& nh, int dscp, double period = 0.2);
  /// One pass now (e.g. right after the node's connections are made).
  void markNow();

 private:
  int dscp_;
  bool warned_ = false;
  ros::SteadyTimer timer_;
};

}  // namespace netloop
