// Where a message's time goes on a node's ROS 2 path, for `make bench`'s breakdown
// (src/netloop/transports/ros2_bench.py): the time of each stage of every netloop/LoopSample a
// middleware endpoint sends or takes, keyed by the sample's seq.
//
// Off unless the environment variable NETLOOP_STAGE_TRACE names a folder; then each endpoint of
// that type writes <folder>/<node>__<topic>.<pub|sub>.stages.csv when its node finishes, one row per
// seq (wall clock, ns since the epoch; 0 where a stage did not happen):
//   publisher     seq,entered_ns,converted_ns,written_ns
//                 (entered: the ROS 1 bytes handed to the endpoint; converted: ROS 1 -> CDR done;
//                 written: the middleware's publish call returned)
//   subscription  seq,delivered_ns,running_ns,converted_ns
//                 (delivered: the middleware called back with the sample, on its own thread;
//                 running: the node's thread took it from the inbox; converted: CDR -> ROS 1 done,
//                 the node's handler is called next)
// The message's own stamp (the sender's tx record) and the receiver's rx record close the chain.
// Off, a stage costs one test of a pointer; on, a store (seq modulo 65,536 rows).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace netloop {
namespace ros2 {

class StageTrace {
 public:
  /// Stages are 0, 1, 2 in the order of the rows above.
  static constexpr int kStages = 3;

  /// A trace of one endpoint when NETLOOP_STAGE_TRACE is set and `datatype` is
  /// netloop/LoopSample; null otherwise.
  static std::unique_ptr<StageTrace> open(const std::string& node, const std::string& topic,
                                          const std::string& datatype, bool publisher);

  /// The seq of a LoopSample from its ROS 1 bytes / its CDR bytes (0 when too short).
  static uint32_t seqOfRos1(const uint8_t* ros1, size_t len) { return read32(ros1, len, 0); }
  static uint32_t seqOfCdr(const uint8_t* cdr, size_t len) { return read32(cdr, len, 4); }

  void mark(uint32_t seq, int stage, int64_t ns) {
    auto& row = rows_[seq & kMask];
    row.seq = seq;
    row.ns[stage] = ns;
  }
  void mark(uint32_t seq, int stage);  // now

  /// Writes the file (once; later calls do nothing).
  void write();

 private:
  static constexpr uint32_t kMask = 0xffff;
  struct Row {
    uint32_t seq = 0;
    std::array<int64_t, kStages> ns{};
  };
  static uint32_t read32(const uint8_t* p, size_t len, size_t at) {
    uint32_t v = 0;
    if (len >= at + 4) std::memcpy(&v, p + at, 4);
    return v;
  }
  StageTrace(std::string path, bool publisher);

  std::string path_;
  bool publisher_;
  bool written_ = false;
  std::vector<Row> rows_;
};

}  // namespace ros2
}  // namespace netloop
