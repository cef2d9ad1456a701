// Datagram pacing.
#include "wire/pacer.h"

#include <algorithm>

namespace netloop {
namespace relay {

void Pacer::sent(size_t bytes, int64_t now_ns) {
  if (rate_ <= 0) {
    next_ns_ = now_ns;
    return;
  }
  const int64_t start = std::max(next_ns_, now_ns - credit_);  // bounded credit for late wake-ups
  next_ns_ = start + static_cast<int64_t>((bytes + overhead_) * 8.0 / rate_ * 1e9);
}

}  // namespace relay
}  // namespace netloop
