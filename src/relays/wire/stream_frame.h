// Stream frames of the TCP relays (format: format.h): encoding and a strict stream decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/format.h"

namespace netloop {
namespace relay {

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

}  // namespace relay
}  // namespace netloop
