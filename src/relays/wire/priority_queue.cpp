// The priority relay's send queue.
#include "wire/priority_queue.h"

namespace netloop {
namespace relay {

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

PriorityQueue::Lane* PriorityQueue::head(uint64_t* lane_id) {
  Lane* best = nullptr;
  for (auto& [id, l] : lanes_) {
    if (l.msgs.empty()) continue;
    if (!best || l.priority > best->priority ||
        (l.priority == best->priority && l.msgs.front().seq < best->msgs.front().seq)) {
      best = &l;
      if (lane_id) *lane_id = id;
    }
  }
  return best;
}

int PriorityQueue::headPriority() const {
  const Lane* best = const_cast<PriorityQueue*>(this)->head(nullptr);
  return best ? best->priority : -1;
}

bool PriorityQueue::pop(OutPacket& out, uint64_t* lane_out, int64_t* enqueued_ns, bool* last) {
  uint64_t best_id = 0;
  Lane* best = head(&best_id);
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

}  // namespace relay
}  // namespace netloop
