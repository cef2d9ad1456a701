// The receive side both UDP relays share (nimbro_relay's udp_receiver, priority_relay):
// one thread reads datagrams from the relay's socket, drops those from addresses the relay
// does not accept (counted `foreign`) and malformed ones (counted by reason), expires
// incomplete messages of the relay's reassembler now and then, and hands every checked
// datagram to the relay.
#pragma once

#include <netloop/RelayStats.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "relay_ros.h"
#include "wire/packet.h"
#include "wire/reassembly.h"

namespace netloop {
namespace relay {

class UdpReceiveLoop {
 public:
  /// Whether a datagram from `from` is accepted (a configured peer). Called with `mu` held.
  using AcceptFn = std::function<bool(const sockaddr_in& from)>;
  /// One checked datagram: its decoded view, its bytes, when it arrived (monotonic ns).
  /// Called with `mu` held.
  using DatagramFn = std::function<void(const PacketView& packet, const uint8_t* bytes, size_t len, int64_t now_ns)>;

  /// The loop uses the relay's socket, mutex, reassembler (its limits; it expires it) and
  /// counters (`foreign`, `malformed`), which must outlive it.
  UdpReceiveLoop(UdpSocket& socket, std::mutex& mu, Reassembler& reassembler, netloop::RelayStats& counters,
                 AcceptFn accept, DatagramFn on_datagram);
  ~UdpReceiveLoop();
  UdpReceiveLoop(const UdpReceiveLoop&) = delete;
  UdpReceiveLoop& operator=(const UdpReceiveLoop&) = delete;

  /// Starts the receiving thread.
  void start();
  /// Ends and joins the thread (within one poll timeout); safe to call more than once.
  void stop();
  /// The receiving thread (e.g. to give it a real-time priority).
  std::thread& thread() { return thread_; }

 private:
  void run();

  UdpSocket& socket_;
  std::mutex& mu_;
  Reassembler& reassembler_;
  netloop::RelayStats& counters_;
  AcceptFn accept_;
  DatagramFn on_datagram_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace relay
}  // namespace netloop
