// Datagrams of the UDP relays (format: format.h): strict decoding, encoding, fragmentation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "wire/format.h"

namespace netloop {
namespace relay {

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

}  // namespace relay
}  // namespace netloop
