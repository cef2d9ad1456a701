// nimbro_tcp_receiver: netloop's own nimbro_topic_transport tcp_receiver. Listens on
// ~address:~port, accepts connections from ~allowed_peers (at most ~max_connections), one
// stream decoder each (wire/stream_frame.h; a malformed frame closes its stream), and
// republishes each message on its topic with the original type (nimbro_receiver.h). With
// ~message_ack it writes one byte back after handling each frame (nimbro's tcp_receiver does
// so after publishing); both ends must agree on ~message_ack. Statistics: /netloop_relay/stats
// (netloop/RelayStats, role tcp_receiver) and ~stats_path (JSON lines).
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "netloop/loop_node.h"
#include "nimbro_receiver.h"
#include "relay_stats.h"
#include "wire/stream_frame.h"

namespace netloop {
namespace relay {
namespace {

class TcpReceiver : public ReceiverBase {
 public:
  static constexpr const char* kRole = "tcp_receiver";

  TcpReceiver(ros::NodeHandle& nh, ros::NodeHandle& pnh) : ReceiverBase(nh, pnh, kRole) {
    max_connections_ = static_cast<size_t>(requireNumber(pnh, "max_connections", 8, Bound::Positive));
    message_ack_ = pnh.param("message_ack", true);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a;
    if (!makeAddress(bind_ip_.empty() ? "0.0.0.0" : bind_ip_, port_, a) ||
        ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 8) != 0)
      throw std::runtime_error("tcp_receiver: cannot listen on " + addressString(a) + ": " + std::strerror(errno));
    thread_ = std::thread([this] { acceptLoop(); });
  }
  ~TcpReceiver() override {
    stop_ = true;
    thread_.join();
    for (auto& c : conns_) c.thread.join();
    ::close(listen_fd_);
  }

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &fl, SOCK_CLOEXEC);
      if (fd < 0) continue;
      for (auto it = conns_.begin(); it != conns_.end();) {  // reap finished connections
        if (*it->done) {
          it->thread.join();
          it = conns_.erase(it);
        } else {
          ++it;
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!peers_.allowed(from)) {
        ++totals_.foreign;
        ::close(fd);
        continue;
      }
      if (totals_.connections >= max_connections_) {
        ++totals_.refused;
        ::close(fd);
        continue;
      }
      ++totals_.connections;
      ++totals_.accepted;
      auto done = std::make_shared<std::atomic<bool>>(false);
      conns_.push_back(Conn{std::thread([this, fd, done] {
                              connectionLoop(fd);
                              *done = true;
                            }),
                            done});
    }
  }

  void connectionLoop(int fd) {
    StreamDecoder decoder(limits_.max_message_bytes);
    std::vector<uint8_t> buf(65536);
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      decoder.feed(buf.data(), static_cast<size_t>(n));
      Frame f;
      size_t handled = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        while (decoder.next(f)) {
          ++handled;
          if (!expects(f.h.kind, f.h.topic_id)) {
            ++totals_.unknown_topic;
            continue;
          }
          deliver(f.h.kind, f.h.topic_id, f.h.flags, f.h.orig_len, f.data);
        }
        if (decoder.error() != Error::Ok) {
          countMalformed(totals_.malformed, decoder.error());
          ++totals_.stream_errors;
          break;  // the stream cannot be trusted any more
        }
      }
      if (message_ack_ && handled > 0) {  // one byte per frame; never blocks on a peer that does not read
        const std::vector<uint8_t> acks(handled, 1);
        ::send(fd, acks.data(), acks.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    --totals_.connections;
  }

  struct Conn {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  int listen_fd_ = -1;
  size_t max_connections_ = 8;  // open connections: totals_.connections
  bool message_ack_ = true;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<Conn> conns_;  // accept thread only
};

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "nimbro_tcp_receiver", netloop::relay::runRoleOf<netloop::relay::TcpReceiver>);
}
