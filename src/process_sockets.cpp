#include "netloop/process_sockets.h"

#include <dirent.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

namespace netloop {

void forEachIpSocket(const std::function<void(int fd, int domain)>& fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    struct stat st {};
    if (*end != '\0' || end == entry->d_name || fd == own || fstat(static_cast<int>(fd), &st) != 0 ||
        !S_ISSOCK(st.st_mode)) {
      continue;
    }
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        (domain != AF_INET && domain != AF_INET6)) {
      continue;
    }
    fn(static_cast<int>(fd), domain);
  }
  closedir(dir);
}

Outgoing outgoing() {
  Outgoing out;
  forEachIpSocket([&out](int fd, int) {
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return;
    if (type == SOCK_DGRAM) {  // a UDPROS publisher's socket is connected to its subscriber; roscpp's
      sockaddr_storage peer{};  // own UDPROS server socket (every node has one) is not
      socklen_t peer_len = sizeof peer;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0) ++out.datagram_sockets;
      return;
    }
    if (type != SOCK_STREAM) return;
    int queued = 0;
    if (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0) out.tcp_unacked_bytes += queued;  // EINVAL: listening
    tcp_info info{};
    len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_state == TCP_ESTABLISHED)
      out.max_rtt_s = std::max(out.max_rtt_s, info.tcpi_rtt * 1e-6);
  });
  return out;
}

Drain drainOutgoing(double max_s, bool until_acked, double quiet_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto elapsed = [&start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const auto sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, s))); };
  if (until_acked) {
    std::optional<double> quiet_since;
    for (double t = 0.0; t < max_s; t = elapsed()) {
      const Outgoing now = outgoing();
      if (now.datagram_sockets > 0) break;
      if (now.tcp_unacked_bytes > 0) {
        quiet_since.reset();
      } else if (!quiet_since) {
        quiet_since = t;
      } else if (t - *quiet_since >= quiet_s) {
        sleep(std::min(2.0 * now.max_rtt_s, max_s - t));
        return {elapsed(), true};
      }
      sleep(std::min(0.01, max_s - t));
    }
  }
  sleep(max_s - elapsed());
  return {elapsed(), false};
}

}  // namespace netloop
