#include "nimbro_receiver.h"

#include "netloop/loop_node.h"
#include "relay_stats.h"

namespace netloop {
namespace relay {

ReceiverBase::ReceiverBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role)
    : nh_(nh), role_(role) {
  limits_.max_message_bytes =
      static_cast<uint32_t>(requireNumber(pnh, "max_message_bytes", 16 << 20, Bound::Positive));
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

netloop::RelayStats ReceiverBase::report() {
  std::lock_guard<std::mutex> lock(mu_);
  netloop::RelayStats r = totals_;
  stampReport(r, role_);
  for (auto& [id, t] : topics_) r.topics.push_back(topicReport(t.outlet->topic(), t.c));
  addToReport(r);
  return r;
}

bool ReceiverBase::expects(Kind kind, uint32_t topic_id) const {
  return topics_.count(topic_id) || (accept_unknown_ && kind == Kind::Type);
}

void ReceiverBase::deliver(Kind kind, uint32_t id, uint8_t flags, uint32_t orig_len,
                           const std::vector<uint8_t>& data) {
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

}  // namespace relay
}  // namespace netloop
