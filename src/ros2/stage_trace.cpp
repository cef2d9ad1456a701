// Per-message stage times of the ROS 2 path (include/netloop/ros2/stage_trace.h).
#include "netloop/ros2/stage_trace.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace netloop {
namespace ros2 {

namespace {

/// A node or topic name as a file name part: "/flows/probe" -> "flows_probe".
std::string fileSafe(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-';
    if (keep || !out.empty()) out += keep ? c : '_';
  }
  return out;
}

}  // namespace

std::unique_ptr<StageTrace> StageTrace::open(const std::string& node, const std::string& topic,
                                             const std::string& datatype, bool publisher) {
  const char* dir = std::getenv("NETLOOP_STAGE_TRACE");
  if (!dir || !*dir || datatype != "netloop/LoopSample") return nullptr;
  const std::string path = std::string(dir) + "/" + fileSafe(node) + "__" + fileSafe(topic) +
                           (publisher ? ".pub" : ".sub") + ".stages.csv";
  return std::unique_ptr<StageTrace>(new StageTrace(path, publisher));
}

StageTrace::StageTrace(std::string path, bool publisher)
    : path_(std::move(path)), publisher_(publisher), rows_(kMask + 1) {}

void StageTrace::mark(uint32_t seq, int stage) {
  mark(seq, stage,
       std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
           .count());
}

void StageTrace::write() {
  if (written_) return;
  written_ = true;
  FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "netloop: cannot write the stage trace %s\n", path_.c_str());
    return;
  }
  std::fprintf(f, publisher_ ? "seq,entered_ns,converted_ns,written_ns\n" : "seq,delivered_ns,running_ns,converted_ns\n");
  for (const Row& r : rows_)
    if (r.ns[0] || r.ns[1] || r.ns[2])
      std::fprintf(f, "%u,%lld,%lld,%lld\n", r.seq, static_cast<long long>(r.ns[0]), static_cast<long long>(r.ns[1]),
                   static_cast<long long>(r.ns[2]));
  std::fclose(f);
}

}  // namespace ros2
}  // namespace netloop
