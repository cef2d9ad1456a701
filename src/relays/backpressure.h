// Backpressure of the priority relay: a datagram that is not urgent leaves only while the
// bytes still unsent below the relay's UDP socket are under a threshold, so the backlog of
// low-priority data waits in the relay (where priorities decide), not in the host's qdisc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace netloop {
namespace relay {

/// Bytes a socket has handed to the kernel that are not yet freed (ioctl SIOCOUTQ; for UDP:
/// sk_wmem_alloc, the truesize of its packets still in the qdisc or in a device that has not
/// orphaned them — a tap or veth frees them on entry), or -1 on error.
long unsentBytes(int fd);

struct BackpressureConfig {
  size_t max_below_bytes = 0;  // a low-priority datagram goes while unsent < this; 0 = off
  int urgent_priority = 250;   // datagrams of this priority or above never wait
  int64_t poll_ns = 300000;    // how long a held datagram waits before the next look
};

/// Decides whether the next datagram waits, and counts how long and how much was held.
/// Not thread-safe (the relay's mutex guards it).
class Backpressure {
 public:
  explicit Backpressure(BackpressureConfig config = {}) : cfg_(config) {}
  /// Whether a datagram of `priority` must wait now, reading `fd`'s unsent bytes when it is
  /// not urgent; a hold starts (counted) at `now_ns` when it must, ends when it may go.
  bool mustHold(int fd, int priority, size_t relay_queue_bytes, int64_t now_ns);
  const BackpressureConfig& config() const { return cfg_; }

  /// Time datagrams were held so far (the ongoing hold up to `now_ns` included) [s].
  double heldSeconds(int64_t now_ns) const;
  uint64_t holds() const { return holds_; }                    // hold episodes
  uint64_t heldBytesMax() const { return held_bytes_max_; }    // most relay-queue bytes while held
  uint64_t belowBytesMax() const { return below_bytes_max_; }  // most unsent bytes read below (even when off)

 private:
  BackpressureConfig cfg_;
  int64_t hold_start_ns_ = -1;
  int64_t held_ns_ = 0;
  uint64_t holds_ = 0, held_bytes_max_ = 0, below_bytes_max_ = 0;
};

}  // namespace relay
}  // namespace netloop
