// Small helpers shared by the loop nodes: wall-clock times, message building, parameters.
#pragma once

#include <netloop/LoopSample.h>
#include <ros/ros.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "netloop/event_log.h"
#include "netloop/transport.h"

namespace netloop {

inline int64_t toNs(const ros::Time& t) { return static_cast<int64_t>(t.toNSec()); }
inline int64_t toNs(const ros::WallTime& t) { return static_cast<int64_t>(t.toNSec()); }
inline ros::Time asTime(const ros::WallTime& t) { return ros::Time(t.sec, t.nsec); }

/// A loop message stamped now; `answered` (may be null) is the sample it answers.
LoopSample makeSample(uint32_t seq, double value, const ros::WallTime& now, const LoopSample* answered,
                      uint32_t padding_bytes);

uint32_t serializedSize(const LoopSample& m);

/// Records a published or received loop message in the node's event log.
void logSample(EventLog& log, const char* kind, const char* topic, const LoopSample& m, int64_t recv_ns);

/// Reads a parameter; exits the node with a clear message when it is not a finite number
/// satisfying `positive` (strictly > 0) or `nonneg` (>= 0).
enum class Bound { Any, Positive, NonNegative };
double requireNumber(const ros::NodeHandle& nh, const std::string& name, double fallback, Bound bound);

/// Ends the node after printing `message` as a fatal error (exit status 2: bad configuration).
[[noreturn]] void exitWithConfigError(const std::string& message);

/// roscpp's queue depths of a node's topics [messages]: beyond them roscpp discards the
/// oldest message (publisher: per subscriber connection, before the socket; subscriber:
/// between the connection and the callback).
struct QueueDepths {
  uint32_t publisher;
  uint32_t subscriber;
};

/// The largest queue depth a node accepts (the experiment schema's bound).
constexpr int kMaxQueueDepth = 1000000;

/// The private parameters ~publisher_queue_size and ~subscriber_queue_size (default
/// `fallback`); exits with a message naming the parameter when one is not an integer in
/// 1..kMaxQueueDepth (roscpp's 0, "unbounded", is refused: a run must say its bound).
QueueDepths requireQueueDepths(const ros::NodeHandle& pnh, int fallback);

/// The private parameter ~transport (tcp | tcp_nodelay | udp); exits with a clear message
/// naming the allowed values when it is anything else.
Transport requireTransport(const ros::NodeHandle& pnh, const std::string& fallback);

/// main() of a node: ros::init with `name` and `init_options`, then `run`; an exception that
/// escapes `run` ends the node as a configuration error.
int runNode(int argc, char** argv, const char* name, int (*run)(), uint32_t init_options = 0);

}  // namespace netloop
