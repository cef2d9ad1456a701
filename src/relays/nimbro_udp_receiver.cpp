// nimbro_udp_receiver: netloop's own nimbro_topic_transport udp_receiver. Binds
// ~address:~port, accepts datagrams only from ~allowed_peers (others dropped and counted),
// reassembles messages (wire/reassembly.h: incomplete ones are dropped after
// ~reassembly_timeout s; memory bounded by ~max_message_bytes, ~max_pending_bytes) and
// republishes each on its topic with the original type (nimbro_receiver.h). Statistics:
// /netloop_relay/stats (netloop/RelayStats, role udp_receiver) and ~stats_path (JSON lines).
#include "netloop/loop_node.h"
#include "nimbro_receiver.h"
#include "relay_stats.h"
#include "udp_receive_loop.h"
#include "wire/packet.h"

namespace netloop {
namespace relay {
namespace {

class UdpReceiver : public ReceiverBase {
 public:
  static constexpr const char* kRole = "udp_receiver";

  UdpReceiver(ros::NodeHandle& nh, ros::NodeHandle& pnh)
      : ReceiverBase(nh, pnh, kRole),
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

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "nimbro_udp_receiver", netloop::relay::runRoleOf<netloop::relay::UdpReceiver>);
}
