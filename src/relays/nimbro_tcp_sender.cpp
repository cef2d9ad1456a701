// nimbro_tcp_sender: netloop's own nimbro_topic_transport tcp_sender. Subscribes each topic of
// ~topics (nimbro_sender.h: rate limit, zlib, type announcements) and sends each message as a
// stream frame (wire/stream_frame.h) over one TCP connection to
// ~destination_addr:~destination_port, reconnecting when it is lost; a bounded queue
// (~max_queue_bytes) decouples ROS callbacks from the socket. As nimbro_topic_transport's
// tcp_sender (every version, AIS-Bonn/nimbro_network master and develop): Nagle's algorithm
// stays on (~tcp_nodelay: false) and each frame waits for the receiver's one-byte
// acknowledgement before the next is written (~message_ack: true; at most ~ack_timeout s); a
// frame whose write or acknowledgement fails is sent again on a new connection, at most
// kMaxSendTries times in all (nimbro: "sending again (!)", 10 tries). Statistics:
// /netloop_relay/stats (netloop/RelayStats, role tcp_sender) and ~stats_path (JSON lines).
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <thread>

#include "netloop/loop_node.h"
#include "nimbro_sender.h"
#include "wire/stream_frame.h"

namespace netloop {
namespace relay {
namespace {

/// nimbro_topic_transport's tcp_sender tries a message this many times before dropping it.
constexpr int kMaxSendTries = 10;

class TcpSender : public SenderBase {
 public:
  static constexpr const char* kRole = "tcp_sender";

  TcpSender(ros::NodeHandle& nh, ros::NodeHandle& pnh) : SenderBase(nh, pnh, kRole) {
    max_queue_bytes_ = static_cast<size_t>(requireNumber(pnh, "max_queue_bytes", 8 << 20, Bound::Positive));
    source_ip_ = pnh.param<std::string>("address", "");
    nodelay_ = pnh.param("tcp_nodelay", false);
    message_ack_ = pnh.param("message_ack", true);
    ack_timeout_ms_ = static_cast<int>(requireNumber(pnh, "ack_timeout", 8.0, Bound::Positive) * 1000);
    thread_ = std::thread([this] { writerLoop(); });
  }
  ~TcpSender() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 protected:
  struct Item {
    SendTopic* topic;
    Kind kind;
    std::vector<uint8_t> frame;
    int tries = 0;
  };

  void sendMessage(SendTopic& t, Kind kind, uint8_t flags, uint32_t msg_id, uint32_t orig_len,
                   std::vector<uint8_t> bytes) override {
    FrameHeader h;
    h.kind = kind;
    h.flags = flags;
    h.priority = static_cast<uint8_t>(t.cfg.priority);
    h.topic_id = t.cfg.id;
    h.epoch = epoch_;
    h.msg_id = msg_id;
    h.orig_len = orig_len;
    Item item{&t, kind, encodeFrame(h, bytes.data(), bytes.size())};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kind == Kind::Type) types_[t.cfg.id] = item.frame;  // re-sent on every new connection
      queued_ += item.frame.size();
      queue_.push_back(std::move(item));
      while (queued_ > max_queue_bytes_ && queue_.size() > 1) {  // oldest first
        Item& old = queue_.front();
        queued_ -= old.frame.size();
        if (old.kind == Kind::Data) old.topic->c.queue_dropped++;
        queue_.pop_front();
      }
    }
    cv_.notify_one();
  }

  void addToReport(netloop::RelayStats& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    r.connected = fd_.load() >= 0;
    r.connects = connects_;
    r.queue_bytes = queued_;
    r.acks = acks_;
  }

 private:
  bool connectOnce() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    if (nodelay_) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (!source_ip_.empty()) {
      sockaddr_in src;
      if (makeAddress(source_ip_, 0, src)) ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&dest_), sizeof dest_) != 0) {
      ::close(fd);
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    fd_ = fd;
    ++connects_;
    return true;
  }

  bool writeAll(int fd, const std::vector<uint8_t>& b) {
    size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  bool stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }

  /// Waits for the receiver's one-byte acknowledgement of the frame just written.
  bool awaitAck(int fd) {
    for (int waited = 0; waited < ack_timeout_ms_ && !stopping(); waited += 100) {
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, 100);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return false;
      if (r == 0) continue;
      uint8_t ack = 0;
      const ssize_t n = ::recv(fd, &ack, 1, 0);
      if (n == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        ++acks_;
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      return false;  // closed or failed
    }
    return false;
  }

  /// One frame on the connection: written whole, then (with ~message_ack) acknowledged.
  bool sendFrame(int fd, const std::vector<uint8_t>& frame) {
    return writeAll(fd, frame) && (!message_ack_ || awaitAck(fd));
  }

  void closeConnection() {
    const int fd = fd_.exchange(-1);
    if (fd >= 0) ::close(fd);
  }

  void writerLoop() {
    while (true) {
      if (stopping()) break;
      if (fd_ < 0) {
        if (!connectOnce()) {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; });
          continue;
        }
        std::vector<std::vector<uint8_t>> types;
        {
          std::lock_guard<std::mutex> lock(mu_);
          for (auto& [id, f] : types_) types.push_back(f);
        }
        bool ok = true;
        for (auto& f : types) ok = ok && sendFrame(fd_, f);
        if (!ok) {
          closeConnection();
          continue;
        }
      }
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_ || !queue_.empty(); });
        if (stop_) break;
        if (queue_.empty()) continue;
        item = std::move(queue_.front());
        queue_.pop_front();
        queued_ -= item.frame.size();
      }
      if (!sendFrame(fd_, item.frame)) {
        if (item.kind == Kind::Data) item.topic->c.send_errors++;
        closeConnection();
        if (++item.tries < kMaxSendTries) {  // again, first, on the next connection
          std::lock_guard<std::mutex> lock(mu_);
          queued_ += item.frame.size();
          queue_.push_front(std::move(item));
        }
        continue;
      }
      if (item.kind == Kind::Data) item.topic->c.out_msgs++;
    }
    closeConnection();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::map<uint32_t, std::vector<uint8_t>> types_;
  size_t queued_ = 0, max_queue_bytes_ = 0;
  uint64_t connects_ = 0, acks_ = 0;
  bool nodelay_ = false, message_ack_ = true;
  int ack_timeout_ms_ = 8000;
  std::atomic<int> fd_{-1};  // written by the writer thread only
  bool stop_ = false;
  std::string source_ip_;
  std::thread thread_;
};

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "nimbro_tcp_sender", netloop::relay::runRoleOf<netloop::relay::TcpSender>);
}
