// Bounded reassembly (no ROS: fuzzed).
#include "wire/reassembly.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace netloop {
namespace relay {

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

}  // namespace relay
}  // namespace netloop
