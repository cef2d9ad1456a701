// The wire formats of netloop's relays, with no ROS dependency (so they can be fuzzed).
//
// Datagram (UDP relays: nimbro-like sender/receiver, priority relay), little-endian,
// 40-byte header then the fragment's payload:
//
//   off size field
//    0   4  magic        "NLR1"
//    4   1  version      1
//    5   1  kind         1 = data, 2 = type announcement (datatype, md5, definition)
//    6   1  flags        bit 0: payload is zlib-compressed; other bits must be 0
//    7   1  priority     0..255, higher = more urgent (informational at the receiver)
//    8   1  src          host index of the sender (the message's origin)
//    9   1  dst          host index of the final destination
//   10   1  ttl          hops left (forwarding relays decrement it)
//   11   1  reserved     must be 0
//   12   4  topic_id     FNV-1a 32 of the topic name
//   16   4  epoch        random per sender start (a restarted sender is a new stream)
//   20   4  msg_id       per topic and epoch, +1 per message
//   24   4  total_len    bytes of the message as sent (after compression)
//   28   4  orig_len     bytes of the serialized message (== total_len unless compressed)
//   32   2  frag_index   0 .. frag_count-1
//   34   2  frag_count   == ceil(total_len / frag_size), at least 1
//   36   2  frag_size    payload bytes of every fragment but the last
//   38   2  payload_len  == min(frag_size, total_len - frag_index * frag_size)
//
// Every field is checked against the datagram's length and against each other, so a
// fragment's place in its message follows from the header alone: overlapping or
// out-of-range fragments cannot be expressed.
//
// Stream frame (TCP relays), 32-byte header then `len` bytes:
//   magic "NLT1", version, kind, flags, priority, topic_id, epoch, msg_id, orig_len, len,
//   reserved u32 (0)
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace netloop {
namespace relay {

constexpr uint32_t kPacketMagic = 0x31524C4E;  // bytes 'N' 'L' 'R' '1'
constexpr uint32_t kFrameMagic = 0x31544C4E;   // bytes 'N' 'L' 'T' '1'
constexpr uint8_t kVersion = 1;
constexpr size_t kPacketHeaderSize = 40;
constexpr size_t kFrameHeaderSize = 32;
/// IPv4 + UDP headers: a datagram of (mtu - this) bytes fits one link frame.
constexpr size_t kIpUdpOverhead = 28;

enum class Kind : uint8_t { Data = 1, Type = 2 };
constexpr uint8_t kFlagCompressed = 1;

struct PacketHeader {
  Kind kind = Kind::Data;
  uint8_t flags = 0;
  uint8_t priority = 0;
  uint8_t src = 0;
  uint8_t dst = 0;
  uint8_t ttl = 1;
  uint32_t topic_id = 0;
  uint32_t epoch = 0;
  uint32_t msg_id = 0;
  uint32_t total_len = 0;
  uint32_t orig_len = 0;
  uint16_t frag_index = 0;
  uint16_t frag_count = 1;
  uint16_t frag_size = 0;
  uint16_t payload_len = 0;
};

enum class Error {
  Ok = 0,
  TooShort,      // fewer bytes than a header
  BadMagic,      // not ours (or garbage)
  BadVersion,
  BadKind,
  BadFlags,      // unknown flag bits or reserved byte set
  BadLength,     // payload_len disagrees with the datagram or the fragment's place
  BadFragment,   // frag_index/frag_count/frag_size inconsistent
  TooLarge,      // message larger than the configured limit
  Count
};
const char* errorName(Error e);

/// A datagram checked by decodePacket; `payload` points into the caller's buffer.
struct PacketView {
  PacketHeader h;
  const uint8_t* payload = nullptr;
};

/// Checks and decodes one datagram. Never reads outside [data, data+len).
Error decodePacket(const uint8_t* data, size_t len, uint32_t max_message_bytes, PacketView& out);

/// Writes the 40-byte header of `h` to `out`.
void encodeHeader(const PacketHeader& h, uint8_t* out);

/// Splits a message into datagrams of at most `max_datagram` bytes (header included).
/// `base` gives every field but the fragment fields and lengths, which are filled in.
/// Returns no datagram if the message cannot be expressed (more than 65535 fragments).
std::vector<std::vector<uint8_t>> fragment(const PacketHeader& base, const uint8_t* data, size_t len,
                                           size_t max_datagram);

/// FNV-1a 32 of a topic name (the topic id both ends compute).
uint32_t topicId(const std::string& name);

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

// --- Stream frames (TCP) --------------------------------------------------------------

struct FrameHeader {
  Kind kind = Kind::Data;
  uint8_t flags = 0;
  uint8_t priority = 0;
  uint32_t topic_id = 0;
  uint32_t epoch = 0;
  uint32_t msg_id = 0;
  uint32_t orig_len = 0;
  uint32_t len = 0;
};

/// Header + payload of one frame.
std::vector<uint8_t> encodeFrame(const FrameHeader& h, const uint8_t* data, size_t len);

struct Frame {
  FrameHeader h;
  std::vector<uint8_t> data;
};

/// Cuts a byte stream into frames. After an error the stream cannot be trusted (the
/// connection must be closed): error() stays set and next() returns false.
class StreamDecoder {
 public:
  explicit StreamDecoder(uint32_t max_message_bytes) : max_(max_message_bytes) {}
  /// Appends received bytes (never buffers more than one frame's worth plus `len`).
  void feed(const uint8_t* data, size_t len);
  /// The next complete frame, if any.
  bool next(Frame& out);
  Error error() const { return error_; }
  size_t buffered() const { return buf_.size() - off_; }

 private:
  uint32_t max_;
  std::vector<uint8_t> buf_;
  size_t off_ = 0;
  Error error_ = Error::Ok;
};

// --- Payload helpers ----------------------------------------------------------------------

/// A topic and its message type as ROS describes it (what a ShapeShifter needs to
/// republish). Encoded: u16 len + topic, u16 len + datatype, u16 len + md5, u32 len + definition.
struct TypeInfo {
  std::string topic, datatype, md5, definition;
};
std::vector<uint8_t> encodeTypeInfo(const TypeInfo& t);
/// False if the bytes are not a valid type announcement (lengths, charset, md5 form).
/// `topic` must be a ROS name (starts with '/'); datatype "package/Type".
bool decodeTypeInfo(const uint8_t* data, size_t len, TypeInfo& out);

/// zlib; false on failure. `level` 1 (fast) .. 9.
bool compressBytes(const uint8_t* data, size_t len, std::vector<uint8_t>& out, int level = 1);
/// Inflates exactly `orig_len` bytes (refused above `max_bytes`); false on any mismatch.
bool decompressBytes(const uint8_t* data, size_t len, size_t orig_len, size_t max_bytes,
                     std::vector<uint8_t>& out);

// --- Priority scheduling (the Pound scheme) ------------------------------------------------

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
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t seq_ = 0;
  std::map<uint64_t, Lane> lanes_;
};

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
