// Datagram encoding, strict decoding and fragmentation (no ROS: fuzzed).
#include "wire/packet.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "wire/byte_order.h"

namespace netloop {
namespace relay {

using byte_order::get16;
using byte_order::get32;
using byte_order::put16;
using byte_order::put32;

uint32_t topicId(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

void encodeHeader(const PacketHeader& h, uint8_t* out) {
  put32(out, kPacketMagic);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(h.kind);
  out[6] = h.flags;
  out[7] = h.priority;
  out[8] = h.src;
  out[9] = h.dst;
  out[10] = h.ttl;
  out[11] = 0;
  put32(out + 12, h.topic_id);
  put32(out + 16, h.epoch);
  put32(out + 20, h.msg_id);
  put32(out + 24, h.total_len);
  put32(out + 28, h.orig_len);
  put16(out + 32, h.frag_index);
  put16(out + 34, h.frag_count);
  put16(out + 36, h.frag_size);
  put16(out + 38, h.payload_len);
}

Error decodePacket(const uint8_t* data, size_t len, uint32_t max_message_bytes, PacketView& out) {
  if (data == nullptr || len < kPacketHeaderSize) return Error::TooShort;
  if (get32(data) != kPacketMagic) return Error::BadMagic;
  if (data[4] != kVersion) return Error::BadVersion;
  if (!isValidKind(data[5])) return Error::BadKind;
  if ((data[6] & ~kFlagCompressed) != 0 || data[11] != 0) return Error::BadFlags;
  PacketHeader h;
  h.kind = static_cast<Kind>(data[5]);
  h.flags = data[6];
  h.priority = data[7];
  h.src = data[8];
  h.dst = data[9];
  h.ttl = data[10];
  h.topic_id = get32(data + 12);
  h.epoch = get32(data + 16);
  h.msg_id = get32(data + 20);
  h.total_len = get32(data + 24);
  h.orig_len = get32(data + 28);
  h.frag_index = get16(data + 32);
  h.frag_count = get16(data + 34);
  h.frag_size = get16(data + 36);
  h.payload_len = get16(data + 38);
  if (h.total_len > max_message_bytes || h.orig_len > max_message_bytes) return Error::TooLarge;
  if (!(h.flags & kFlagCompressed) && h.orig_len != h.total_len) return Error::BadLength;
  if (h.frag_size == 0 || h.frag_count == 0 || h.frag_index >= h.frag_count) return Error::BadFragment;
  const uint64_t expected_count =
      h.total_len == 0 ? 1 : (static_cast<uint64_t>(h.total_len) + h.frag_size - 1) / h.frag_size;
  if (expected_count != h.frag_count) return Error::BadFragment;
  const uint64_t offset = static_cast<uint64_t>(h.frag_index) * h.frag_size;
  const uint64_t expected_payload = std::min<uint64_t>(h.frag_size, h.total_len - offset);  // offset <= total
  if (h.payload_len != expected_payload || len - kPacketHeaderSize != h.payload_len) return Error::BadLength;
  out.h = h;
  out.payload = data + kPacketHeaderSize;
  return Error::Ok;
}

std::vector<std::vector<uint8_t>> fragment(const PacketHeader& base, const uint8_t* data, size_t len,
                                           size_t max_datagram) {
  std::vector<std::vector<uint8_t>> out;
  if (max_datagram <= kPacketHeaderSize || len > std::numeric_limits<uint32_t>::max()) return out;
  const size_t frag_size = std::min<size_t>(max_datagram - kPacketHeaderSize, 65535);
  const size_t count = len == 0 ? 1 : (len + frag_size - 1) / frag_size;
  if (count > 65535) return out;
  out.reserve(count);
  PacketHeader h = base;
  h.total_len = static_cast<uint32_t>(len);
  if (!(h.flags & kFlagCompressed)) h.orig_len = h.total_len;
  h.frag_count = static_cast<uint16_t>(count);
  h.frag_size = static_cast<uint16_t>(frag_size);
  for (size_t i = 0; i < count; ++i) {
    const size_t offset = i * frag_size;
    const size_t n = std::min(frag_size, len - offset);
    h.frag_index = static_cast<uint16_t>(i);
    h.payload_len = static_cast<uint16_t>(n);
    std::vector<uint8_t> pkt(kPacketHeaderSize + n);
    encodeHeader(h, pkt.data());
    if (n) std::memcpy(pkt.data() + kPacketHeaderSize, data + offset, n);
    out.push_back(std::move(pkt));
  }
  return out;
}

}  // namespace relay
}  // namespace netloop
