// Per-datagram IP_TOS through sendmsg's control message.
#include "dscp_send.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace netloop {
namespace relay {

bool sendWithTos(int fd, const sockaddr_in& to, const uint8_t* data, size_t len, int tos) {
  iovec iov{const_cast<uint8_t*>(data), len};
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr_in*>(&to);
  msg.msg_namelen = sizeof to;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (tos != 0) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &tos, sizeof tos);
  }
  for (;;) {
    const ssize_t n = ::sendmsg(fd, &msg, 0);
    if (n >= 0) return static_cast<size_t>(n) == len;
    if (errno != EINTR) return false;
  }
}

}  // namespace relay
}  // namespace netloop
