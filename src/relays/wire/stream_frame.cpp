// Stream frames and their decoder (no ROS: fuzzed).
#include "wire/stream_frame.h"

#include <cstring>

#include "wire/byte_order.h"

namespace netloop {
namespace relay {

using byte_order::get32;
using byte_order::put32;

std::vector<uint8_t> encodeFrame(const FrameHeader& h, const uint8_t* data, size_t len) {
  std::vector<uint8_t> out(kFrameHeaderSize + len);
  uint8_t* p = out.data();
  put32(p, kFrameMagic);
  p[4] = kVersion;
  p[5] = static_cast<uint8_t>(h.kind);
  p[6] = h.flags;
  p[7] = h.priority;
  put32(p + 8, h.topic_id);
  put32(p + 12, h.epoch);
  put32(p + 16, h.msg_id);
  put32(p + 20, (h.flags & kFlagCompressed) ? h.orig_len : static_cast<uint32_t>(len));
  put32(p + 24, static_cast<uint32_t>(len));
  put32(p + 28, 0);
  if (len) std::memcpy(p + kFrameHeaderSize, data, len);
  return out;
}

void StreamDecoder::feed(const uint8_t* data, size_t len) {
  if (error_ != Error::Ok || len == 0) return;
  if (off_ > 0 && off_ >= buf_.size() / 2) {  // compact
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(off_));
    off_ = 0;
  }
  buf_.insert(buf_.end(), data, data + len);
}

bool StreamDecoder::next(Frame& out) {
  if (error_ != Error::Ok) return false;
  const size_t avail = buf_.size() - off_;
  if (avail < kFrameHeaderSize) return false;
  const uint8_t* p = buf_.data() + off_;
  Error e = Error::Ok;
  FrameHeader h;
  if (get32(p) != kFrameMagic) e = Error::BadMagic;
  else if (p[4] != kVersion) e = Error::BadVersion;
  else if (!isValidKind(p[5])) e = Error::BadKind;
  else if ((p[6] & ~kFlagCompressed) != 0 || get32(p + 28) != 0) e = Error::BadFlags;
  if (e == Error::Ok) {
    h.kind = static_cast<Kind>(p[5]);
    h.flags = p[6];
    h.priority = p[7];
    h.topic_id = get32(p + 8);
    h.epoch = get32(p + 12);
    h.msg_id = get32(p + 16);
    h.orig_len = get32(p + 20);
    h.len = get32(p + 24);
    if (h.len > max_ || h.orig_len > max_) e = Error::TooLarge;
    else if (!(h.flags & kFlagCompressed) && h.orig_len != h.len) e = Error::BadLength;
  }
  if (e != Error::Ok) {
    error_ = e;
    buf_.clear();
    buf_.shrink_to_fit();
    off_ = 0;
    return false;
  }
  if (avail < kFrameHeaderSize + h.len) return false;  // wait for the rest
  out.h = h;
  out.data.assign(p + kFrameHeaderSize, p + kFrameHeaderSize + h.len);
  off_ += kFrameHeaderSize + h.len;
  if (off_ == buf_.size()) {
    buf_.clear();
    off_ = 0;
  }
  return true;
}

}  // namespace relay
}  // namespace netloop
