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
//
// Relay mode (~republish true): subscribes `flow_in` on its own host and republishes every
// message on `flow`, recording each (kind "tap") as it is republished, i.e. the exact time the
// message enters the network. The output is advertised at start from ~datatype, ~md5sum and
// ~definition, so no message is lost while subscribers connect (topic_tools/relay advertises
// only after its first message). Used for publishers that cannot record their sends or
// cannot speak UDPROS, such as `rosbag play` (rospy).
#include <ros/ros.h>
#include <topic_tools/shape_shifter.h>

#include <cstring>
#include <optional>

#include "netloop/event_log.h"
#include "netloop/loop_node.h"
#include "netloop/receive_stats.h"
#include "netloop/transport.h"

namespace netloop {
namespace {

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

  void onMessage(const topic_tools::ShapeShifter::ConstPtr& msg) {
    if (out_) out_.publish(*msg);
    const ros::WallTime now = ros::WallTime::now();
    std::vector<uint8_t> buf(msg->size());
    ros::serialization::OStream stream(buf.data(), buf.size());
    msg->write(stream);
    const Stamp s = readStamp(msg->getDataType(), msg->getMessageDefinition(), buf);
    log_.write(EventRow{kind_.c_str(), topic_.c_str(), s.seq, 0.0, s.stamp_ns, toNs(now), -1, -1,
                        static_cast<uint32_t>(buf.size())});
    ++received_;
    if (s.stamp_ns >= 0) {  // a type whose seq this sink can read
      if (!seqs_) seqs_.emplace(msg->getDataType() == "netloop/LoopSample" ? 0 : -1);
      seqs_->add(s.seq);
    }
    if (process_time_ > 0) ros::WallDuration(process_time_).sleep();
  }

  uint64_t received() const { return received_; }
  /// The sequence numbers received (counted from the first message when none was readable).
  SeqTracker seqs() const { return seqs_ ? *seqs_ : SeqTracker(-1); }

 private:
  EventLog log_;
  std::string kind_, topic_;
  double process_time_;
  ros::Publisher out_;
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
  const std::string record_path = pnh.param<std::string>("record_path", "");
  Sink sink(record_path, kind, topic, process_time);
  std::string input = topic;
  topic_tools::ShapeShifter shape;
  if (pnh.param("republish", false)) {
    const std::string datatype = pnh.param<std::string>("datatype", "");
    const std::string md5 = pnh.param<std::string>("md5sum", "");
    if (datatype.empty() || md5.empty())
      exitWithConfigError("relay mode (~republish) needs ~datatype and ~md5sum (and ~definition)");
    shape.morph(md5, datatype, pnh.param<std::string>("definition", ""), "false");
    sink.republishOn(shape.advertise(nh, topic, queues.publisher));
    input = nh.resolveName("flow_in");
  }
  ros::Subscriber sub = nh.subscribe<topic_tools::ShapeShifter>(
      input, queues.subscriber, &Sink::onMessage, &sink, transportHints(transport, max_datagram));
  WireCounter wire(sub.getTopic());
  ROS_INFO("flow_sink %s (%s) over %s, subscriber queue %u", topic.c_str(), kind.c_str(),
           transportName(transport).c_str(), queues.subscriber);
  ros::spin();
  const WireCounts counts = wire.poll();
  const SeqTracker seqs = sink.seqs();
  writeReceiveSummary(receiveSummaryPath(record_path), sub.getTopic(), seqs, counts, queues.subscriber);
  ROS_INFO("flow_sink %s: %llu messages, %lld missing, %lld dropped by the subscriber queue", topic.c_str(),
           static_cast<unsigned long long>(sink.received()), static_cast<long long>(seqs.missing()),
           static_cast<long long>(counts.drops));
  return 0;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "flow_sink", netloop::run); }
