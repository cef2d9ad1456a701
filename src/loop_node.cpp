#include "netloop/loop_node.h"

#include <cstdlib>
#include <sstream>
#include <string>

namespace netloop {

LoopSample makeSample(uint32_t seq, double value, const ros::WallTime& now, const LoopSample* answered,
                      uint32_t padding_bytes) {
  LoopSample m;
  m.seq = seq;
  m.value = value;
  m.stamp = asTime(now);
  m.answer_seq = answered ? static_cast<int64_t>(answered->seq) : -1;
  if (answered) m.answer_stamp = answered->stamp;
  m.padding.assign(padding_bytes, 0);
  return m;
}

uint32_t serializedSize(const LoopSample& m) { return ros::serialization::serializationLength(m); }

void logSample(EventLog& log, const char* kind, const char* topic, const LoopSample& m, int64_t recv_ns) {
  if (!log.enabled()) return;
  log.write(EventRow{kind, topic, m.seq, m.value, toNs(m.stamp), recv_ns, m.answer_seq,
                     m.answer_seq >= 0 ? toNs(m.answer_stamp) : -1, serializedSize(m)});
}

[[noreturn]] void exitWithConfigError(const std::string& message) {
  ROS_FATAL("%s", message.c_str());
  std::fprintf(stderr, "%s: configuration error: %s\n", ros::this_node::getName().c_str(), message.c_str());
  std::fflush(stderr);
  // unregister what the node had registered (its /rosout publisher, its logger services), so a
  // refused node leaves the master as it found it (what `rosnode cleanup` would do)
  if (ros::isStarted()) ros::shutdown();
  std::exit(2);
}

double requireNumber(const ros::NodeHandle& nh, const std::string& name, double fallback, Bound bound) {
  double value = fallback;
  if (nh.hasParam(name) && !nh.getParam(name, value)) {
    exitWithConfigError("parameter " + nh.resolveName(name) + " must be a number");
  }
  const bool ok = std::isfinite(value) && (bound == Bound::Any || (bound == Bound::Positive && value > 0) ||
                                           (bound == Bound::NonNegative && value >= 0));
  if (!ok) {
    std::ostringstream msg;
    msg << "parameter " << nh.resolveName(name) << " = " << value << " is invalid: expected a finite number"
        << (bound == Bound::Positive ? " > 0" : bound == Bound::NonNegative ? " >= 0" : "");
    exitWithConfigError(msg.str());
  }
  return value;
}

namespace {

uint32_t requireQueueDepth(const ros::NodeHandle& pnh, const std::string& name, int fallback) {
  int value = fallback;
  XmlRpc::XmlRpcValue raw;  // read raw: roscpp would silently truncate 2.5 to 2
  if (pnh.getParam(name, raw)) {
    if (raw.getType() != XmlRpc::XmlRpcValue::TypeInt) {
      exitWithConfigError("parameter " + pnh.resolveName(name) + " must be an integer (messages)");
    }
    value = static_cast<int>(raw);
  }
  if (value < 1 || value > kMaxQueueDepth) {
    exitWithConfigError("parameter " + pnh.resolveName(name) + " = " + std::to_string(value) +
                        " is invalid: expected an integer from 1 to " + std::to_string(kMaxQueueDepth) +
                        " (messages queued before roscpp discards the oldest)");
  }
  return static_cast<uint32_t>(value);
}

}  // namespace

QueueDepths requireQueueDepths(const ros::NodeHandle& pnh, int fallback) {
  return QueueDepths{requireQueueDepth(pnh, "publisher_queue_size", fallback),
                     requireQueueDepth(pnh, "subscriber_queue_size", fallback)};
}

Transport requireTransport(const ros::NodeHandle& pnh, const std::string& fallback) {
  try {
    return parseTransport(pnh.param<std::string>("transport", fallback));
  } catch (const std::invalid_argument& e) {
    exitWithConfigError("parameter " + pnh.resolveName("transport") + ": " + e.what());
  }
}

int runNode(int argc, char** argv, const char* name, int (*run)(), uint32_t init_options) {
  ros::init(argc, argv, name, init_options);
  try {
    return run();
  } catch (const std::exception& e) {
    exitWithConfigError(e.what());
  }
}

}  // namespace netloop
