#include "udp_receive_loop.h"

#include <vector>

#include "relay_stats.h"

namespace netloop {
namespace relay {
namespace {
constexpr int kPollTimeoutMs = 100;           // how soon stop() is noticed
constexpr int64_t kExpirePeriodNs = 20000000;  // incomplete messages are expired this often
constexpr size_t kMaxDatagramBytes = 65536;
}  // namespace

UdpReceiveLoop::UdpReceiveLoop(UdpSocket& socket, std::mutex& mu, Reassembler& reassembler,
                               netloop::RelayStats& counters, AcceptFn accept, DatagramFn on_datagram)
    : socket_(socket),
      mu_(mu),
      reassembler_(reassembler),
      counters_(counters),
      accept_(std::move(accept)),
      on_datagram_(std::move(on_datagram)) {}

UdpReceiveLoop::~UdpReceiveLoop() { stop(); }

void UdpReceiveLoop::start() { thread_ = std::thread([this] { run(); }); }

void UdpReceiveLoop::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void UdpReceiveLoop::run() {
  std::vector<uint8_t> buf(kMaxDatagramBytes);
  int64_t last_expire = monoNs();
  while (!stop_) {
    sockaddr_in from{};
    const ssize_t n = socket_.recvFrom(buf.data(), buf.size(), from, kPollTimeoutMs);
    const int64_t now = monoNs();
    std::lock_guard<std::mutex> lock(mu_);
    if (now - last_expire > kExpirePeriodNs) {
      reassembler_.expire(now);
      last_expire = now;
    }
    if (n < 0) continue;
    if (!accept_(from)) {
      ++counters_.foreign;
      continue;
    }
    PacketView packet;
    const Error e = decodePacket(buf.data(), static_cast<size_t>(n), reassembler_.limits().max_message_bytes, packet);
    if (e != Error::Ok) {
      countMalformed(counters_.malformed, e);
      continue;
    }
    on_datagram_(packet, buf.data(), static_cast<size_t>(n), now);
  }
}

}  // namespace relay
}  // namespace netloop
