#include "relay_stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "netloop/json_text.h"
#include "relay_ros.h"

namespace netloop {
namespace relay {
namespace {


/// Builds one JSON object, members in the order they are added.
class JsonObject {
 public:
  JsonObject& add(const char* key, uint64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& add(const char* key, int64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& add(const char* key, int32_t v) { return raw(key, std::to_string(v)); }
  JsonObject& add(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& add(const char* key, const std::string& v) { return raw(key, jsonString(v)); }
  JsonObject& add(const char* key, double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", std::isfinite(v) ? v : 0.0);
    return raw(key, b);
  }
  /// A member whose value is already JSON.
  JsonObject& raw(const std::string& key, const std::string& json) {
    body_ += (body_.empty() ? "" : ",") + jsonString(key) + ":" + json;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

std::string malformedJson(const netloop::RelayMalformed& m) {
  return JsonObject()
      .add("too_short", m.too_short)
      .add("bad_magic", m.bad_magic)
      .add("bad_version", m.bad_version)
      .add("bad_kind", m.bad_kind)
      .add("bad_flags", m.bad_flags)
      .add("bad_length", m.bad_length)
      .add("bad_fragment", m.bad_fragment)
      .add("too_large", m.too_large)
      .str();
}

std::string reassemblyJson(const netloop::RelayReassembly& r) {
  return JsonObject()
      .add("packets", r.packets)
      .add("messages", r.messages)
      .add("duplicate_packets", r.duplicate_packets)
      .add("duplicate_messages", r.duplicate_messages)
      .add("inconsistent", r.inconsistent)
      .add("timed_out", r.timed_out)
      .add("evicted", r.evicted)
      .add("too_large", r.too_large)
      .add("pending_messages", r.pending_messages)
      .add("pending_bytes", r.pending_bytes)
      .str();
}

/// One topic's counters: nimbro_relay's, or the priority relay's.
std::string topicJson(const netloop::RelayTopicStats& t, bool priority_relay) {
  JsonObject o;
  if (priority_relay) {
    o.add("priority", t.priority).add("outbound", static_cast<bool>(t.outbound));
    o.add("in_msgs", t.in_msgs).add("in_bytes", t.in_bytes).add("queued", t.queued).add("dropped", t.dropped);
    o.add("refused", t.refused).add("sent_msgs", t.sent_msgs).add("sent_datagrams", t.sent_datagrams);
    o.add("queue_delay_mean_ms", t.queue_delay_mean_ms).add("queue_delay_max_ms", t.queue_delay_max_ms);
    o.add("received", t.received).add("published", t.published);
  } else {
    o.add("in_msgs", t.in_msgs).add("in_bytes", t.in_bytes).add("out_msgs", t.out_msgs).add("out_bytes", t.out_bytes);
    o.add("rate_dropped", t.rate_dropped).add("queue_dropped", t.queue_dropped).add("send_errors", t.send_errors);
    o.add("published", t.published).add("datagrams", t.datagrams);
  }
  return o.str();
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void stampReport(netloop::RelayStats& report, const std::string& role) {
  report.role = role;
  report.node = ros::this_node::getName();
  report.header.stamp.fromNSec(static_cast<uint64_t>(wallNs()));  // wall clock, as the event records
  report.cpu_s = cpuSeconds();
}

void countMalformed(netloop::RelayMalformed& m, Error reason) {
  switch (reason) {
    case Error::TooShort: ++m.too_short; break;
    case Error::BadMagic: ++m.bad_magic; break;
    case Error::BadVersion: ++m.bad_version; break;
    case Error::BadKind: ++m.bad_kind; break;
    case Error::BadFlags: ++m.bad_flags; break;
    case Error::BadLength: ++m.bad_length; break;
    case Error::BadFragment: ++m.bad_fragment; break;
    case Error::TooLarge: ++m.too_large; break;
    case Error::Ok:
    case Error::Count: break;
  }
}

netloop::RelayReassembly reassemblyReport(const Reassembler& reassembler) {
  const ReassemblyStats& s = reassembler.stats();
  netloop::RelayReassembly r;
  r.packets = s.packets;
  r.messages = s.messages;
  r.duplicate_packets = s.duplicate_packets;
  r.duplicate_messages = s.duplicate_messages;
  r.inconsistent = s.inconsistent;
  r.timed_out = s.timed_out;
  r.evicted = s.evicted;
  r.too_large = s.too_large;
  r.pending_messages = reassembler.pendingMessages();
  r.pending_bytes = reassembler.pendingBytes();
  return r;
}

std::string reportJson(const netloop::RelayStats& s) {
  const bool sender = endsWith(s.role, "_sender"), receiver = endsWith(s.role, "_receiver");
  const bool priority_relay = s.role == "priority_relay";
  JsonObject o;
  o.add("role", s.role).add("node", s.node);
  if (priority_relay) o.add("host", s.host);
  o.add("stamp_ns", static_cast<int64_t>(s.header.stamp.toNSec())).add("cpu_s", s.cpu_s);
  if (sender) o.add("destination", s.destination);
  if (s.role == "tcp_sender") o.add("connected", static_cast<bool>(s.connected)).add("connects", s.connects).add("acks", s.acks);
  if (s.role == "tcp_sender" || priority_relay) o.add("queue_bytes", s.queue_bytes);
  if (priority_relay) {
    o.add("rate_mbit", s.rate_mbit).add("queue_messages", s.queue_messages).add("datagrams_sent", s.datagrams_sent);
    o.add("bytes_sent", s.bytes_sent).add("send_errors", s.send_errors).add("queue_dropped", s.queue_dropped);
    o.add("forwarded", s.forwarded).add("forward_dropped", s.forward_dropped).add("ttl_expired", s.ttl_expired);
    o.add("backpressure_bytes", s.backpressure_bytes).add("held_s", s.held_s).add("holds", s.holds);
    o.add("held_bytes_max", s.held_bytes_max).add("below_bytes_max", s.below_bytes_max);
    o.add("marked_datagrams", s.marked_datagrams);
  }
  if (receiver || priority_relay) {
    o.add("foreign", s.foreign).add("unknown_topic", s.unknown_topic).add("untyped", s.untyped);
    o.add("type_mismatch", s.type_mismatch).add("bad_payload", s.bad_payload);
    o.raw("malformed", malformedJson(s.malformed));
  }
  if (s.role == "udp_receiver" || priority_relay) o.raw("reassembly", reassemblyJson(s.reassembly));
  if (s.role == "tcp_receiver") {
    o.add("connections", s.connections).add("accepted", s.accepted).add("refused", s.refused);
    o.add("stream_errors", s.stream_errors);
  }
  JsonObject topics;
  for (const auto& t : s.topics) topics.raw(t.topic, topicJson(t, priority_relay));
  o.raw("topics", topics.str());
  return o.str();
}

StatsWriter::StatsWriter(ros::NodeHandle nh, const std::string& topic, const std::string& path) : path_(path) {
  pub_ = nh.advertise<netloop::RelayStats>(topic, 10);
  if (!path.empty()) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) ROS_WARN("relay stats: cannot open %s: %s", path.c_str(), std::strerror(errno));
  }
}

StatsWriter::~StatsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void StatsWriter::write(const netloop::RelayStats& report) {
  pub_.publish(report);
  if (fd_ >= 0) {
    const std::string line = reportJson(report) + "\n";
    if (::write(fd_, line.data(), line.size()) < 0) ROS_WARN_ONCE("relay stats: write failed");
  }
}

}  // namespace relay
}  // namespace netloop
