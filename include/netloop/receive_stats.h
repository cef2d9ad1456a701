// What a subscriber of this package received and what it lost, and where it was lost.
//
// roscpp tells user code nothing about the messages it discards, so a receiving node counts
// two things and writes them at exit next to its event record (`<record>.receive.json`,
// format "netloop-receive/1"; no file when the node records nothing):
//
//   received                messages that reached the callback
//   duplicates, reordered   arrivals with a seq already seen / lower than the highest seen
//   first_seq, highest_seq  the sequence numbers counted from (see below) and the highest seen
//   missing_seqs            sequence numbers in [first_seq, highest_seq] never received
//   wire_messages           messages roscpp read from the connection(s) of the topic
//   subscriber_queue_drops  messages roscpp read but discarded because the subscriber queue
//                           was full (roscpp's own count, the `drops` of getBusStats)
//   lost_before_subscriber  missing_seqs - subscriber_queue_drops: discarded by the
//                           publisher's queue or lost on the network
//
// Sequence numbers: netloop/LoopSample messages are numbered by netloop's publishers from 0,
// so they are counted from 0 (a loss of the first messages counts too); for any other type
// the header's seq is the publisher's own, so counting starts at the first one received.
// Messages lost after the highest received seq cannot be seen here: the sender's tx record
// (sent - received) covers them.
//
// Why the publisher's drops can only be inferred: roscpp counts a published message as sent
// when it enters the per-connection outbox, before it discards the oldest one of a full
// outbox (TransportSubscriberLink::enqueueMessage), so neither the publisher's code nor its
// getBusStats can see them. On TCPROS the network loses nothing while a connection lives,
// so there lost_before_subscriber IS the publisher queue's drops; on UDPROS it adds the
// datagrams the network lost.
//
// roscpp's per-connection counters are read through the node's own slave API (XML-RPC
// getBusStats, what `rosnode info` and rqt read; roscpp has no C++ call for them). They vanish
// when a connection closes, so they are polled (every 100 ms, in a thread of their own so a
// slow callback does not delay it) and the last value of each connection is kept.
#pragma once

#include <ros/ros.h>
#include <ros/network.h>
#include <ros/xmlrpc_manager.h>
#include <xmlrpcpp/XmlRpcClient.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netloop {

/// Sequence-number bookkeeping of one topic (not thread-safe: the callback's thread only).
class SeqTracker {
 public:
  /// `origin` >= 0: count from that seq; -1: count from the first seq received.
  explicit SeqTracker(int64_t origin) : origin_(origin) {}

  void add(uint64_t seq) {
    ++received_;
    if (origin_ < 0) origin_ = static_cast<int64_t>(seq);
    if (static_cast<int64_t>(seq) < origin_) return;  // before counting started: nothing to say
    const uint64_t offset = seq - static_cast<uint64_t>(origin_);
    if (offset >= kMaxSpan) {
      too_wide_ = true;
      return;
    }
    if (offset >= seen_.size()) seen_.resize(offset + 1, false);
    if (seen_[offset]) {
      ++duplicates_;
      return;
    }
    if (have_highest_ && seq < highest_) ++reordered_;
    seen_[offset] = true;
    ++distinct_;
    if (!have_highest_ || seq > highest_) highest_ = seq;
    have_highest_ = true;
  }

  uint64_t received() const { return received_; }
  /// Sequence numbers in [origin, highest] not received; -1 when the seqs spread too wide.
  int64_t missing() const {
    if (too_wide_) return -1;
    return have_highest_ ? static_cast<int64_t>(seen_.size() - distinct_) : 0;
  }
  int64_t origin() const { return origin_; }
  int64_t highest() const { return have_highest_ ? static_cast<int64_t>(highest_) : -1; }
  uint64_t duplicates() const { return duplicates_; }
  uint64_t reordered() const { return reordered_; }

 private:
  static constexpr uint64_t kMaxSpan = 1ULL << 28;  // 32 MiB of flags at most
  int64_t origin_;
  std::vector<bool> seen_;
  uint64_t received_ = 0, distinct_ = 0, duplicates_ = 0, reordered_ = 0, highest_ = 0;
  bool have_highest_ = false, too_wide_ = false;
};

/// roscpp's own counters of a subscribed topic, summed over its connections.
struct WireCounts {
  int64_t messages = 0;  ///< read from the connection(s)
  int64_t drops = 0;     ///< discarded because the subscriber queue was full
};

/// Polls roscpp's subscriber statistics of `topic` (resolved name) in a background thread.
class WireCounter {
 public:
  explicit WireCounter(std::string topic) : topic_(std::move(topic)), thread_([this] { loop(); }) {}
  ~WireCounter() {
    stop_ = true;
    thread_.join();
  }
  WireCounter(const WireCounter&) = delete;
  WireCounter& operator=(const WireCounter&) = delete;

  /// Reads the counters now (while the connections are up) and returns the totals; once the
  /// node is shut down, the totals of the last successful reading.
  WireCounts poll() {
    std::lock_guard<std::mutex> lock(mutex_);
    XmlRpc::XmlRpcValue stats;
    if (readBusStats(stats)) {
      // stats[1]: one [topic, [[connection_id, bytes, messages, drops, _], ...]] per subscription
      XmlRpc::XmlRpcValue& subs = stats[1];
      for (int i = 0; subs.getType() == XmlRpc::XmlRpcValue::TypeArray && i < subs.size(); ++i) {
        if (std::string(subs[i][0]) != topic_) continue;
        XmlRpc::XmlRpcValue& conns = subs[i][1];
        for (int c = 0; conns.getType() == XmlRpc::XmlRpcValue::TypeArray && c < conns.size(); ++c) {
          WireCounts& last = per_connection_[int(conns[c][0])];
          last.messages = std::max<int64_t>(last.messages, int(conns[c][2]));
          last.drops = std::max<int64_t>(last.drops, int(conns[c][3]));
        }
      }
    }
    WireCounts total;
    for (const auto& kv : per_connection_) {
      total.messages += kv.second.messages;
      total.drops += kv.second.drops;
    }
    return total;
  }

 private:
  /// getBusStats of this node through its own XML-RPC server; false when it cannot be read.
  bool readBusStats(XmlRpc::XmlRpcValue& stats) {
    if (!ros::isStarted() || ros::isShuttingDown()) return false;
    std::string host;
    uint32_t port = 0;
    if (!ros::network::splitURI(ros::XMLRPCManager::instance()->getServerURI(), host, port)) return false;
    XmlRpc::XmlRpcClient client(host.c_str(), static_cast<int>(port), "/");
    XmlRpc::XmlRpcValue args, result;
    args[0] = ros::this_node::getName();
    const bool ok = client.execute("getBusStats", args, result) && result.getType() == XmlRpc::XmlRpcValue::TypeArray &&
                    result.size() >= 2;
    client.close();
    if (!ok) return false;
    // The slave API's answer is [code, status, stats]; roscpp 1.15's own answer is the stats
    // themselves ([publications, subscriptions, ...]: its callback writes them over the result).
    if (result[0].getType() == XmlRpc::XmlRpcValue::TypeInt) {
      if (int(result[0]) != 1 || result.size() < 3) return false;
      stats = result[2];
    } else {
      stats = result;
    }
    return stats.getType() == XmlRpc::XmlRpcValue::TypeArray && stats.size() >= 2;
  }

  void loop() {
    while (!stop_) {
      poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::string topic_;
  std::mutex mutex_;
  std::map<int, WireCounts> per_connection_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Where a receiving node writes its summary: the record path with ".csv" replaced by
/// ".receive.json" (empty when the node records nothing).
inline std::string receiveSummaryPath(const std::string& record_path) {
  if (record_path.empty()) return "";
  const std::string csv = ".csv";
  const bool ends_csv = record_path.size() > csv.size() &&
                        record_path.compare(record_path.size() - csv.size(), csv.size(), csv) == 0;
  return (ends_csv ? record_path.substr(0, record_path.size() - csv.size()) : record_path) + ".receive.json";
}

/// Writes the "netloop-receive/1" summary of one subscribed topic (see the top of this file).
inline void writeReceiveSummary(const std::string& path, const std::string& topic, const SeqTracker& seqs,
                                const WireCounts& wire, uint32_t subscriber_queue_size) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    ROS_ERROR("cannot write %s", tmp.c_str());
    return;
  }
  const int64_t missing = seqs.missing();
  std::fprintf(f,
               "{\"format\": \"netloop-receive/1\", \"node\": \"%s\", \"topic\": \"%s\", "
               "\"subscriber_queue_size\": %u, \"received\": %llu, \"duplicates\": %llu, \"reordered\": %llu, "
               "\"first_seq\": %lld, \"highest_seq\": %lld, \"missing_seqs\": %lld, \"wire_messages\": %lld, "
               "\"subscriber_queue_drops\": %lld, \"lost_before_subscriber\": %lld}\n",
               ros::this_node::getName().c_str(), topic.c_str(), subscriber_queue_size,
               static_cast<unsigned long long>(seqs.received()), static_cast<unsigned long long>(seqs.duplicates()),
               static_cast<unsigned long long>(seqs.reordered()), static_cast<long long>(seqs.origin()),
               static_cast<long long>(seqs.highest()), static_cast<long long>(missing),
               static_cast<long long>(wire.messages), static_cast<long long>(wire.drops),
               static_cast<long long>(missing < 0 ? -1 : std::max<int64_t>(0, missing - wire.drops)));
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace netloop
