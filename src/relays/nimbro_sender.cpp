#include "nimbro_sender.h"

#include "netloop/loop_node.h"
#include "relay_stats.h"
#include "wire/compression.h"

namespace netloop {
namespace relay {

SenderBase::SenderBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role)
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

void SenderBase::start() {
  for (size_t i = 0; i < topics_.size(); ++i) {
    SendTopic* t = topics_[i].get();
    t->sub = nh_.subscribe<topic_tools::ShapeShifter>(
        t->cfg.name, 20, [this, t](const topic_tools::ShapeShifter::ConstPtr& m) { onMessage(*t, *m); },
        ros::VoidConstPtr(), ros::TransportHints().tcp().tcpNoDelay());
  }
}

netloop::RelayStats SenderBase::report() {
  netloop::RelayStats r;
  stampReport(r, role_);
  r.destination = dest_ip_ + ":" + std::to_string(dest_port_);
  for (const auto& t : topics_) r.topics.push_back(topicReport(t->cfg.name, t->c));
  addToReport(r);
  return r;
}

void SenderBase::onMessage(SendTopic& t, const topic_tools::ShapeShifter& m) {
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

}  // namespace relay
}  // namespace netloop
