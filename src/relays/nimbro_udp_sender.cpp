// nimbro_udp_sender: netloop's own nimbro_topic_transport udp_sender. Subscribes each topic of
// ~topics (nimbro_sender.h: rate limit, zlib, type announcements), splits each message into
// datagrams that fit one ~mtu-byte IP packet (wire/packet.h) and sends them from ~address to
// ~destination_addr:~destination_port. Statistics: /netloop_relay/stats (netloop/RelayStats,
// role udp_sender) and ~stats_path (JSON lines).
#include "netloop/loop_node.h"
#include "nimbro_sender.h"
#include "wire/packet.h"

namespace netloop {
namespace relay {
namespace {

class UdpSender : public SenderBase {
 public:
  static constexpr const char* kRole = "udp_sender";

  UdpSender(ros::NodeHandle& nh, ros::NodeHandle& pnh) : SenderBase(nh, pnh, kRole) {
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

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "nimbro_udp_sender", netloop::relay::runRoleOf<netloop::relay::UdpSender>);
}
