// What both nimbro receivers share (nimbro_udp_receiver, nimbro_tcp_receiver): limits,
// ~allowed_peers, the configured topics (advertised at start when their type is given), and
// delivery of a complete message — a type announcement (a new topic's outlet when
// ~accept_unknown_topics) or data, republished with the original type. How messages arrive is
// the role's.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nimbro_role.h"
#include "relay_ros.h"
#include "wire/format.h"
#include "wire/reassembly.h"

namespace netloop {
namespace relay {

struct RecvTopic {
  std::unique_ptr<Outlet> outlet;
  Counters c;
  bool configured = false;
};

class ReceiverBase : public RoleRelay {
 public:
  /// Reads the limits (~max_message_bytes, ~max_pending_bytes, ~max_pending_messages,
  /// ~reassembly_timeout, ~max_topics), ~allowed_peers, ~topics, ~accept_unknown_topics,
  /// ~address and ~port.
  ReceiverBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role);

  netloop::RelayStats report() override;

 protected:
  /// The fields of this receiver's role (mu_ held).
  virtual void addToReport(netloop::RelayStats&) {}

  /// Whether a message of this kind and topic is taken (a configured topic, or the type
  /// announcement of a new one when unknown topics are accepted); mu_ held.
  bool expects(Kind kind, uint32_t topic_id) const;

  /// A complete message (reassembled or framed) for topic `id`; called with mu_ held.
  void deliver(Kind kind, uint32_t id, uint8_t flags, uint32_t orig_len, const std::vector<uint8_t>& data);

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

}  // namespace relay
}  // namespace netloop
