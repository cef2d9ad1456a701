// Backpressure of the priority relay (SIOCOUTQ below the socket).
#include "backpressure.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>

namespace netloop {
namespace relay {

long unsentBytes(int fd) {
  int bytes = 0;
  if (::ioctl(fd, SIOCOUTQ, &bytes) != 0) return -1;
  return bytes;
}

bool Backpressure::mustHold(int fd, int priority, size_t relay_queue_bytes, int64_t now_ns) {
  bool hold = false;
  if (priority < cfg_.urgent_priority) {  // read even when off: what waits below, for the stats
    const long below = unsentBytes(fd);
    if (below > 0) below_bytes_max_ = std::max<uint64_t>(below_bytes_max_, static_cast<uint64_t>(below));
    hold = cfg_.max_below_bytes > 0 && below >= static_cast<long>(cfg_.max_below_bytes);
  }
  if (hold) {
    if (hold_start_ns_ < 0) {
      hold_start_ns_ = now_ns;
      ++holds_;
    }
    held_bytes_max_ = std::max<uint64_t>(held_bytes_max_, relay_queue_bytes);
  } else if (hold_start_ns_ >= 0) {
    held_ns_ += now_ns - hold_start_ns_;
    hold_start_ns_ = -1;
  }
  return hold;
}

double Backpressure::heldSeconds(int64_t now_ns) const {
  return (held_ns_ + (hold_start_ns_ >= 0 ? now_ns - hold_start_ns_ : 0)) / 1e9;
}

}  // namespace relay
}  // namespace netloop
