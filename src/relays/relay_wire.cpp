// The relays' wire formats: encoding, strict decoding, reassembly, priority queue, pacing.
// No ROS here (see relay_wire.h); fuzzed by test/fuzz/fuzz_relay_wire.cpp.
#include "relay_wire.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

namespace netloop {
namespace relay {
namespace {

void put16(uint8_t* p, uint16_t v) { p[0] = v & 0xff; p[1] = v >> 8; }
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (v >> (8 * i)) & 0xff;
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

bool validKind(uint8_t k) { return k == static_cast<uint8_t>(Kind::Data) || k == static_cast<uint8_t>(Kind::Type); }

}  // namespace

const char* errorName(Error e) {
  switch (e) {
    case Error::Ok: return "ok";
    case Error::TooShort: return "too_short";
    case Error::BadMagic: return "bad_magic";
    case Error::BadVersion: return "bad_version";
    case Error::BadKind: return "bad_kind";
    case Error::BadFlags: return "bad_flags";
    case Error::BadLength: return "bad_length";
    case Error::BadFragment: return "bad_fragment";
    case Error::TooLarge: return "too_large";
    case Error::Count: break;
  }
  return "?";
}

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
  if (!validKind(data[5])) return Error::BadKind;
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

// --- Reassembler --------------------------------------------------------------------------

bool Reassembler::Key::operator<(const Key& o) const {
  if (src != o.src) return src < o.src;
  if (kind != o.kind) return kind < o.kind;
  if (topic_id != o.topic_id) return topic_id < o.topic_id;
  if (epoch != o.epoch) return epoch < o.epoch;
  return msg_id < o.msg_id;
}

bool Reassembler::StreamKey::operator<(const StreamKey& o) const {
  if (src != o.src) return src < o.src;
  if (kind != o.kind) return kind < o.kind;
  return topic_id < o.topic_id;
}

Reassembler::Reassembler(ReassemblyLimits limits) : limits_(limits) {}

bool Reassembler::seen(const StreamKey& s, uint64_t id) const {
  auto it = recent_.find(s);
  if (it == recent_.end()) return false;
  return std::find(it->second.ids.rbegin(), it->second.ids.rend(), id) != it->second.ids.rend();
}

void Reassembler::remember(const StreamKey& s, uint64_t id) {
  if (limits_.dedup_window == 0) return;
  auto it = recent_.find(s);
  if (it == recent_.end()) {
    if (recent_.size() >= limits_.max_streams) recent_.erase(recent_.begin());
    it = recent_.emplace(s, Recent{}).first;
  }
  it->second.ids.push_back(id);
  while (it->second.ids.size() > limits_.dedup_window) it->second.ids.pop_front();
}

void Reassembler::dropPartial(std::map<Key, Partial>::iterator it) {
  pending_bytes_ -= it->second.data.size();
  partial_.erase(it);
}

bool Reassembler::makeRoom(size_t bytes) {
  if (bytes > limits_.max_pending_bytes) return false;
  while (!partial_.empty() &&
         (pending_bytes_ + bytes > limits_.max_pending_bytes || partial_.size() >= limits_.max_pending_messages)) {
    auto oldest = partial_.begin();
    for (auto it = partial_.begin(); it != partial_.end(); ++it)
      if (it->second.first_ns < oldest->second.first_ns) oldest = it;
    dropPartial(oldest);
    ++stats_.evicted;
  }
  return limits_.max_pending_messages > 0;
}

bool Reassembler::push(const PacketView& p, int64_t now_ns, Message& out) {
  const PacketHeader& h = p.h;
  if (h.total_len > limits_.max_message_bytes || h.orig_len > limits_.max_message_bytes) {
    ++stats_.too_large;
    return false;
  }
  ++stats_.packets;
  const StreamKey sk{h.src, static_cast<uint8_t>(h.kind), h.topic_id};
  const uint64_t id = (static_cast<uint64_t>(h.epoch) << 32) | h.msg_id;
  const Key key{h.src, static_cast<uint8_t>(h.kind), h.topic_id, h.epoch, h.msg_id};
  auto it = partial_.find(key);
  if (it == partial_.end()) {
    if (seen(sk, id)) {
      ++stats_.duplicate_messages;
      return false;
    }
    if (h.frag_count == 1) {  // the common small message: no buffering
      out.h = h;
      out.data.assign(p.payload, p.payload + h.payload_len);
      remember(sk, id);
      ++stats_.messages;
      return true;
    }
    if (!makeRoom(h.total_len)) {
      ++stats_.too_large;
      return false;
    }
    Partial part;
    part.h = h;
    part.data.assign(h.total_len, 0);
    part.have.assign(h.frag_count, false);
    part.first_ns = now_ns;
    pending_bytes_ += h.total_len;
    it = partial_.emplace(key, std::move(part)).first;
  }
  Partial& part = it->second;
  const PacketHeader& f = part.h;
  if (f.total_len != h.total_len || f.orig_len != h.orig_len || f.frag_count != h.frag_count ||
      f.frag_size != h.frag_size || f.flags != h.flags) {
    ++stats_.inconsistent;  // the whole message is suspect
    dropPartial(it);
    return false;
  }
  if (part.have[h.frag_index]) {
    ++stats_.duplicate_packets;
    return false;
  }
  // decodePacket guarantees offset + payload_len <= total_len.
  std::memcpy(part.data.data() + static_cast<size_t>(h.frag_index) * h.frag_size, p.payload, h.payload_len);
  part.have[h.frag_index] = true;
  if (++part.received < part.h.frag_count) return false;
  out.h = part.h;
  out.h.priority = h.priority;
  out.data = std::move(part.data);
  part.data.clear();
  pending_bytes_ -= out.data.size();
  partial_.erase(it);
  remember(sk, id);
  ++stats_.messages;
  return true;
}

void Reassembler::expire(int64_t now_ns) {
  for (auto it = partial_.begin(); it != partial_.end();) {
    if (now_ns - it->second.first_ns > limits_.timeout_ns) {
      auto next = std::next(it);
      dropPartial(it);
      ++stats_.timed_out;
      it = next;
    } else {
      ++it;
    }
  }
}

// --- Stream frames --------------------------------------------------------------------------

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
  else if (!validKind(p[5])) e = Error::BadKind;
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

// --- Type announcements ------------------------------------------------------------------------

std::vector<uint8_t> encodeTypeInfo(const TypeInfo& t) {
  std::vector<uint8_t> out;
  auto add16 = [&](const std::string& s) {
    const size_t n = std::min<size_t>(s.size(), 65535);
    out.push_back(n & 0xff);
    out.push_back(n >> 8);
    out.insert(out.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  };
  add16(t.topic);
  add16(t.datatype);
  add16(t.md5);
  const size_t n = t.definition.size();
  for (int i = 0; i < 4; ++i) out.push_back((n >> (8 * i)) & 0xff);
  out.insert(out.end(), t.definition.begin(), t.definition.end());
  return out;
}

namespace {
bool nameChars(const std::string& s, bool slash_ok) {
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (slash_ok && c == '/'))) return false;
  return true;
}
}  // namespace

bool decodeTypeInfo(const uint8_t* data, size_t len, TypeInfo& out) {
  if (data == nullptr) return false;
  size_t pos = 0;
  auto field = [&](size_t width, size_t max, std::string& s) {
    if (len - pos < width) return false;
    const size_t n = width == 2 ? get16(data + pos) : get32(data + pos);
    pos += width;
    if (n > max || n > len - pos) return false;
    s.assign(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    return true;
  };
  TypeInfo t;
  if (!field(2, 256, t.topic) || !field(2, 256, t.datatype) || !field(2, 32, t.md5) ||
      !field(4, 1u << 20, t.definition) || pos != len)
    return false;
  if (t.topic.size() < 2 || t.topic.front() != '/' || !nameChars(t.topic, true)) return false;
  if (std::count(t.datatype.begin(), t.datatype.end(), '/') != 1 || t.datatype.front() == '/' ||
      t.datatype.back() == '/' || !nameChars(t.datatype, true))
    return false;
  if (t.md5.size() != 32) return false;
  for (char c : t.md5)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  out = std::move(t);
  return true;
}

// --- Compression ----------------------------------------------------------------------------------

bool compressBytes(const uint8_t* data, size_t len, std::vector<uint8_t>& out, int level) {
  uLongf cap = compressBound(static_cast<uLong>(len));
  out.resize(cap);
  if (compress2(out.data(), &cap, data, static_cast<uLong>(len), level) != Z_OK) return false;
  out.resize(cap);
  return true;
}

bool decompressBytes(const uint8_t* data, size_t len, size_t orig_len, size_t max_bytes,
                     std::vector<uint8_t>& out) {
  out.clear();
  if (orig_len > max_bytes || data == nullptr) return false;
  uint8_t dummy = 0;
  std::vector<uint8_t> buf(orig_len);
  uLongf got = static_cast<uLongf>(orig_len);
  // uncompress() writes at most `got` bytes and fails if the stream is longer or corrupt;
  // an empty message is a short valid stream that inflates to nothing.
  const int rc = uncompress(orig_len ? buf.data() : &dummy, &got, data, static_cast<uLong>(len));
  if (rc != Z_OK || got != orig_len) return false;
  out = std::move(buf);
  return true;
}

// --- Priority queue -------------------------------------------------------------------------------

PriorityQueue::PushResult PriorityQueue::push(uint64_t lane_id, int priority, std::vector<OutPacket> packets,
                                              int64_t now_ns) {
  PushResult r;
  size_t bytes = 0;
  for (const auto& p : packets) bytes += p.bytes.size();
  if (packets.empty() || bytes > max_bytes_) return r;
  Lane& lane = lanes_[lane_id];
  lane.priority = priority;
  while (bytes_ + bytes > max_bytes_) {
    // the least urgent non-empty lane; among equals, the one holding the most bytes
    Lane* victim = nullptr;
    size_t victim_bytes = 0;
    for (auto& [id, l] : lanes_) {
      if (l.msgs.empty()) continue;
      size_t b = 0;
      for (const auto& q : l.msgs) b += q.bytes_left;
      if (!victim || l.priority < victim->priority || (l.priority == victim->priority && b > victim_bytes)) {
        victim = &l;
        victim_bytes = b;
      }
    }
    if (!victim || victim->priority > priority) return r;  // only more urgent messages queued
    // the oldest message not being sent yet, else the one being sent
    auto it = victim->msgs.begin();
    if (it->next > 0 && victim->msgs.size() > 1) ++it;
    bytes_ -= it->bytes_left;
    r.dropped_bytes += it->bytes_left;
    ++r.dropped_messages;
    for (const auto& [id, l] : lanes_)
      if (&l == victim) r.dropped_lanes.push_back(id);
    victim->msgs.erase(it);
  }
  Queued q;
  q.seq = seq_++;
  q.enqueued_ns = now_ns;
  q.packets = std::move(packets);
  q.bytes_left = bytes;
  lane.msgs.push_back(std::move(q));
  bytes_ += bytes;
  r.accepted = true;
  return r;
}

bool PriorityQueue::pop(OutPacket& out, uint64_t* lane_out, int64_t* enqueued_ns, bool* last) {
  Lane* best = nullptr;
  uint64_t best_id = 0;
  for (auto& [id, l] : lanes_) {
    if (l.msgs.empty()) continue;
    if (!best || l.priority > best->priority ||
        (l.priority == best->priority && l.msgs.front().seq < best->msgs.front().seq)) {
      best = &l;
      best_id = id;
    }
  }
  if (!best) return false;
  Queued& q = best->msgs.front();
  out = std::move(q.packets[q.next]);
  ++q.next;
  q.bytes_left -= out.bytes.size();
  bytes_ -= out.bytes.size();
  if (lane_out) *lane_out = best_id;
  if (enqueued_ns) *enqueued_ns = q.enqueued_ns;
  const bool done = q.next == q.packets.size();
  if (last) *last = done;
  if (done) best->msgs.pop_front();
  return true;
}

void PriorityQueue::setPriority(uint64_t lane, int priority) { lanes_[lane].priority = priority; }

int PriorityQueue::priority(uint64_t lane) const {
  auto it = lanes_.find(lane);
  return it == lanes_.end() ? 0 : it->second.priority;
}

size_t PriorityQueue::messages() const {
  size_t n = 0;
  for (const auto& [id, l] : lanes_) n += l.msgs.size();
  return n;
}

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
