// Pacing of datagrams at a configured rate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/format.h"

namespace netloop {
namespace relay {

/// Paces datagrams at `rate_bps` counting each as payload + `overhead_bytes` (IP/UDP,
/// or link framing): a datagram may go when now >= readyAt(). rate 0 = no pacing. Time
/// lost to a late wake-up is made up for, up to `credit_ns` (never a larger burst).
class Pacer {
 public:
  Pacer(double rate_bps = 0, size_t overhead_bytes = kIpUdpOverhead, int64_t credit_ns = 0)
      : rate_(rate_bps), overhead_(overhead_bytes), credit_(credit_ns) {}
  int64_t readyAt() const { return next_ns_; }
  void sent(size_t bytes, int64_t now_ns);
  double rate() const { return rate_; }
  void setRate(double rate_bps) { rate_ = rate_bps; }

 private:
  double rate_;
  size_t overhead_;
  int64_t credit_;
  int64_t next_ns_ = 0;
};

}  // namespace relay
}  // namespace netloop
