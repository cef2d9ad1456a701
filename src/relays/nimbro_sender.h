// What both nimbro senders share (nimbro_udp_sender, nimbro_tcp_sender): they subscribe each
// topic of ~topics (any type: ShapeShifter) on their host, serialize each message, drop it if
// over the topic's `rate` [Hz], compress it (zlib) if the topic says `compress: true`, and
// announce each topic's type (datatype, md5, definition) before its first message and every
// ~type_announce_period s, so a receiver needs no configuration. How a message leaves is the
// role's: SenderBase::sendMessage.
#pragma once

#include <netinet/in.h>

#include <memory>
#include <string>
#include <vector>

#include "nimbro_role.h"
#include "relay_ros.h"
#include "wire/format.h"

namespace netloop {
namespace relay {

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

class SenderBase : public RoleRelay {
 public:
  /// Reads ~topics, ~destination_addr, ~destination_port, ~type_announce_period, ~compress_level.
  SenderBase(ros::NodeHandle& nh, ros::NodeHandle& pnh, const std::string& role);

  /// Subscribes every topic.
  void start() override;
  netloop::RelayStats report() override;

 protected:
  /// Sends one message (a type announcement or data) of `t` the role's way.
  virtual void sendMessage(SendTopic& t, Kind kind, uint8_t flags, uint32_t msg_id, uint32_t orig_len,
                           std::vector<uint8_t> bytes) = 0;
  /// The fields of this sender's role.
  virtual void addToReport(netloop::RelayStats&) {}

  void onMessage(SendTopic& t, const topic_tools::ShapeShifter& m);

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

}  // namespace relay
}  // namespace netloop
