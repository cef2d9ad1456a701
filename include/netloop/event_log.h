// Per-node record of every loop message sent and received, written incrementally.
//
// One CSV file per node, format "netloop-events/1" (the column set is fixed; see
// analysis/records.py, which reads it):
//
//   kind,topic,seq,value,stamp_ns,recv_ns,answer_seq,answer_stamp_ns,bytes
//
//   kind             tx (published), rx (received), stale (received but older than the last
//                    applied one, so dropped)
//   stamp_ns         the sender's publish time [ns since the Unix epoch]
//   recv_ns          the receiver's clock at reception [ns]; -1 for tx rows
//   answer_seq/_ns   what the message answers (-1 when none)
//   bytes            serialized message size [bytes]
//
// Every row is written with one write(2) and flushed, so a run killed at any point leaves
// every row recorded before the kill, and at most the last row cut short.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace netloop {

struct EventRow {
  const char* kind;
  const char* topic;
  uint64_t seq;
  double value;
  int64_t stamp_ns;
  int64_t recv_ns;
  int64_t answer_seq;
  int64_t answer_stamp_ns;
  uint32_t bytes;
};

class EventLog {
 public:
  static constexpr const char* kHeader =
      "kind,topic,seq,value,stamp_ns,recv_ns,answer_seq,answer_stamp_ns,bytes";

  /// An empty path disables recording. Throws std::runtime_error if the file can't be made.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  bool enabled() const { return fd_ >= 0; }
  void write(const EventRow& row);

 private:
  int fd_ = -1;
};

}  // namespace netloop
