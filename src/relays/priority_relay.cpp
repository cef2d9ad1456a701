// priority_relay: the Pound scheme (Tardioli et al.): one relay per host, ONE UDP socket
// between hosts, every topic with a priority, and a single send queue ordered by priority.
//
// Outbound: each topic of ~topics whose `source` is this host (~self) is subscribed with
// ShapeShifter (any type); each message is serialized (zlib-compressed if the topic says
// `compress: true`), cut into datagrams that fit one ~mtu-byte IP packet and queued in the
// topic's lane of the PriorityQueue. One sender thread takes the next datagram of the most
// urgent lane (FIFO within a priority) and sends it when the pacer allows: datagrams leave
// at ~rate_mbit [Mbit/s, IP bytes = UDP payload + ~overhead_bytes; 0 = unpaced]. Backpressure
// (~backpressure_bytes > 0, backpressure.h): a datagram below ~urgent_priority leaves only
// while the bytes unsent below the socket (SIOCOUTQ: the qdisc) are under ~backpressure_bytes,
// so the low-priority backlog waits here, where a small urgent message overtakes it, and never
// waits behind more than about one frame below. Datagrams of ~urgent_priority or above carry
// DSCP EF when ~dscp is true (dscp_send.h), the others none. The queue holds at most
// ~max_queue_bytes; room is made by dropping whole messages of the lowest priority first.
//
// Inbound: datagrams from a configured peer (~hosts: address AND port) are checked,
// reassembled (bounded memory, incomplete messages dropped after ~reassembly_timeout) and
// republished with the original type on the topic, for topics whose `dest` is this host.
// Datagrams for another host (two-hop chains, ~forward true) are re-queued by their own
// priority towards ~routes' next hop, ttl decremented. Anything else is dropped and counted.
//
// Run-time priorities: ~priorities, a list of {topic, priority}, is read every 0.2 s
// (rosparam set /<relay>/priorities "[{topic: /y, priority: 250}]"); it overrides the
// configured priority of the listed topics; queued messages follow at once.
//
// ~rt_priority > 0 runs the send and receive threads SCHED_FIFO (root), so that pacing and
// forwarding wake up on time on a busy machine.
//
// Statistics every ~stats_period s: /netloop_relay/stats (netloop/RelayStats) and the same
// report as one JSON line appended to ~stats_path.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "backpressure.h"
#include "dscp_send.h"
#include "netloop/loop_node.h"
#include "relay_hosts.h"
#include "relay_ros.h"
#include "relay_stats.h"
#include "udp_receive_loop.h"
#include "wire/compression.h"
#include "wire/pacer.h"
#include "wire/packet.h"
#include "wire/priority_queue.h"
#include "wire/reassembly.h"

namespace netloop {
namespace relay {
namespace {

constexpr uint64_t kForwardLane = 1ull << 63;

struct TopicStats {
  uint64_t in_msgs = 0, in_bytes = 0, queued = 0, dropped = 0, refused = 0, sent_msgs = 0, sent_datagrams = 0,
           received = 0, published = 0;
  double delay_sum_s = 0, delay_max_s = 0;  // queueing delay: enqueued -> last datagram sent
  uint64_t delay_n = 0;
};

struct Topic {
  size_t index = 0;  // = its lane in the queue
  TopicConfig cfg;
  int priority = 0;  // current (configured or overridden)
  bool outbound = false, inbound = false;
  ros::Subscriber sub;
  std::unique_ptr<Outlet> outlet;
  uint32_t msg_id = 0;
  int64_t last_announce_ns = -1;
  bool type_known = false;
  TopicStats s;
};

class PriorityRelay {
 public:
  PriorityRelay(ros::NodeHandle& nh, ros::NodeHandle& pnh)
      : nh_(nh),
        pnh_(pnh),
        receive_loop_(socket_, mu_, reassembler_, totals_, [this](const sockaddr_in& from) { return isPeer(from); },
                      [this](const PacketView& p, const uint8_t* bytes, size_t len, int64_t now) {
                        onDatagram(p, bytes, len, now);
                      }),
        queue_(1) {
    self_ = static_cast<int>(requireNumber(pnh, "self", 0, Bound::NonNegative));
    hosts_ = readHosts(pnh, self_);
    const int mtu = static_cast<int>(requireNumber(pnh, "mtu", 1500, Bound::Positive));
    if (mtu < 576 || mtu > 65535) exitWithConfigError("parameter ~mtu must be in 576..65535");
    max_datagram_ = static_cast<size_t>(mtu) - kIpUdpOverhead;
    const double rate_mbit = requireNumber(pnh, "rate_mbit", 0.0, Bound::NonNegative);
    const double overhead = requireNumber(pnh, "overhead_bytes", kIpUdpOverhead, Bound::NonNegative);
    credit_ns_ = static_cast<int64_t>(requireNumber(pnh, "credit_ms", 1.0, Bound::NonNegative) * 1e6);
    pacer_ = Pacer(rate_mbit * 1e6, static_cast<size_t>(overhead), credit_ns_);
    queue_ = PriorityQueue(static_cast<size_t>(requireNumber(pnh, "max_queue_bytes", 256 * 1024, Bound::Positive)));
    forward_ = pnh.param("forward", true);
    BackpressureConfig bp;
    bp.max_below_bytes = static_cast<size_t>(requireNumber(pnh, "backpressure_bytes", 0, Bound::NonNegative));
    bp.urgent_priority = static_cast<int>(requireNumber(pnh, "urgent_priority", 250, Bound::NonNegative));
    bp.poll_ns = static_cast<int64_t>(requireNumber(pnh, "backpressure_poll_ms", 0.3, Bound::Positive) * 1e6);
    backpressure_ = Backpressure(bp);
    dscp_ = pnh.param("dscp", false);
    rt_priority_ = static_cast<int>(requireNumber(pnh, "rt_priority", 0, Bound::NonNegative));
    if (rt_priority_ > 99) exitWithConfigError("~rt_priority must be in 0..99");
    compress_level_ = pnh.param("compress_level", 1);
    announce_ns_ = static_cast<int64_t>(requireNumber(pnh, "type_announce_period", 2.0, Bound::Positive) * 1e9);
    limits_.max_message_bytes =
        static_cast<uint32_t>(requireNumber(pnh, "max_message_bytes", 16 << 20, Bound::Positive));
    limits_.max_pending_bytes = static_cast<size_t>(requireNumber(pnh, "max_pending_bytes", 32 << 20, Bound::Positive));
    limits_.max_pending_messages = static_cast<size_t>(requireNumber(pnh, "max_pending_messages", 64, Bound::Positive));
    limits_.timeout_ns = static_cast<int64_t>(requireNumber(pnh, "reassembly_timeout", 0.5, Bound::Positive) * 1e9);
    reassembler_ = Reassembler(limits_);
    epoch_ = std::random_device{}() ^ static_cast<uint32_t>(wallNs());

    for (auto& cfg : readTopics(pnh, "topics")) {
      auto t = std::make_unique<Topic>();
      if (cfg.source < 0 || cfg.dest < 0 || cfg.source >= static_cast<int>(hosts_.size()) ||
          cfg.dest >= static_cast<int>(hosts_.size()) || cfg.source == cfg.dest)
        exitWithConfigError("topic " + cfg.name + ": source and dest must be two different host indices of ~hosts");
      t->index = topics_.size();
      t->cfg = cfg;
      t->priority = cfg.priority;
      t->outbound = cfg.source == self_;
      t->inbound = cfg.dest == self_;
      if (t->inbound) {
        t->outlet = std::make_unique<Outlet>(nh_, cfg.name);
        if (!cfg.type.datatype.empty()) {
          t->outlet->setType(cfg.type);
          t->type_known = true;
        }
      }
      by_id_[cfg.id] = t.get();
      topics_.push_back(std::move(t));
    }
    XmlRpc::XmlRpcValue routes;
    if (pnh.getParam("routes", routes)) {
      if (routes.getType() != XmlRpc::XmlRpcValue::TypeArray) exitWithConfigError("~routes must be a list");
      for (int i = 0; i < routes.size(); ++i) {
        if (routes[i].getType() != XmlRpc::XmlRpcValue::TypeStruct || !routes[i].hasMember("dest") ||
            !routes[i].hasMember("via"))
          exitWithConfigError("~routes entries are {dest: host index, via: host index}");
        const int dest = static_cast<int>(routes[i]["dest"]), via = static_cast<int>(routes[i]["via"]);
        if (dest < 0 || via < 0 || dest >= static_cast<int>(hosts_.size()) || via >= static_cast<int>(hosts_.size()))
          exitWithConfigError("~routes: host index out of range");
        routes_[dest] = via;
      }
    }
    try {
      socket_.bind(hosts_[self_].address, hosts_[self_].port);
    } catch (const std::runtime_error& e) {
      exitWithConfigError(e.what());
    }
  }

  ~PriorityRelay() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (sender_.joinable()) sender_.join();
    receive_loop_.stop();
  }

  void start() {
    for (auto& t : topics_) {
      if (!t->outbound) continue;
      Topic* tp = t.get();
      tp->sub = nh_.subscribe<topic_tools::ShapeShifter>(
          tp->cfg.name, 50, [this, tp](const topic_tools::ShapeShifter::ConstPtr& m) { onMessage(*tp, *m); },
          ros::VoidConstPtr(), ros::TransportHints().tcp().tcpNoDelay());
    }
    sender_ = std::thread([this] { sendLoop(); });
    receive_loop_.start();
    if (rt_priority_ > 0) {  // wake up on time even when the machine is busy
      sched_param sp{};
      sp.sched_priority = rt_priority_;
      for (std::thread* t : {&sender_, &receive_loop_.thread()})
        if (pthread_setschedparam(t->native_handle(), SCHED_FIFO, &sp) != 0)
          ROS_WARN_ONCE("priority_relay: cannot use SCHED_FIFO %d (needs root/CAP_SYS_NICE); normal scheduling",
                        rt_priority_);
    }
  }

  /// Applies ~priorities (run-time overrides).
  void pollPriorities() {
    XmlRpc::XmlRpcValue v;
    std::map<std::string, int> overrides;
    if (pnh_.getParamCached("priorities", v) && v.getType() == XmlRpc::XmlRpcValue::TypeArray) {
      for (int i = 0; i < v.size(); ++i) {
        auto& e = v[i];
        if (e.getType() != XmlRpc::XmlRpcValue::TypeStruct || !e.hasMember("topic") || !e.hasMember("priority") ||
            e["topic"].getType() != XmlRpc::XmlRpcValue::TypeString ||
            e["priority"].getType() != XmlRpc::XmlRpcValue::TypeInt) {
          ROS_WARN_THROTTLE(10, "~priorities entries must be {topic: name, priority: 0..255}");
          continue;
        }
        overrides[static_cast<std::string>(e["topic"])] = std::max(0, std::min(255, static_cast<int>(e["priority"])));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < topics_.size(); ++i) {
      Topic& t = *topics_[i];
      auto it = overrides.find(t.cfg.name);
      const int p = it != overrides.end() ? it->second : t.cfg.priority;
      if (p != t.priority) {
        ROS_INFO("priority of %s: %d -> %d", t.cfg.name.c_str(), t.priority, p);
        t.priority = p;
        queue_.setPriority(i, p);
      }
    }
  }

  netloop::RelayStats report() {
    std::lock_guard<std::mutex> lock(mu_);
    netloop::RelayStats r = totals_;
    stampReport(r, "priority_relay");
    r.host = hosts_[self_].name;
    r.rate_mbit = pacer_.rate() / 1e6;
    r.queue_bytes = queue_.bytes();
    r.queue_messages = queue_.messages();
    r.backpressure_bytes = backpressure_.config().max_below_bytes;
    r.held_s = backpressure_.heldSeconds(monoNs());
    r.holds = backpressure_.holds();
    r.held_bytes_max = backpressure_.heldBytesMax();
    r.below_bytes_max = backpressure_.belowBytesMax();
    r.reassembly = reassemblyReport(reassembler_);
    for (const auto& t : topics_) r.topics.push_back(topicReport(*t));
    return r;
  }

 private:
  static netloop::RelayTopicStats topicReport(const Topic& t) {
    const TopicStats& s = t.s;
    netloop::RelayTopicStats r;
    r.topic = t.cfg.name;
    r.priority = t.priority;
    r.outbound = t.outbound;
    r.in_msgs = s.in_msgs;
    r.in_bytes = s.in_bytes;
    r.queued = s.queued;
    r.dropped = s.dropped;
    r.refused = s.refused;
    r.sent_msgs = s.sent_msgs;
    r.sent_datagrams = s.sent_datagrams;
    r.queue_delay_mean_ms = s.delay_n ? s.delay_sum_s / s.delay_n * 1e3 : 0.0;
    r.queue_delay_max_ms = s.delay_max_s * 1e3;
    r.received = s.received;
    r.published = s.published;
    return r;
  }

  /// A datagram from another host of ~hosts (address and port).
  bool isPeer(const sockaddr_in& from) const { return isPeerOf(hosts_, self_, from); }

  int nextHop(int dest) const {
    auto it = routes_.find(dest);
    return it == routes_.end() || it->second == self_ ? dest : it->second;
  }

  void onMessage(Topic& t, const topic_tools::ShapeShifter& m) {
    const int64_t now = monoNs();
    std::vector<uint8_t> bytes = serialize(m);
    PacketHeader h;
    h.priority = 0;
    h.src = static_cast<uint8_t>(self_);
    h.dst = static_cast<uint8_t>(t.cfg.dest);
    h.ttl = 8;
    h.topic_id = t.cfg.id;
    h.epoch = epoch_;
    const uint32_t peer = static_cast<uint32_t>(nextHop(t.cfg.dest));
    std::vector<OutPacket> type_packets;
    if (!t.type_known || now - t.last_announce_ns >= announce_ns_) {
      const std::vector<uint8_t> info = encodeTypeInfo(typeOf(m, t.cfg.name));
      PacketHeader th = h;
      th.kind = Kind::Type;
      th.msg_id = t.msg_id;
      for (auto& p : fragment(th, info.data(), info.size(), max_datagram_)) type_packets.push_back({std::move(p), peer});
      t.type_known = true;
      t.last_announce_ns = now;
    }
    h.kind = Kind::Data;
    h.orig_len = static_cast<uint32_t>(bytes.size());
    if (t.cfg.compress) {
      std::vector<uint8_t> z;
      if (compressBytes(bytes.data(), bytes.size(), z, compress_level_) && z.size() < bytes.size()) {
        bytes.swap(z);
        h.flags = kFlagCompressed;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    h.priority = static_cast<uint8_t>(t.priority);
    for (auto& p : type_packets) p.bytes[7] = h.priority;
    h.msg_id = t.msg_id++;
    std::vector<OutPacket> packets;
    for (auto& p : fragment(h, bytes.data(), bytes.size(), max_datagram_)) packets.push_back({std::move(p), peer});
    t.s.in_msgs++;
    t.s.in_bytes += bytes.size();
    const uint64_t lane = t.index;
    if (!type_packets.empty()) accountDrops(queue_.push(lane, t.priority, std::move(type_packets), now));
    const auto r = queue_.push(lane, t.priority, std::move(packets), now);
    accountDrops(r);
    if (r.accepted) {
      t.s.queued++;
    } else {
      t.s.refused++;
    }
    cv_.notify_one();
  }

  /// Counts the messages the queue dropped to make room, per topic (mu_ held).
  void accountDrops(const PriorityQueue::PushResult& r) {
    totals_.queue_dropped += r.dropped_messages;
    for (uint64_t lane : r.dropped_lanes)
      if (!(lane & kForwardLane) && lane < topics_.size()) topics_[lane]->s.dropped++;
  }

  void sendLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (queue_.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
      const int64_t now = monoNs();
      const int64_t ready = pacer_.readyAt();
      if (now < ready) {
        lock.unlock();
        timespec ts{static_cast<time_t>(ready / 1000000000), static_cast<long>(ready % 1000000000)};
        // steady_clock is CLOCK_MONOTONIC on Linux
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
        lock.lock();
        continue;  // re-pick: something more urgent may have arrived meanwhile
      }
      const int priority = queue_.headPriority();
      if (backpressure_.mustHold(socket_.fd(), priority, queue_.bytes(), now)) {  // the queues below are full
        cv_.wait_for(lock, std::chrono::nanoseconds(backpressure_.config().poll_ns));
        continue;  // re-pick: an urgent datagram goes at once
      }
      OutPacket pkt;
      uint64_t lane = 0;
      int64_t enq = 0;
      bool last = false;
      if (!queue_.pop(pkt, &lane, &enq, &last)) continue;
      pacer_.sent(pkt.bytes.size(), now);
      const int tos = dscp_ && priority >= backpressure_.config().urgent_priority ? kTosEf : 0;
      if (tos) ++totals_.marked_datagrams;
      lock.unlock();
      const bool ok = pkt.peer < hosts_.size() &&
                      sendWithTos(socket_.fd(), hosts_[pkt.peer].sa, pkt.bytes.data(), pkt.bytes.size(), tos);
      const int64_t done = monoNs();
      lock.lock();
      ++totals_.datagrams_sent;
      totals_.bytes_sent += pkt.bytes.size();
      if (!ok) ++totals_.send_errors;
      if (!(lane & kForwardLane) && lane < topics_.size()) {
        TopicStats& s = topics_[lane]->s;
        s.sent_datagrams++;
        if (last && pkt.bytes.size() > 5 && pkt.bytes[5] == static_cast<uint8_t>(Kind::Data)) {
          s.sent_msgs++;
          const double d = (done - enq) / 1e9;
          s.delay_sum_s += d;
          s.delay_n++;
          s.delay_max_s = std::max(s.delay_max_s, d);
        }
      }
    }
  }

  /// A datagram from a peer, checked by the receive loop (mu_ held): forwarded when it is
  /// for another host, else reassembled and delivered.
  void onDatagram(const PacketView& p, const uint8_t* bytes, size_t len, int64_t now) {
    if (p.h.src >= hosts_.size() || p.h.dst >= hosts_.size() || p.h.src == self_) {
      countMalformed(totals_.malformed, Error::BadFragment);
      return;
    }
    if (p.h.dst != self_) {
      forward(bytes, len, p.h, now);
      return;
    }
    auto it = by_id_.find(p.h.topic_id);
    if (it == by_id_.end() || !it->second->inbound || it->second->cfg.source != p.h.src) {
      ++totals_.unknown_topic;
      return;
    }
    Message m;
    if (reassembler_.push(p, now, m)) deliver(*it->second, m);
  }

  void forward(const uint8_t* data, size_t len, const PacketHeader& h, int64_t now) {
    if (!forward_) {
      ++totals_.forward_dropped;
      return;
    }
    if (h.ttl <= 1) {
      ++totals_.ttl_expired;
      return;
    }
    const int hop = nextHop(h.dst);
    if (hop == self_ || hop >= static_cast<int>(hosts_.size())) {
      ++totals_.forward_dropped;
      return;
    }
    OutPacket out{std::vector<uint8_t>(data, data + len), static_cast<uint32_t>(hop)};
    out.bytes[10] = static_cast<uint8_t>(h.ttl - 1);
    const uint64_t lane = kForwardLane | (static_cast<uint64_t>(h.src) << 40) | (static_cast<uint64_t>(h.dst) << 32) |
                          h.topic_id;
    std::vector<OutPacket> one;
    one.push_back(std::move(out));
    const auto r = queue_.push(lane, h.priority, std::move(one), now);
    if (r.accepted) ++totals_.forwarded;
    else ++totals_.forward_dropped;
    accountDrops(r);
    cv_.notify_one();
  }

  void deliver(Topic& t, const Message& m) {
    if (m.h.kind == Kind::Type) {
      TypeInfo info;
      if (!decodeTypeInfo(m.data.data(), m.data.size(), info) || info.topic != t.cfg.name) {
        ++totals_.bad_payload;
        return;
      }
      if (!t.outlet->setType(info)) ++totals_.type_mismatch;
      return;
    }
    t.s.received++;
    switch (t.outlet->publishPayload(m.data, m.h.flags, m.h.orig_len, limits_.max_message_bytes)) {
      case Outlet::Delivery::Published: t.s.published++; break;
      case Outlet::Delivery::BadPayload: ++totals_.bad_payload; break;
      case Outlet::Delivery::Untyped: ++totals_.untyped; break;
    }
  }

  ros::NodeHandle& nh_;
  ros::NodeHandle& pnh_;
  int self_ = 0;
  std::vector<Host> hosts_;
  std::map<int, int> routes_;
  std::vector<std::unique_ptr<Topic>> topics_;
  std::map<uint32_t, Topic*> by_id_;
  size_t max_datagram_ = 1472;
  int64_t credit_ns_ = 2000000;
  bool forward_ = true;
  bool dscp_ = false;  // mark datagrams of urgent_priority or above EF
  Backpressure backpressure_;
  int rt_priority_ = 0;
  int compress_level_ = 1;
  int64_t announce_ns_ = 0;
  uint32_t epoch_ = 0;
  ReassemblyLimits limits_;
  Reassembler reassembler_;
  UdpSocket socket_;
  std::mutex mu_;  // the reassembler, the counters, the queue, the pacer, topic stats
  netloop::RelayStats totals_;  // the relay's counters
  UdpReceiveLoop receive_loop_;

  std::condition_variable cv_;
  PriorityQueue queue_;
  Pacer pacer_;
  bool stop_ = false;
  std::thread sender_;
};

int run() {
  ros::NodeHandle nh, pnh("~");
  const double stats_period = requireNumber(pnh, "stats_period", 1.0, Bound::Positive);
  StatsWriter stats(nh, pnh.param<std::string>("stats_topic", kStatsTopic),
                    pnh.param<std::string>("stats_path", ""));
  PriorityRelay relay(nh, pnh);
  relay.pollPriorities();
  relay.start();
  ros::WallTimer poll = nh.createWallTimer(ros::WallDuration(0.2), [&](const ros::WallTimerEvent&) { relay.pollPriorities(); });
  ros::WallTimer timer =
      nh.createWallTimer(ros::WallDuration(stats_period), [&](const ros::WallTimerEvent&) { stats.write(relay.report()); });
  ROS_INFO("priority_relay ready");
  ros::spin();
  stats.write(relay.report());
  return 0;
}

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "priority_relay", netloop::relay::run); }
