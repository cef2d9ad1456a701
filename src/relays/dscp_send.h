// Sending one datagram with its own DSCP: the IP_TOS of each datagram is given to sendmsg
// as a control message, so one socket (and the peers' check by address and port) serves
// marked and unmarked traffic alike.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>

namespace netloop {
namespace relay {

/// DSCP EF (expedited forwarding, 46) in the IPv4 TOS byte.
constexpr int kTosEf = 46 << 2;  // 0xb8

/// Sends `len` bytes to `to` on the UDP socket `fd` with TOS byte `tos` (0: the socket's own,
/// no control message). false on error (errno kept).
bool sendWithTos(int fd, const sockaddr_in& to, const uint8_t* data, size_t len, int tos);

}  // namespace relay
}  // namespace netloop
