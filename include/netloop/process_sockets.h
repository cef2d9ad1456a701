// The process's own IP sockets, and what the kernel still holds of what they sent.
//
// roscpp opens its TCPROS / UDPROS sockets itself, so a node that needs to know about them
// walks /proc/self/fd: socket marking sets their DSCP (socket_marking.h), and a sender that
// stops asks whether its messages have left (drainOutgoing), rather than waiting a fixed time.
#pragma once

#include <cstdint>
#include <functional>

namespace netloop {

/// Calls `fn(fd, domain)` for every IPv4 and IPv6 socket the process holds now.
void forEachIpSocket(const std::function<void(int fd, int domain)>& fn);

/// What the kernel still holds of what the process's IP sockets sent.
struct Outgoing {
  int64_t tcp_unacked_bytes = 0;  // SIOCOUTQ over the TCP sockets: unsent + not yet acknowledged
  int datagram_sockets = 0;       // connected UDP sockets (UDPROS): no acknowledgement to wait for
  double max_rtt_s = 0.0;         // the largest smoothed round-trip time of a connected TCP socket
};

Outgoing outgoing();

/// How a sender's drain ended.
struct Drain {
  double waited_s = 0.0;
  bool acked = false;  // ended early: everything sent was acknowledged
};

/// Waits after a sender's last message while it may still be under way, at most `max_s`
/// seconds. With `until_acked` the wait ends once every TCP socket of the process has held
/// nothing unacknowledged for `quiet_s` (roscpp writes what it still queues as soon as a
/// socket has room, so a socket quiet that long has nothing behind it), and then twice the
/// largest round-trip time more (an echo's way back, the receiver's read); a process with a
/// connected UDP socket (a UDPROS publisher's) waits `max_s`, as does one without `until_acked`.
Drain drainOutgoing(double max_s, bool until_acked, double quiet_s = 0.05);

}  // namespace netloop
