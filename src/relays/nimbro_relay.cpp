// nimbro_relay: netloop's own implementation of nimbro_topic_transport's semantics, used
// when nimbro_network is not installed. One binary, four roles (~role):
//
//   udp_sender    subscribes each topic of ~topics (any type: ShapeShifter) on its host,
//                 serializes each message, compresses it (zlib) if the topic says
//                 `compress: true`, drops it if over the topic's `rate` [Hz], splits it into
//                 datagrams that fit one ~mtu-byte IP packet and sends them to
//                 ~destination_addr:~destination_port. Each topic's type (datatype, md5,
//                 definition) is announced before its first message and every
//                 ~type_announce_period s, so a receiver needs no configuration.
//   udp_receiver  binds ~address:~port, accepts datagrams only from ~allowed_peers
//                 (others dropped and counted), reassembles messages (incomplete ones are
//                 dropped after ~reassembly_timeout s; memory bounded by ~max_message_bytes,
//                 ~max_pending_bytes) and republishes each on its topic with the original
//                 type. Topics listed in ~topics with their type are advertised at start.
//   tcp_sender    the same over one TCP connection, reconnecting when lost; a bounded queue
//                 (~max_queue_bytes) decouples ROS callbacks from the socket. As
//                 nimbro_topic_transport's tcp_sender (every version, AIS-Bonn/nimbro_network
//                 master and develop): Nagle's algorithm stays on (~tcp_nodelay: false) and
//                 each frame waits for the receiver's one-byte acknowledgement before the next
//                 is written (~message_ack: true; at most ~ack_timeout s); a frame whose write
//                 or acknowledgement fails is sent again on a new connection, at most
//                 kMaxSendTries times in all (nimbro: "sending again (!)", 10 tries).
//   tcp_receiver  accepts connections from ~allowed_peers, one stream decoder each; with
//                 ~message_ack it writes one byte back after handling each frame (nimbro's
//                 tcp_receiver does so after publishing). Both ends must agree on ~message_ack.
//
// Parameters follow nimbro_topic_transport's (destination_addr, destination_port, port,
// topics: [{name, rate, compress, type}]) plus netloop's: ~allowed_peers, ~mtu, limits,
// ~stats_path (JSON lines, one per ~stats_period) — the same report is published on
// /netloop_relay/stats (netloop/RelayStats).
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "netloop/loop_node.h"
#include "relay_ros.h"
#include "relay_stats.h"
#include "udp_receive_loop.h"
#include "wire/compression.h"
#include "wire/packet.h"
#include "wire/reassembly.h"
#include "wire/stream_frame.h"

namespace netloop {
namespace relay {
namespace {

struct Counters {
  std::atomic<uint64_t> in_msgs{0}, in_bytes{0}, out_msgs{0}, out_bytes{0}, rate_dropped{0}, queue_dropped{0},
      send_errors{0}, published{0}, datagrams{0};
};

/// One topic's counters as a report entry.
netloop::RelayTopicStats topicReport(const std::string& topic, const Counters& c) {
  netloop::RelayTopicStats r;
  r.topic = topic;
  r.in_msgs = c.in_msgs;
  r.in_bytes = c.in_bytes;
  r.out_msgs = c.out_msgs;
  r.out_bytes = c.out_bytes;
  r.rate_dropped = c.rate_dropped;
  r.queue_dropped = c.queue_dropped;
  r.send_errors = c.send_errors;
  r.published = c.published;
  r.datagrams = c.datagrams;
  return r;
}

uint32_t randomEpoch() {
  std::random_device rd;
  return rd() ^ static_cast<uint32_t>(wallNs());
}

// ---------------------------------------------------------------------------------------------
// Senders

/// Per-topic sending state shared by both senders.
struct SendTopic {
  TopicConfig cfg;
  ros::Subscriber sub;
  uint32_t msg_id = 0;
  int64_t last_sent_ns = -1;
  int64_t last_announce_ns = -1;
  TypeInfo type;  // learnt from the first message
  Counters c;
};

class SenderBase {
 public:
  SenderBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role)
      : nh_(nh), pnh_(pnh), role_(role), epoch_(randomEpoch()) {
    for (auto& t : readTopics(pnh, "topics")) {
      auto st = std::make_unique<SendTopic>();
      st->cfg = t;
      topics_.push_back(std::move(st));
    }
    if (topics_.empty()) exitWithConfigError("parameter ~topics: at least one topic is needed");
    dest_ip_ = pnh.param<std::string>("destination_addr", "");
    dest_port_ = pnh.param("destination_port", 0);
    if (!makeAddress(dest_ip_, dest_port_, dest_) || dest_port_ <= 0)
      exitWithConfigError("parameters ~destination_addr / ~destination_port: '" + dest_ip_ + ":" +
                          std::to_string(dest_port_) + "' is not an IPv4 address and port");
    announce_ns_ = static_cast<int64_t>(requireNumber(pnh, "type_announce_period", 2.0, Bound::Positive) * 1e9);
    compress_level_ = pnh.param("compress_level", 1);
  }
  virtual ~SenderBase() = default;

  void subscribe() {
    for (size_t i = 0; i < topics_.size(); ++i) {
      SendTopic* t = topics_[i].get();
      t->sub = nh_.subscribe<topic_tools::ShapeShifter>(
          t->cfg.name, 20, [this, t](const topic_tools::ShapeShifter::ConstPtr& m) { onMessage(*t, *m); },
          ros::VoidConstPtr(), ros::TransportHints().tcp().tcpNoDelay());
    }
  }

  netloop::RelayStats report() {
    netloop::RelayStats r;
    stampReport(r, role_);
    r.destination = dest_ip_ + ":" + std::to_string(dest_port_);
    for (const auto& t : topics_) r.topics.push_back(topicReport(t->cfg.name, t->c));
    addToReport(r);
    return r;
  }

 protected:
  virtual void sendMessage(SendTopic& t, Kind kind, uint8_t flags, uint32_t msg_id, uint32_t orig_len,
                           std::vector<uint8_t> bytes) = 0;
  /// The fields of this sender's role.
  virtual void addToReport(netloop::RelayStats&) {}

  void onMessage(SendTopic& t, const topic_tools::ShapeShifter& m) {
    const int64_t now = monoNs();
    std::vector<uint8_t> bytes = serialize(m);
    t.c.in_msgs++;
    t.c.in_bytes += bytes.size();
    if (t.cfg.rate > 0 && t.last_sent_ns >= 0 && now - t.last_sent_ns < static_cast<int64_t>(1e9 / t.cfg.rate)) {
      t.c.rate_dropped++;  // nimbro semantics: over the rate limit, silently dropped
      return;
    }
    if (t.type.datatype.empty() || now - t.last_announce_ns >= announce_ns_) {
      t.type = typeOf(m, t.cfg.name);
      t.last_announce_ns = now;
      std::vector<uint8_t> info = encodeTypeInfo(t.type);
      const uint32_t n = static_cast<uint32_t>(info.size());
      sendMessage(t, Kind::Type, 0, t.msg_id, n, std::move(info));
    }
    t.last_sent_ns = now;
    uint8_t flags = 0;
    const uint32_t orig_len = static_cast<uint32_t>(bytes.size());
    if (t.cfg.compress) {
      std::vector<uint8_t> z;
      if (compressBytes(bytes.data(), bytes.size(), z, compress_level_) && z.size() < bytes.size()) {
        bytes.swap(z);
        flags = kFlagCompressed;
      }
    }
    t.c.out_bytes += bytes.size();
    sendMessage(t, Kind::Data, flags, t.msg_id++, orig_len, std::move(bytes));
  }

  ros::NodeHandle& nh_;
  ros::NodeHandle& pnh_;
  std::string role_;
  uint32_t epoch_;
  std::vector<std::unique_ptr<SendTopic>> topics_;
  std::string dest_ip_;
  int dest_port_ = 0;
  sockaddr_in dest_{};
  int64_t announce_ns_ = 0;
  int compress_level_ = 1;
};

class UdpSender : public SenderBase {
 public:
  UdpSender(ros::NodeHandle& nh, ros::NodeHandle& pnh) : SenderBase(nh, pnh, "udp_sender") {
    const int mtu = static_cast<int>(requireNumber(pnh, "mtu", 1500, Bound::Positive));
    if (mtu < 576 || mtu > 65535) exitWithConfigError("parameter ~mtu must be in 576..65535");
    max_datagram_ = static_cast<size_t>(mtu) - kIpUdpOverhead;
    src_ = static_cast<uint8_t>(pnh.param("src", 0));
    dst_ = static_cast<uint8_t>(pnh.param("dst", 0));
    socket_.bind(pnh.param<std::string>("address", ""), pnh.param("source_port", 0));
  }

 protected:
  void sendMessage(SendTopic& t, Kind kind, uint8_t flags, uint32_t msg_id, uint32_t orig_len,
                   std::vector<uint8_t> bytes) override {
    PacketHeader h;
    h.kind = kind;
    h.flags = flags;
    h.priority = static_cast<uint8_t>(t.cfg.priority);
    h.src = src_;
    h.dst = dst_;
    h.ttl = 1;
    h.topic_id = t.cfg.id;
    h.epoch = epoch_;
    h.msg_id = msg_id;
    h.orig_len = orig_len;
    for (const auto& pkt : fragment(h, bytes.data(), bytes.size(), max_datagram_)) {
      if (!socket_.sendTo(dest_, pkt.data(), pkt.size())) t.c.send_errors++;
      t.c.datagrams++;
    }
    if (kind == Kind::Data) t.c.out_msgs++;
  }

 private:
  UdpSocket socket_;
  size_t max_datagram_ = 1472;
  uint8_t src_ = 0, dst_ = 0;
};

/// nimbro_topic_transport's tcp_sender tries a message this many times before dropping it.
constexpr int kMaxSendTries = 10;

class TcpSender : public SenderBase {
 public:
  TcpSender(ros::NodeHandle& nh, ros::NodeHandle& pnh) : SenderBase(nh, pnh, "tcp_sender") {
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

// ---------------------------------------------------------------------------------------------
// Receivers

struct RecvTopic {
  std::unique_ptr<Outlet> outlet;
  Counters c;
  bool configured = false;
};

class ReceiverBase {
 public:
  ReceiverBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role) : nh_(nh), role_(role) {
    limits_.max_message_bytes = static_cast<uint32_t>(
        requireNumber(pnh, "max_message_bytes", 16 << 20, Bound::Positive));
    limits_.max_pending_bytes = static_cast<size_t>(requireNumber(pnh, "max_pending_bytes", 32 << 20, Bound::Positive));
    limits_.max_pending_messages =
        static_cast<size_t>(requireNumber(pnh, "max_pending_messages", 64, Bound::Positive));
    limits_.timeout_ns = static_cast<int64_t>(requireNumber(pnh, "reassembly_timeout", 0.5, Bound::Positive) * 1e9);
    max_topics_ = static_cast<size_t>(requireNumber(pnh, "max_topics", 64, Bound::Positive));
    for (const auto& spec : readStringList(pnh, "allowed_peers")) {
      try {
        peers_.add(spec);
      } catch (const std::exception& e) {
        exitWithConfigError(std::string("parameter ~allowed_peers: ") + e.what());
      }
    }
    const auto topics = readTopics(pnh, "topics");
    accept_unknown_ = pnh.param("accept_unknown_topics", topics.empty());
    for (const auto& t : topics) {
      RecvTopic& r = topics_[t.id];
      r.outlet = std::make_unique<Outlet>(nh_, t.name);
      r.configured = true;
      if (!t.type.datatype.empty()) r.outlet->setType(t.type);  // advertise now
    }
    bind_ip_ = pnh.param<std::string>("address", "");
    port_ = pnh.param("port", 0);
    if (port_ <= 0 || port_ > 65535) exitWithConfigError("parameter ~port: a port number is needed");
  }
  virtual ~ReceiverBase() = default;

  netloop::RelayStats report() {
    std::lock_guard<std::mutex> lock(mu_);
    netloop::RelayStats r = totals_;
    stampReport(r, role_);
    for (auto& [id, t] : topics_) r.topics.push_back(topicReport(t.outlet->topic(), t.c));
    addToReport(r);
    return r;
  }

 protected:
  /// The fields of this receiver's role (mu_ held).
  virtual void addToReport(netloop::RelayStats&) {}

  /// Whether a message of this kind and topic is taken (a configured topic, or the type
  /// announcement of a new one when unknown topics are accepted); mu_ held.
  bool expects(Kind kind, uint32_t topic_id) const {
    return topics_.count(topic_id) || (accept_unknown_ && kind == Kind::Type);
  }

  /// A complete message (reassembled or framed) for topic `id`; called with mu_ held.
  void deliver(Kind kind, uint32_t id, uint8_t flags, uint32_t orig_len, const std::vector<uint8_t>& data) {
    auto it = topics_.find(id);
    if (kind == Kind::Type) {
      TypeInfo t;
      if (!decodeTypeInfo(data.data(), data.size(), t) || topicId(t.topic) != id) {
        ++totals_.bad_payload;
        return;
      }
      if (it == topics_.end()) {
        if (!accept_unknown_ || topics_.size() >= max_topics_) {
          ++totals_.unknown_topic;
          return;
        }
        it = topics_.try_emplace(id).first;
        it->second.outlet = std::make_unique<Outlet>(nh_, t.topic);
      }
      if (it->second.outlet->topic() != t.topic || !it->second.outlet->setType(t)) ++totals_.type_mismatch;
      return;
    }
    if (it == topics_.end()) {
      ++totals_.unknown_topic;
      return;
    }
    RecvTopic& r = it->second;
    r.c.in_msgs++;
    r.c.in_bytes += data.size();
    switch (r.outlet->publishPayload(data, flags, orig_len, limits_.max_message_bytes)) {
      case Outlet::Delivery::Published: r.c.published++; break;
      case Outlet::Delivery::BadPayload: ++totals_.bad_payload; break;
      case Outlet::Delivery::Untyped: ++totals_.untyped; break;
    }
  }

  ros::NodeHandle& nh_;
  std::string role_;
  std::mutex mu_;
  ReassemblyLimits limits_;
  PeerFilter peers_;
  std::map<uint32_t, RecvTopic> topics_;
  bool accept_unknown_ = false;
  size_t max_topics_ = 64;
  std::string bind_ip_;
  int port_ = 0;
  netloop::RelayStats totals_;  // the receiver's counters (mu_)
};

class UdpReceiver : public ReceiverBase {
 public:
  UdpReceiver(ros::NodeHandle& nh, ros::NodeHandle& pnh)
      : ReceiverBase(nh, pnh, "udp_receiver"),
        reassembler_(limits_),
        loop_(socket_, mu_, reassembler_, totals_,
              [this](const sockaddr_in& from) { return peers_.allowed(from); },
              [this](const PacketView& p, const uint8_t*, size_t, int64_t now) { onDatagram(p, now); }) {
    socket_.bind(bind_ip_, port_);
    loop_.start();
  }
  ~UdpReceiver() override { loop_.stop(); }

 protected:
  void addToReport(netloop::RelayStats& r) override { r.reassembly = reassemblyReport(reassembler_); }

 private:
  void onDatagram(const PacketView& p, int64_t now) {
    if (!expects(p.h.kind, p.h.topic_id)) {
      ++totals_.unknown_topic;  // before reassembly: foreign topics cost no memory
      return;
    }
    Message m;
    if (reassembler_.push(p, now, m)) deliver(m.h.kind, m.h.topic_id, m.h.flags, m.h.orig_len, m.data);
  }

  UdpSocket socket_;
  Reassembler reassembler_;
  UdpReceiveLoop loop_;
};

class TcpReceiver : public ReceiverBase {
 public:
  TcpReceiver(ros::NodeHandle& nh, ros::NodeHandle& pnh) : ReceiverBase(nh, pnh, "tcp_receiver") {
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

 protected:

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

int run() {
  ros::NodeHandle nh, pnh("~");
  const std::string role = pnh.param<std::string>("role", "");
  const double stats_period = requireNumber(pnh, "stats_period", 1.0, Bound::Positive);
  StatsWriter stats(nh, pnh.param<std::string>("stats_topic", kStatsTopic),
                    pnh.param<std::string>("stats_path", ""));
  std::unique_ptr<SenderBase> sender;
  std::unique_ptr<ReceiverBase> receiver;
  try {
    if (role == "udp_sender") sender = std::make_unique<UdpSender>(nh, pnh);
    else if (role == "tcp_sender") sender = std::make_unique<TcpSender>(nh, pnh);
    else if (role == "udp_receiver") receiver = std::make_unique<UdpReceiver>(nh, pnh);
    else if (role == "tcp_receiver") receiver = std::make_unique<TcpReceiver>(nh, pnh);
    else exitWithConfigError("parameter ~role: '" + role + "'; allowed: udp_sender, udp_receiver, tcp_sender, tcp_receiver");
  } catch (const std::runtime_error& e) {
    exitWithConfigError(e.what());
  }
  if (sender) sender->subscribe();
  auto report = [&] { stats.write(sender ? sender->report() : receiver->report()); };
  ros::WallTimer timer = nh.createWallTimer(ros::WallDuration(stats_period), [&](const ros::WallTimerEvent&) { report(); });
  ROS_INFO("nimbro_relay %s ready", role.c_str());
  ros::spin();
  report();  // the final counts
  return 0;
}

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "nimbro_relay", netloop::relay::run); }
