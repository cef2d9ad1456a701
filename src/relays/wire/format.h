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

/// True for the kinds a datagram or frame may carry.
bool isValidKind(uint8_t kind);

}  // namespace relay
}  // namespace netloop
