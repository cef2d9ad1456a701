// Reassembly of fragmented datagrams into messages, with bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "wire/packet.h"

namespace netloop {
namespace relay {

/// One reassembled message.
struct Message {
  PacketHeader h;              // of its first fragment (fragment fields meaningless)
  std::vector<uint8_t> data;   // total_len bytes (compressed if h.flags says so)
};

struct ReassemblyLimits {
  uint32_t max_message_bytes = 16u << 20;   // a larger message is refused
  size_t max_pending_bytes = 32u << 20;     // sum of the buffers of incomplete messages
  size_t max_pending_messages = 64;         // incomplete messages kept at once
  int64_t timeout_ns = 500000000;           // an incomplete message older than this is dropped
  size_t dedup_window = 256;                // recent message ids remembered per stream
  size_t max_streams = 1024;                // (src, kind, topic) streams with a dedup history
};

struct ReassemblyStats {
  uint64_t packets = 0;             // accepted by push()
  uint64_t messages = 0;            // completed
  uint64_t duplicate_packets = 0;   // a fragment already held
  uint64_t duplicate_messages = 0;  // fragments of a message already delivered
  uint64_t inconsistent = 0;        // fragment disagrees with the others of its message
  uint64_t timed_out = 0;           // incomplete messages dropped after the timeout
  uint64_t evicted = 0;             // incomplete messages dropped to respect the limits
  uint64_t too_large = 0;           // messages refused by size
};

/// Reassembles fragmented messages. Memory is bounded by the limits whatever arrives:
/// duplicated, reordered, truncated or hostile datagrams only cost counters.
class Reassembler {
 public:
  explicit Reassembler(ReassemblyLimits limits = {});

  /// Takes one decoded datagram (decodePacket returned Ok). Returns true and fills `out`
  /// when it completes a message not delivered before.
  bool push(const PacketView& p, int64_t now_ns, Message& out);
  /// Drops incomplete messages older than the timeout; call it now and then.
  void expire(int64_t now_ns);

  size_t pendingMessages() const { return partial_.size(); }
  size_t pendingBytes() const { return pending_bytes_; }
  const ReassemblyStats& stats() const { return stats_; }
  const ReassemblyLimits& limits() const { return limits_; }

 private:
  struct Key {
    uint8_t src, kind;
    uint32_t topic_id, epoch, msg_id;
    bool operator<(const Key& o) const;
  };
  struct StreamKey {
    uint8_t src, kind;
    uint32_t topic_id;
    bool operator<(const StreamKey& o) const;
  };
  struct Partial {
    PacketHeader h;
    std::vector<uint8_t> data;
    std::vector<bool> have;
    uint32_t received = 0;
    int64_t first_ns = 0;
  };
  struct Recent {
    std::deque<uint64_t> ids;  // (epoch << 32) | msg_id, newest last
  };

  bool seen(const StreamKey& s, uint64_t id) const;
  void remember(const StreamKey& s, uint64_t id);
  void dropPartial(std::map<Key, Partial>::iterator it);
  bool makeRoom(size_t bytes);

  ReassemblyLimits limits_;
  ReassemblyStats stats_;
  std::map<Key, Partial> partial_;
  std::map<StreamKey, Recent> recent_;
  size_t pending_bytes_ = 0;
};

}  // namespace relay
}  // namespace netloop
