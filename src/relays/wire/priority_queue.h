// The send queue of the priority relay (the Pound scheme): lanes ordered by priority.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace netloop {
namespace relay {

/// One datagram waiting to be sent, and where to.
struct OutPacket {
  std::vector<uint8_t> bytes;
  uint32_t peer = 0;  // index of the peer it goes to
};

/// The single send queue of a priority relay: messages (each a list of datagrams) in lanes
/// (one per topic or forwarded stream), each lane with a priority. pop() always gives the
/// next datagram of the oldest message of the most urgent non-empty lane, so a message of
/// higher priority overtakes a lower one between two datagrams. The queue holds at most
/// `max_bytes`; room is made by dropping whole messages, lowest priority first (within a
/// lane, the oldest first); a message is refused when only more urgent ones could go.
class PriorityQueue {
 public:
  explicit PriorityQueue(size_t max_bytes) : max_bytes_(max_bytes) {}

  struct PushResult {
    bool accepted = false;
    uint64_t dropped_messages = 0;  // queued messages dropped to make room
    uint64_t dropped_bytes = 0;
    std::vector<uint64_t> dropped_lanes;  // the lane of each dropped message
  };
  PushResult push(uint64_t lane, int priority, std::vector<OutPacket> packets, int64_t now_ns = 0);
  /// The next datagram to send; false when empty. `lane` and `enqueued_ns` describe it.
  bool pop(OutPacket& out, uint64_t* lane = nullptr, int64_t* enqueued_ns = nullptr, bool* last = nullptr);
  /// The priority of the lane pop() takes the next datagram from; -1 when empty.
  int headPriority() const;
  /// Changes a lane's priority; queued messages follow at once.
  void setPriority(uint64_t lane, int priority);
  int priority(uint64_t lane) const;

  bool empty() const { return bytes_ == 0; }
  size_t bytes() const { return bytes_; }
  size_t messages() const;
  size_t maxBytes() const { return max_bytes_; }

 private:
  struct Queued {
    uint64_t seq;
    int64_t enqueued_ns;
    std::vector<OutPacket> packets;
    size_t next = 0;
    size_t bytes_left = 0;
  };
  struct Lane {
    int priority = 0;
    std::deque<Queued> msgs;
  };
  /// The most urgent non-empty lane (its id in `*lane_id`), or nullptr.
  Lane* head(uint64_t* lane_id);
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t seq_ = 0;
  std::map<uint64_t, Lane> lanes_;
};

}  // namespace relay
}  // namespace netloop
