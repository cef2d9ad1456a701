// flow_sink: receives a flow of any message type and records each arrival (roscpp).
//
// Subscribes `flow` (remap it) with topic_tools::ShapeShifter, so it takes any type, over
// ~transport (tcp | tcp_nodelay | udp). Per message it records one row (netloop-events/1):
//   kind    ~kind: "rx" at the flow's destination, "tap" for a tap on the sending host
//           (used for flows whose publisher records nothing, e.g. `rosbag play`)
//   seq, stamp_ns   read from the message: the header's seq and stamp for types that
//           start with a std_msgs/Header, seq and stamp of netloop/LoopSample
//   recv_ns the sink's clock at the callback; bytes: serialized size
// ~record_path (CSV), ~transport, ~max_datagram (UDPROS), ~subscriber_queue_size and (relay
// mode) ~publisher_queue_size [messages, default 100], ~process_time [s, default 0]: time the
// sink spends on each message, as a consumer that processes what it takes (image processing)
// would, so that a queue too short for the flow shows its drops.
// When it stops it writes what it received and lost beside the record: missing sequence
// numbers and roscpp's subscriber-queue drops (include/netloop/receive_stats.h).
// Stopping: on SIGINT or SIGTERM it still takes what roscpp already holds for it (its
// subscriber queue: a sink slower than its flow has a backlog that TCP acknowledged to the
// sender long ago) until the queue has been empty for 50 ms, at most ~drain [s, default 1];
// a second signal stops it at once.
//
// Relay mode (~republish true): subscribes `flow_in` on its own host and republishes every
// message on `flow`, recording each (kind "tap") as it is republished, i.e. the exact time the
// message enters the network. The output is advertised at start from ~datatype, ~md5sum and
// ~definition, so no message is lost while subscribers connect (topic_tools/relay advertises
// only after its first message). Used for publishers that cannot record their sends or
// cannot speak UDPROS, such as `rosbag play` (rospy).
//
// ROS 2: with ~middleware (cyclonedds | fastdds | zenoh; ~middleware_config, ~domain_id,
// ~qos_*, ~status_path, ~carry_header_seq: include/netloop/ros2/endpoint.h) the topics that
// cross go over that middleware instead of roscpp. Which ones cross:
//   ~middleware_in   the input (`flow`, or `flow_in` in relay mode) is taken from the middleware.
//                    Default: true in rx mode (the sink at the flow's destination); false in
//                    relay mode, where the input is a local ROS 1 topic (a tap of rosbag play or
//                    of a live topic). An echoer (relay mode whose input crosses) sets it true.
//   ~middleware_out  relay mode: the output `flow` is published on the middleware (default true).
// A middleware input needs the type: ~datatype and ~definition (the full definition, as in
// relay mode). The ~transport, ~max_datagram of a middleware input do not apply; its
// subscriber queue (~subscriber_queue_size) is the inbox between the middleware and the
// callback, whose drops the receive summary counts as subscriber-queue drops. Types that start
// with a std_msgs/Header get their seq back from frame_id (endpoint.h), so the rows are as over
// roscpp.
#include <ros/ros.h>
#include <topic_tools/shape_shifter.h>

#include <ros/callback_queue.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <optional>

#include "netloop/event_log.h"
#include "netloop/loop_node.h"
#include "netloop/receive_stats.h"
#include "netloop/ros2/endpoint.h"
#include "netloop/transport.h"

namespace netloop {
namespace {

std::atomic<int> g_signals{0};  // SIGINT/SIGTERM received: 1 drains, 2 stops at once
void onSignal(int) { ++g_signals; }

/// Spins until a signal, then takes what the subscriber queue still holds: until it has been
/// empty for 50 ms, at most `drain` seconds, or until a second signal.
void spinThenDrain(double drain) {
  ros::CallbackQueue& queue = *ros::getGlobalCallbackQueue();
  while (ros::ok() && g_signals == 0) queue.callAvailable(ros::WallDuration(0.05));
  const ros::WallTime until = ros::WallTime::now() + ros::WallDuration(drain);
  ros::WallTime empty_since = ros::WallTime::now();
  for (ros::WallTime now = empty_since; ros::ok() && g_signals < 2 && now < until; now = ros::WallTime::now()) {
    if (!queue.isEmpty()) {
      empty_since = now;
    } else if ((now - empty_since).toSec() >= 0.05) {
      break;
    }
    queue.callAvailable(ros::WallDuration(0.01));
  }
}

struct Stamp {
  uint32_t seq = 0;
  int64_t stamp_ns = -1;
};

uint32_t readU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// Whether the first field of a message definition is a std_msgs/Header.
bool startsWithHeader(const std::string& definition) {
  size_t pos = 0;
  while (pos < definition.size()) {
    size_t end = definition.find('\n', pos);
    if (end == std::string::npos) end = definition.size();
    const std::string line = definition.substr(pos, end - pos);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') {
      return line.compare(first, 7, "Header ") == 0 || line.compare(first, 16, "std_msgs/Header ") == 0;
    }
    pos = end + 1;
  }
  return false;
}

/// seq and stamp from a serialized message: Header first (seq, secs, nsecs), or LoopSample
/// (seq, value, stamp secs, nsecs).
Stamp readStamp(const std::string& datatype, const std::string& definition, const std::vector<uint8_t>& buf) {
  Stamp s;
  size_t offset;
  if (datatype == "netloop/LoopSample") {
    offset = 12;  // after seq (4) and value (8)
  } else if (startsWithHeader(definition)) {
    offset = 4;  // after header.seq
  } else {
    return s;
  }
  if (buf.size() < offset + 8) return s;
  s.seq = readU32(buf.data());
  s.stamp_ns = static_cast<int64_t>(readU32(buf.data() + offset)) * 1000000000LL + readU32(buf.data() + offset + 4);
  return s;
}

class Sink {
 public:
  Sink(const std::string& path, const std::string& kind, const std::string& topic, double process_time)
      : log_(path), kind_(kind), topic_(topic), process_time_(process_time) {}

  void republishOn(ros::Publisher pub) { out_ = std::move(pub); }
  void republishOn(std::shared_ptr<ros2::RawPublisher> pub) { mw_out_ = std::move(pub); }

  void onMessage(const topic_tools::ShapeShifter::ConstPtr& msg) {
    if (out_) out_.publish(*msg);
    const ros::WallTime now = ros::WallTime::now();
    std::vector<uint8_t> buf(msg->size());
    ros::serialization::OStream stream(buf.data(), buf.size());
    msg->write(stream);
    if (mw_out_) mw_out_->publish(buf.data(), buf.size());
    record(msg->getDataType(), msg->getMessageDefinition(), buf, now);
  }

  /// A message from the middleware (ROS 1 serialized bytes of `datatype`).
  void onBytes(const std::string& datatype, const std::string& definition, const std::vector<uint8_t>& buf) {
    if (out_) {
      topic_tools::ShapeShifter shape;
      shape.morph(out_md5_, datatype, definition, "false");
      ros::serialization::IStream in(const_cast<uint8_t*>(buf.data()), static_cast<uint32_t>(buf.size()));
      shape.read(in);
      out_.publish(shape);
    }
    if (mw_out_) mw_out_->publish(buf.data(), buf.size());
    record(datatype, definition, buf, ros::WallTime::now());
  }
  void setOutputMd5(const std::string& md5) { out_md5_ = md5; }

  uint64_t received() const { return received_; }

  void record(const std::string& datatype, const std::string& definition, const std::vector<uint8_t>& buf,
              const ros::WallTime& now) {
    const Stamp s = readStamp(datatype, definition, buf);
    log_.write(EventRow{kind_.c_str(), topic_.c_str(), s.seq, 0.0, s.stamp_ns, toNs(now), -1, -1,
                        static_cast<uint32_t>(buf.size())});
    ++received_;
    if (s.stamp_ns >= 0) {  // a type whose seq this sink can read
      if (!seqs_) seqs_.emplace(datatype == "netloop/LoopSample" ? 0 : -1);
      seqs_->add(s.seq);
    }
    if (process_time_ > 0) ros::WallDuration(process_time_).sleep();
  }
  /// The sequence numbers received (counted from the first message when none was readable).
  SeqTracker seqs() const { return seqs_ ? *seqs_ : SeqTracker(-1); }

 private:
  EventLog log_;
  std::string kind_, topic_;
  double process_time_;
  ros::Publisher out_;
  std::shared_ptr<ros2::RawPublisher> mw_out_;
  std::string out_md5_;
  uint64_t received_ = 0;
  std::optional<SeqTracker> seqs_;
};

int run() {
  ros::NodeHandle nh, pnh("~");
  const Transport transport = requireTransport(pnh, "tcp");
  const std::string kind = pnh.param<std::string>("kind", "rx");
  if (kind != "rx" && kind != "tap") exitWithConfigError("parameter ~kind: '" + kind + "'; allowed: rx, tap");
  const int max_datagram = static_cast<int>(requireNumber(pnh, "max_datagram", 1400, Bound::Positive));
  const std::string topic = nh.resolveName("flow");
  const QueueDepths queues = requireQueueDepths(pnh, 100);
  const double process_time = requireNumber(pnh, "process_time", 0.0, Bound::NonNegative);
  const double drain = requireNumber(pnh, "drain", 1.0, Bound::NonNegative);
  const std::string record_path = pnh.param<std::string>("record_path", "");
  ros2::Endpoints endpoints(nh, pnh);
  const bool relay = pnh.param("republish", false);
  bool mw_in = false, mw_out = false;
  if (endpoints.native()) {
    XmlRpc::XmlRpcValue raw;
    for (const char* name : {"middleware_in", "middleware_out"})
      if (pnh.getParam(name, raw) && raw.getType() != XmlRpc::XmlRpcValue::TypeBoolean)
        exitWithConfigError("parameter " + pnh.resolveName(name) + " must be true or false");
    mw_in = pnh.param("middleware_in", !relay);
    mw_out = relay && pnh.param("middleware_out", true);
  }
  const std::string datatype = pnh.param<std::string>("datatype", "");
  const std::string definition = pnh.param<std::string>("definition", "");
  Sink sink(record_path, kind, topic, process_time);
  std::string input = topic;
  topic_tools::ShapeShifter shape;
  if (relay) {
    const std::string md5 = pnh.param<std::string>("md5sum", "");
    if (datatype.empty() || md5.empty())
      exitWithConfigError("relay mode (~republish) needs ~datatype and ~md5sum (and ~definition)");
    if (mw_out) {
      if (definition.empty()) exitWithConfigError("relay mode over a middleware needs ~definition");
      sink.republishOn(endpoints.rawPublisher(topic, datatype, definition));
    } else {
      shape.morph(md5, datatype, definition, "false");
      sink.republishOn(shape.advertise(nh, topic, queues.publisher));
      sink.setOutputMd5(md5);
    }
    input = nh.resolveName("flow_in");
  }
  ros::Subscriber sub;
  std::unique_ptr<WireCounter> wire;
  std::shared_ptr<ros2::RawSubscription> mw_sub;
  if (mw_in) {
    if (datatype.empty() || definition.empty())
      exitWithConfigError("a middleware input (~middleware " + endpoints.params().middleware +
                          ", ~middleware_in) needs ~datatype and ~definition");
    mw_sub = endpoints.rawSubscription(input, datatype, definition, queues.subscriber,
                                       [&sink, datatype, definition](std::vector<uint8_t>& ros1, int64_t) {
                                         sink.onBytes(datatype, definition, ros1);
                                       });
  } else {
    sub = nh.subscribe<topic_tools::ShapeShifter>(input, queues.subscriber, &Sink::onMessage, &sink,
                                                  transportHints(transport, max_datagram));
    wire = std::make_unique<WireCounter>(sub.getTopic());
  }
  endpoints.ready();
  ROS_INFO("flow_sink %s (%s) over %s, subscriber queue %u", topic.c_str(), kind.c_str(),
           mw_in ? endpoints.describe("").c_str() : transportName(transport).c_str(), queues.subscriber);
  spinThenDrain(drain);
  const WireCounts counts = mw_sub ? mw_sub->counts() : wire->poll();
  endpoints.finish();
  const SeqTracker seqs = sink.seqs();
  writeReceiveSummary(receiveSummaryPath(record_path), mw_sub ? mw_sub->topic() : sub.getTopic(), seqs, counts,
                      queues.subscriber);
  ROS_INFO("flow_sink %s: %llu messages, %lld missing, %lld dropped by the subscriber queue", topic.c_str(),
           static_cast<unsigned long long>(sink.received()), static_cast<long long>(seqs.missing()),
           static_cast<long long>(counts.drops));
  ros::shutdown();
  return 0;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) {
  std::signal(SIGINT, netloop::onSignal);
  std::signal(SIGTERM, netloop::onSignal);
  return netloop::runNode(argc, argv, "flow_sink", netloop::run, ros::init_options::NoSigintHandler);
}
